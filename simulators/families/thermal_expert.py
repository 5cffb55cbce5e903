"""The ``thermal`` family's protocols on a plate: the expert's continuous heat-inactivation
assay, the naive agent's unsettled read and the experiment without controls.

The expert (:func:`half_life`) measures the loss of activity from the activity itself: with the
substrate saturating (ten times the published Km, under 5 % of it used), the rate of a well at
a constant temperature is proportional to the enzyme still folded, so a progress curve after
the plate has settled is P(t) = a + A·(1 − exp(−k_d·t)) (the continuous, or progress-curve,
method for irreversible inactivation during the assay [L: Tsou 1988, Adv. Enzymol. Relat.
Areas Mol. Biol. 61:381; recalled, not verified here]).

1. **Design** from the labels and the published figures only: the substrate at half the well;
   the enzyme such that, at the centres of the published kcat and Ea spans at the test
   temperature and with no loss at all, a well rises at most :data:`MAX_RISE_OD` over the read
   and uses at most :data:`MAX_CONVERSION` of its substrate (the stock diluted in plate_2 where
   a well would take too little: the kinetics expert's dilutions); :data:`REPLICATES` reaction
   wells.
2. **Controls**: a buffer blank and :data:`~.kinetics_expert.NO_ENZYME` wells of substrate
   without enzyme, read with the reactions (the substrate's own hydrolysis there).
3. **The read**: the chamber set to the test temperature and held; the enzyme into its wells
   on the deck; the plate into the reader and read for the hours the budget leaves.
4. **Fit**: from :data:`SETTLE_S` on (the plate has reached the chamber's air: six of its time
   constants), the reaction wells less the no-enzyme slope (where it stands out), by least
   squares with one k_d for all and each well its own a and A: t½ = ln 2 / k_d. What the
   well lost while the plate warmed sits in A and leaves k_d alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.arrhenius_parts import boltzmann
from labtools.simulators.families.kinetics_expert import (
    NO_ENZYME,
    OVER_OD,
    Design,
    background_slope,
    diluted_stock,
    enzyme_source,
    kinetic,
)
from labtools.simulators.families.kinetics_parts import (
    ENZYME_MAX_UL,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    Pair,
    temperature_prior,
)
from labtools.simulators.families.protocol import PLATE, transfer, well
from labtools.simulators.tasks.scripting import Call, site_of

__all__ = ["fit_decay", "half_life", "naive", "uncontrolled"]

#: a reaction well's rise (OD) with no loss over the read at the published centres, and the
#: share of its substrate it may use [A: a real enzyme up to twice as fast stays under the
#: reader's accurate 2.5 OD for most of the read; 5 % moves a rate at 10 × Km by < 0.5 %]
MAX_RISE_OD, MAX_CONVERSION = 1.2, 0.05
#: reaction wells [A: three, so that one well's defect leaves two]
REPLICATES = 3
#: seconds of the read left out while the plate warms from the room to the chamber's air [A:
#: six of the plate's 5-minute time constants (plate_reader.toml): a 25 °C step is then under
#: 0.07 °C, k_d under 3 % low at the worst]
SETTLE_S = 1800.0
#: the budget's hours kept back from the read (the chamber's wait, the pipetting) [A]
SPARE_H = 0.75
#: seconds between kinetic reads, about [A: 41 reads a call, a call per 40 minutes]
INTERVAL_S = 60.0
#: the k_d grid searched (s⁻¹): half-lives from 1 minute to 2000 hours [A]
GRID = np.geomspace(1e-7, 1e-2, 241)
#: the naive read (s) and the uncontrolled agent's reads and wait (s) [A]
NAIVE_S, UNCONTROLLED_READ_S, UNCONTROLLED_WAIT_S = 1800.0, 600.0, 1800.0


def design(p: Pair, molar: Mapping[str, float], celsius: float, read_s: float) -> Design:
    """The plate's plan (the kinetics expert's :class:`~.kinetics_expert.Design`): one substrate
    level (half the well of the stock), the enzyme for :data:`MAX_RISE_OD` over ``read_s`` at
    the published centres at ``celsius`` with no loss."""
    s = molar["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
    ea = 1e3 * sum(temperature_prior(p).kcat_ea_kj) / 2.0
    kcat = p.kcat_centre * boltzmann(ea, celsius, 25.0)
    allowed = min(MAX_CONVERSION * s, MAX_RISE_OD / p.od_per_molar)  # M of product
    e_max = molar["enzyme"] * ENZYME_MAX_UL / WELL_UL
    e_well = min(e_max, allowed / (kcat * read_s))
    enzyme_ul, dilutions, e_well = enzyme_source(molar["enzyme"], e_well, 10.0)
    return Design([s], e_well, enzyme_ul, dilutions, read_s, REPLICATES)


def _molar(call: Call, stocks: Mapping[str, str]) -> tuple[str, dict[str, float]]:
    deck = call("lh_get_deck")
    molar = {k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6 for k in ("substrate", "enzyme")}
    return site_of(deck, PLATE), molar


def half_life(
    call: Call, p: Pair, stocks: Mapping[str, str], celsius: float, *, hours: float
) -> float:
    """The half-life (minutes) at ``celsius``, through ``call`` only."""
    home, molar = _molar(call, stocks)
    read_s = max(hours - SPARE_H, 1.0) * 3600.0
    plan = design(p, molar, celsius, read_s)
    reactions = [f"A{i + 1}" for i in range(REPLICATES)]
    no_enzyme = [f"B{i + 1}" for i in range(NO_ENZYME)]
    blank = "C1"
    buffer, substrate = stocks["buffer"], stocks["substrate"]
    enzyme = diluted_stock(call, stocks, plan)
    moves = [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL - plan.enzyme_ul) for w in reactions]
    moves += [(buffer, well(blank), WELL_UL)]
    moves += [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL) for w in no_enzyme]
    transfer(call, moves, "reuse")
    transfer(call, [(substrate, well(w), SUBSTRATE_MAX_UL) for w in reactions + no_enzyme], "reuse")
    call("reader_set_temperature", temperature=_celsius(celsius), wait=True)
    transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in reactions], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    segments = max(1, math.ceil(read_s / (40 * INTERVAL_S)))
    times, series = kinetic(call, p, [*reactions, *no_enzyme, blank], read_s, segments)
    call("reader_stop_heating")
    call("lh_move_plate", plate=PLATE, destination=home)
    late = times >= SETTLE_S
    background = background_slope(times[late], [series[w][late] for w in no_enzyme])
    curves = [series[w][late] - background * times[late] for w in reactions]
    kd = fit_decay(times[late] - SETTLE_S, curves)
    return math.log(2.0) / kd / 60.0


def fit_decay(times: np.ndarray, curves: list[np.ndarray]) -> float:
    """k_d (s⁻¹): least squares of a + A·(1 − exp(−k_d·t)) over ``curves`` (each its own a and
    A, one k_d; readings over :data:`~.kinetics_expert.OVER_OD` or missing left out): a grid
    (:data:`GRID`), then golden-section search about its best."""
    kept = []
    for od in curves:
        keep = np.isfinite(od) & (od < OVER_OD)
        if keep.sum() >= 4:
            kept.append((times[keep], od[keep]))
    if not kept:
        return float(GRID[0])

    def sse(kd: float) -> float:
        total = 0.0
        for t, y in kept:
            x = np.column_stack([np.ones_like(t), -np.expm1(-kd * t)])
            coef, *_ = np.linalg.lstsq(x, y, rcond=None)
            total += float(((y - x @ coef) ** 2).sum())
        return total

    values = [sse(float(k)) for k in GRID]
    best = int(np.argmin(values))
    low = math.log(float(GRID[max(best - 1, 0)]))
    high = math.log(float(GRID[min(best + 1, len(GRID) - 1)]))
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(40):
        a = high - ratio * (high - low)
        b = low + ratio * (high - low)
        if sse(math.exp(a)) < sse(math.exp(b)):
            high = b
        else:
            low = a
    return math.exp((low + high) / 2.0)


def _celsius(value: float) -> dict[str, object]:
    return {"value": value, "unit": "degree_Celsius"}


# -- the shortcuts -----------------------------------------------------------------------------
def naive(call: Call, p: Pair, stocks: Mapping[str, str], celsius: float) -> float:
    """One reaction well, set up on the deck, read in the heated chamber at once for
    :data:`NAIVE_S`; the decay fitted from the first reading on (the plate still warming),
    no blank, control or replicate."""
    home, molar = _molar(call, stocks)
    plan = design(p, molar, celsius, NAIVE_S)
    enzyme = diluted_stock(call, stocks, plan)
    name = "A1"
    transfer(
        call, [(stocks["buffer"], well(name), WELL_UL - SUBSTRATE_MAX_UL - plan.enzyme_ul)], "reuse"
    )
    transfer(call, [(stocks["substrate"], well(name), SUBSTRATE_MAX_UL)], "reuse")
    call("reader_set_temperature", temperature=_celsius(celsius), wait=True)
    transfer(call, [(enzyme, well(name), plan.enzyme_ul)], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, [name], NAIVE_S)
    call("lh_move_plate", plate=PLATE, destination=home)
    kd = fit_decay(times, [series[name]])
    return math.log(2.0) / kd / 60.0


def uncontrolled(call: Call, p: Pair, stocks: Mapping[str, str], celsius: float) -> float:
    """The experiment without controls: the enzyme into two wells of buffer on the deck, the
    chamber at the test temperature taken as reached in the wells at once; the substrate into
    the first at once and its rate read over :data:`UNCONTROLLED_READ_S` (time zero), into the
    second after a further :data:`UNCONTROLLED_WAIT_S` and read alike, in a read of its own;
    k_d = ln(v₀/v₁)/Δt. No blank, no-enzyme well, replicate or settled plate."""
    home, molar = _molar(call, stocks)
    plan = design(p, molar, celsius, UNCONTROLLED_READ_S)
    enzyme = diluted_stock(call, stocks, plan)
    first, second = "A1", "A2"
    volume = WELL_UL - SUBSTRATE_MAX_UL - plan.enzyme_ul
    transfer(call, [(stocks["buffer"], well(w), volume) for w in (first, second)], "reuse")
    call("reader_set_temperature", temperature=_celsius(celsius), wait=True)
    transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in (first, second)], "reuse")
    transfer(call, [(stocks["substrate"], well(first), SUBSTRATE_MAX_UL)], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    rates = []
    for name, wait in ((first, 0.0), (second, UNCONTROLLED_WAIT_S)):
        if wait:
            call(
                "reader_read_absorbance_kinetic",
                plate=PLATE,
                wells=[first],
                wavelength={"value": p.read_nm, "unit": "nanometer"},
                interval={"value": wait, "unit": "second"},
                reads=2,
            )
            call("lh_move_plate", plate=PLATE, destination=home)
            transfer(call, [(stocks["substrate"], well(second), SUBSTRATE_MAX_UL)], "reuse")
            call("lh_move_plate", plate=PLATE, destination="reader")
        times, series = kinetic(call, p, [name], UNCONTROLLED_READ_S)
        od = series[name]
        keep = np.isfinite(od) & (od < OVER_OD)
        rates.append(float(np.polyfit(times[keep], od[keep], 1)[0]) if keep.sum() >= 2 else 0.0)
    call("lh_move_plate", plate=PLATE, destination=home)
    elapsed = UNCONTROLLED_READ_S + UNCONTROLLED_WAIT_S
    if rates[0] <= 0.0 or rates[1] <= 0.0 or rates[0] <= rates[1]:
        return math.nan
    return math.log(2.0) / (math.log(rates[0] / rates[1]) / elapsed) / 60.0
