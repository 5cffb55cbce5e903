"""The ``arrhenius`` family's protocols on a plate: the expert's temperatures, pre-warmed plate,
timed reads, decay-corrected rates and Arrhenius fit; the experiment without controls.

The expert (:func:`arrhenius`):

1. **Design** from the labels and the published figures only: the window's
   :data:`~.arrhenius_parts.SETPOINTS` temperatures; the substrate at half the well (the stated
   concentration); the enzyme such that, at the published kcat and the Ea span's top at the
   window's top, a well rises at most :data:`MAX_RISE_OD` and converts at most
   :data:`MAX_CONVERSION` by its read's end (the stock diluted in plate_2 where a well would take
   too little: the kinetics expert's dilutions); each temperature's wells in triplicate where the
   wells budget holds them, else in duplicate.
2. **Controls**: a buffer blank, the product standard at three levels in the assay buffer,
   :data:`~.kinetics_expert.NO_ENZYME` wells of substrate without enzyme read with every
   temperature's reactions (the substrate's own hydrolysis there).
3. **Each temperature**, in the order of :func:`order` (coolest, warmest, the others, the
   coolest again): the chamber set and held; the plate (substrate and
   buffer in every well) left in it :data:`PREWARM_S` to follow the air; out to the deck for the
   enzyme (that temperature's wells only), back in, read over :data:`READ_S`. Only the reads
   from :data:`SETTLE_S` on count: the plate cooled on the deck and takes minutes to return.
4. **Rates**: each well's progress curve (from :data:`SETTLE_S`) fitted with a parabola: its
   slope at the middle, and the curvature as a first-order loss (the enzyme unfolding, the
   substrate used), pooled per temperature; the rate carried back to the read's start, less
   the no-enzyme wells' slope where it stands out.
5. **Fit**: OD per M from the standards against the blank (water's band checks every well's
   path); ln(rate / labelled enzyme) on 1/T and on the time the enzyme went in (its slow loss
   over the hours) by least squares: Ea from the slope (a line's secant over the window's ends
   is its slope), k37 on the plane at 37 °C and time 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.arrhenius_parts import (
    REFERENCE_C,
    WINDOWS,
    boltzmann,
    setpoints,
)
from labtools.simulators.families.kinetics_expert import (
    NO_ENZYME,
    OVER_OD,
    Design,
    background_slope,
    diluted_stock,
    enzyme_source,
    kinetic,
    read_endpoint,
)
from labtools.simulators.families.kinetics_parts import (
    ENZYME_MAX_UL,
    STANDARD_UL,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    Pair,
    temperature_prior,
)
from labtools.simulators.families.protocol import PLATE, kept, sound, transfer, well
from labtools.simulators.tasks.scripting import Call, site_of, water_band
from labtools.simulators.world.kinetics_temperature import GAS_CONSTANT, kelvin

__all__ = ["arrhenius", "uncontrolled"]

#: seconds the plate sits in the chamber at a new setpoint before the enzyme goes in [A: the
#: chamber's air settles in ~12 minutes and the plate lags it by τ = 5 min (plate_reader.toml):
#: 20 minutes leave a 4 °C step under 0.1 °C]
PREWARM_S = 900.0
#: a temperature's read (s), and the part of it left out while the plate returns to the
#: chamber's air after the deck [A: 10 minutes, two plate time constants]
READ_S, SETTLE_S = 1500.0, 600.0
#: seconds on the deck while the enzyme goes in, for the clock the expert keeps [A: a plate
#: move each way and a few transfers]
DECK_S = 45.0
#: at the published kcat, the Ea span's top and the window's top, a well rises at most this
#: much (OD) and converts at most this share of its substrate by its read's end [A]
MAX_RISE_OD, MAX_CONVERSION = 0.6, 0.05
#: seconds from the enzyme's addition to the end of a read, for the design [A: the read and a
#: couple of minutes on the deck]
DESIGN_S = READ_S + 120.0
#: a pooled decay counts where it stands out this many standard errors [A: carried back over
#: ~1000 s, a spurious one moves a rate by tens of per cent; 3 sd keeps it to ~1 group in 300]
SIGNIFICANT = 3.0
#: kinetic reads a temperature's read is split into (each returns at most 600 values inline:
#: more reads, less noise in each curvature) [A]
SEGMENTS = 3
ROWS = "ABCDEFGH"
#: the no-controls read (s): the kinetics family's naive 10 minutes [A]
UNCONTROLLED_S = 600.0


def design(p: Pair, molar: Mapping[str, float], window: str, wells: int, reps: int) -> Design:
    """The plate's plan (the kinetics expert's :class:`~.kinetics_expert.Design`): one substrate
    level (half the well of the stock), the enzyme for the window's top at the published figures
    (the Ea span's top), ``reps`` wells a temperature."""
    top_c = WINDOWS[window][1]
    s = molar["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
    kcat = p.kcat_centre * boltzmann(1e3 * temperature_prior(p).kcat_ea_kj[1], top_c, 25.0)
    allowed = min(MAX_CONVERSION * s, MAX_RISE_OD / p.od_per_molar)  # M of product
    e_max = molar["enzyme"] * ENZYME_MAX_UL / WELL_UL
    e_well = min(e_max, allowed / (kcat * DESIGN_S))
    enzyme_ul, dilutions, e_well = enzyme_source(molar["enzyme"], e_well, 10.0)
    return Design([s], e_well, enzyme_ul, dilutions, READ_S, reps)


def arrhenius(
    call: Call, p: Pair, stocks: Mapping[str, str], window: str, *, wells: int
) -> tuple[float, float]:
    """Ea (J/mol) and k37 (s⁻¹ per labelled site), through ``call`` only."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "standard")
    }
    temps = setpoints(window)
    extra = len(STANDARD_UL) + 1 + NO_ENZYME
    reps = 3 if len(order(temps)) * 3 + extra <= wells else 2
    plan = design(p, molar, window, wells, reps)
    names = iter(f"{r}{c}" for c in range(1, 13) for r in ROWS)
    groups = [[next(names) for _ in range(reps)] for _ in order(temps)]
    blank = next(names)
    no_enzyme = [next(names) for _ in range(NO_ENZYME)]
    std = {next(names): molar["standard"] * v / WELL_UL for v in STANDARD_UL}
    reactions = [w for group in groups for w in group]
    everything = [*reactions, blank, *no_enzyme, *std]
    buffer, substrate, standard = stocks["buffer"], stocks["substrate"], stocks["standard"]
    enzyme = diluted_stock(call, stocks, plan)

    moves = [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL - plan.enzyme_ul) for w in reactions]
    moves += [(buffer, well(blank), WELL_UL)]
    moves += [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL) for w in no_enzyme]
    moves += [(buffer, well(w), WELL_UL - v) for w, v in zip(std, STANDARD_UL, strict=True)]
    transfer(call, moves, "reuse")
    moves = [(substrate, well(w), SUBSTRATE_MAX_UL) for w in [*reactions, *no_enzyme]]
    transfer(call, moves, "reuse")
    transfer(call, [(standard, well(w), v) for w, v in zip(std, STANDARD_UL, strict=True)], "reuse")

    x: list[float] = []
    y: list[float] = []
    started: list[float] = []
    elapsed = 0.0  # s since the first setpoint: the chamber's waits and the reads
    call("lh_move_plate", plate=PLATE, destination="reader")
    for group, celsius in enumerate(order(temps)):
        held = call("reader_set_temperature", temperature=_celsius(celsius), wait=True)
        elapsed += float(held["waited"])
        _wait(call, blank, PREWARM_S)
        elapsed += PREWARM_S + DECK_S
        call("lh_move_plate", plate=PLATE, destination=home)
        transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in groups[group]], "reuse")
        call("lh_move_plate", plate=PLATE, destination="reader")
        times, series = kinetic(call, p, [*groups[group], *no_enzyme], READ_S, SEGMENTS)
        late = times >= SETTLE_S
        background = background_slope(times[late], [series[w][late] for w in no_enzyme])
        for rate in _initial_rates(times, [series[w] for w in groups[group]]):
            x.append(1.0 / kelvin(celsius))
            y.append(rate - background)
            started.append(elapsed)
        elapsed += float(times[-1])
    after = read_endpoint(call, p, [blank, *std])
    bands = water_band(call, PLATE, everything)
    call("reader_stop_heating")
    call("lh_move_plate", plate=PLATE, destination=home)
    healthy = sound(np.array([bands[w] for w in everything]), everything)

    good = kept([w for w in std if w in healthy], list(std), 2)
    xs = np.array([std[w] for w in good])
    ys = np.array([after[w] - after[blank] for w in good])
    slope = float(xs @ ys / (xs @ xs))
    # a well whose path is short reads low: leave it out (unless too few would be left)
    chosen = [i for i, w in enumerate(reactions) if w in healthy]
    if len(chosen) < 4:
        chosen = list(range(len(y)))
    k = np.array([y[i] for i in chosen]) / slope / plan.e_well
    return _line(np.array([x[i] for i in chosen]), k, np.array([started[i] for i in chosen]))


def order(temps: list[float]) -> list[float]:
    """The temperatures in the order measured: the coolest, the warmest, the others, and the
    coolest again (its repeat and the order apart from 1/T measure the enzyme's slow loss of
    activity over the hours, stock and dilution alike)."""
    return [temps[0], temps[-1], *temps[1:-1], temps[0]]


def _initial_rates(times: np.ndarray, curves: list[np.ndarray]) -> list[float]:
    """Each curve's rate (OD/s) at the read's start: a parabola through its reads from
    :data:`SETTLE_S` on (under :data:`~.kinetics_expert.OVER_OD`) gives the slope at their
    middle; the curvature, pooled over ``curves`` (one temperature's replicates) as a first-order
    loss where it stands out, carries each slope back to the start."""
    fits = []
    for od in curves:
        keep = (times >= SETTLE_S) & np.isfinite(od) & (od < OVER_OD)
        if keep.sum() < 5:
            keep = np.isfinite(od) & (od < OVER_OD)
        if keep.sum() < 5:  # saturated from the start: no rate
            fits.append((0.0, math.nan, 0.0, 0.0))
            continue
        t, v = times[keep], od[keep]
        centre = float(t.mean())
        coef, cov = np.polyfit(t - centre, v, 2, cov=True)
        fits.append((centre, float(coef[1]), float(coef[0]), float(cov[0, 0])))
    losses = [-2.0 * c / b for _, b, c, _ in fits if b > 0]
    errors = [2.0 * math.sqrt(max(var, 0.0)) / b for _, b, _, var in fits if b > 0]
    loss = float(np.mean(losses)) if losses else 0.0
    se = math.sqrt(sum(e * e for e in errors)) / max(len(errors), 1)
    if loss < SIGNIFICANT * se:
        loss = 0.0
    return [b * math.exp(loss * centre) for centre, b, _, _ in fits]


def _line(inv_t: np.ndarray, k: np.ndarray, started: np.ndarray | None) -> tuple[float, float]:
    """Ea (J/mol) and k37 from a least-squares plane of ln k on 1/T and, given ``started``,
    the time each well's enzyme went in (a first-order loss of activity, k37 then at time 0)."""
    keep = np.isfinite(k) & (k > 0)
    if keep.sum() < 2 or len(set(inv_t[keep])) < 2:
        return math.nan, math.nan
    columns = [np.ones(int(keep.sum())), inv_t[keep]]
    if started is not None and keep.sum() > 3:
        columns.append(started[keep])
    coef, *_ = np.linalg.lstsq(np.column_stack(columns), np.log(k[keep]), rcond=None)
    k37 = math.exp(float(coef[0]) + float(coef[1]) / kelvin(REFERENCE_C))
    return -float(coef[1]) * GAS_CONSTANT, k37


def _wait(call: Call, reference: str, seconds: float) -> None:
    """Let ``seconds`` pass with the plate in the reader (a two-point read of one well)."""
    call(
        "reader_read_absorbance_kinetic",
        plate=PLATE,
        wells=[reference],
        wavelength={"value": 405, "unit": "nanometer"},
        interval={"value": seconds, "unit": "second"},
        reads=2,
    )


def _celsius(value: float) -> dict[str, object]:
    return {"value": value, "unit": "degree_Celsius"}


# -- the shortcut ------------------------------------------------------------------------------
def uncontrolled(
    call: Call, p: Pair, stocks: Mapping[str, str], window: str
) -> tuple[float, float]:
    """The experiment without controls: one well at each end of the window (the expert's
    design), each set up at the room's temperature and read at once for
    :data:`UNCONTROLLED_S` once the chamber holds its setpoint; each rate the slope of its whole
    read over the library's ε (at the labelled pH) and the nominal path; Ea from the two, k37 on
    their line."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "standard")
    }
    plan = design(p, molar, window, 96, 1)
    enzyme = diluted_stock(call, stocks, plan)
    temps = list(WINDOWS[window])
    names = [f"A{i + 1}" for i in range(len(temps))]
    moves = [
        (stocks["buffer"], well(w), WELL_UL - SUBSTRATE_MAX_UL - plan.enzyme_ul) for w in names
    ]
    transfer(call, moves, "reuse")
    transfer(call, [(stocks["substrate"], well(w), SUBSTRATE_MAX_UL) for w in names], "reuse")
    x, k = [], []
    for name, celsius in zip(names, temps, strict=True):
        call("reader_set_temperature", temperature=_celsius(celsius), wait=True)
        transfer(call, [(enzyme, well(name), plan.enzyme_ul)], "reuse")
        call("lh_move_plate", plate=PLATE, destination="reader")
        times, series = kinetic(call, p, [name], UNCONTROLLED_S)
        call("lh_move_plate", plate=PLATE, destination=home)
        od = series[name]
        keep = np.isfinite(od) & (od < OVER_OD)
        if keep.sum() >= 2:
            rate = float(np.polyfit(times[keep], od[keep], 1)[0])
            x.append(1.0 / kelvin(celsius))
            k.append(rate / p.od_per_molar / plan.e_well)
    return _line(np.array(x), np.array(k), None)
