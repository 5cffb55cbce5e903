"""The ``activity`` family's protocols on a plate: the expert's dilutions, controls, kinetic
reads and rates; the naive endpoint; the experiment without controls.

The expert (:func:`activity`):

1. **Design** from the labels and the published constants only (:func:`design`): the
   enzyme stock's expected rate in a well at the stated substrate level; two independent
   dilution chains of the stock in the assay buffer (plate_2, steps of 1 in 10, the last 1 in
   20 at most), such that the middle of :data:`DOSES_UL` converts :data:`TARGET_CONVERSION`
   of the substrate over the read at the published constants; each dose in replicate, the
   replicates alternating between the chains.
2. **Controls** beside them: a buffer blank, the product standard at
   :data:`~.kinetics_parts.STANDARD_UL` in the assay buffer (ε × path in this medium and
   plate), :data:`~.kinetics_expert.NO_ENZYME` wells of substrate without enzyme (its own
   hydrolysis), one well of the top dose without substrate (the preparation's colour).
3. **Reads**: every well :data:`~.kinetics_expert.BASELINE_READS` times before the enzyme goes
   in; the enzyme in; :data:`SEGMENTS` kinetic reads back to back; the blank and the standards
   once more; water's band in every well (defect wells left out).
4. **Rates**: each reaction's initial rate from the reads before :data:`MAX_CONVERSION` of the
   substrate has turned over (:func:`~labtools.simulators.tasks.kinetics_fit.
   rate_from_progress`), brought back to the stated substrate level through the published Km
   (a correction of a few per cent at most); the no-enzyme wells' slopes as rates at no enzyme;
   a weighted straight line through the rates against the stock in each well: its slope the
   rate per µL of stock, its intercept the substrate's own hydrolysis (the scatter, the
   standard curve's, the labels' and the pipetting's in the uncertainty) → U/mL.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.kinetics_expert import (
    LAG_S,
    NAIVE_S,
    NO_ENZYME,
    OVER_OD,
    kinetic,
    read_baselines,
    read_endpoint,
    through_zero_sd,
)
from labtools.simulators.families.kinetics_parts import (
    STANDARD_UL,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    Pair,
)
from labtools.simulators.families.protocol import PLATE, kept, sound, transfer, well
from labtools.simulators.tasks.kinetics_fit import rate_from_progress
from labtools.simulators.tasks.scripting import Call, site_of, water_band
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "DOSES_UL",
    "Plan",
    "activity",
    "design",
    "naive_endpoint",
    "u_per_ml",
    "uncontrolled",
]

#: volumes (µL) of the final dilution put in a reaction well: three doses, each three times the
#: last [A: a threefold span shows whether the rate is proportional to the enzyme]
DOSES_UL = (4.0, 12.0, 36.0)
#: the middle dose converts this share of the substrate over the read at the published
#: constants [A: the lowest dose still rises ~0.01 OD at level 5's faintest pair; an enzyme
#: three times as active as published leaves the top dose 10 % conversion in its first fifth]
TARGET_CONVERSION = 0.06
#: a rate counts the reads before this share of the substrate has turned over [A: the usual
#: initial-rate criterion, under 10 % depletion]
MAX_CONVERSION = 0.10
#: the kinetic read's length (s) and the reads it is split into [A: twenty minutes, two reads]
READ_S, SEGMENTS = 1200.0, 2
#: a dilution well's volume (µL) in plate_2 [A]; two independent chains [A: replicate dilutions]
DILUTION_UL, CHAINS = 300.0, 2
#: a chain's steps are 1 in 10, its last 1 in 20 at most [A: 15 µL into 285 µL]
MAX_STEP = 20.0
STORE = "plate_2"
#: relative standard uncertainties added [A]: the standard's label (±1 %), each pipetting step
#: of a dilution chain (half a per cent, the chains' mean), the enzyme's loss of activity over
#: the episode
LABEL_SD, STEP_SD, DECAY_SD = 0.01, 0.005, 0.005
#: relative floor on each well's rate error in the weighted mean [A: pipetting of the dose]
RATE_FLOOR = 0.02
ROWS = "ABCDEFGH"


@dataclass
class Plan:
    """A plate's plan: the substrate in the well (M), each chain's 1-in-``f`` steps, the
    replicates of each dose."""

    substrate: float
    steps: list[float]
    replicates: int

    @property
    def fold(self) -> float:
        return math.prod(self.steps)


def u_per_ml(molar_per_s_per_ul: float) -> float:
    """A rate in a :data:`WELL_UL` well (M/s) per µL of stock in it, as U/mL of stock
    (µmol/min per mL)."""
    return molar_per_s_per_ul * WELL_UL * 1e-6 * 1e3 * 60.0 * 1e6


def design(p: Pair, labels: Mapping[str, float], *, wells: int) -> Plan:
    """The plan from the stocks' labels (M: ``substrate``, ``enzyme``) and ``p``'s published
    constants; ``wells``: the wells budget."""
    s = labels["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
    per_ul = p.kcat_centre * labels["enzyme"] * s / (p.km_centre + s) / WELL_UL
    stock_ul = TARGET_CONVERSION * s / (per_ul * (READ_S + LAG_S))
    fold = max(DOSES_UL[1] / stock_ul, 1.0)
    steps = []
    while fold > MAX_STEP:
        steps.append(10.0)
        fold /= 10.0
    if fold > 1.05:
        steps.append(fold)
    controls = 1 + len(STANDARD_UL) + NO_ENZYME + 1 + CHAINS * len(steps)
    replicates = 3 if len(DOSES_UL) * 3 + controls <= wells else 2
    return Plan(s, steps, replicates)


def _chains(call: Call, buffer: str, enzyme: str, plan: Plan, chains: int) -> list[str]:
    """``chains`` independent dilution chains of the stock in buffer (plate_2, row by row); the
    last well of each."""
    moves, parts, ends = [], [], []
    for c in range(chains):
        source = enzyme
        for i, fold in enumerate(plan.steps):
            vessel = f"{STORE}:{ROWS[c]}{i + 1}"
            part = round(DILUTION_UL / fold, 2)
            moves.append((buffer, vessel, DILUTION_UL - part))
            parts.append((source, vessel, part))
            source = vessel
        ends.append(source)
    if not moves:
        return ends
    transfer(call, moves, "reuse")
    for step in range(len(plan.steps)):  # step by step: each draws on the last, mixed
        transfer(call, parts[step :: len(plan.steps)], "new")
    return ends


def _labels(call: Call, stocks: Mapping[str, str]) -> tuple[dict[str, object], dict[str, float]]:
    deck = call("lh_get_deck")
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "standard", "enzyme")
    }
    return deck, molar


def activity(call: Call, p: Pair, stocks: Mapping[str, str], *, wells: int) -> tuple[float, float]:
    """The stock's activity (U/mL) at the stated substrate level and its sd, through ``call``
    only; ``stocks``: the containers of water, buffer, substrate, standard and enzyme."""
    deck, molar = _labels(call, stocks)
    home = site_of(deck, PLATE)
    plan = design(p, molar, wells=wells)
    names = iter(f"{r}{c}" for c in range(1, 13) for r in ROWS)
    reactions = {next(names): (d, k % CHAINS) for k in range(plan.replicates) for d in DOSES_UL}
    blank = next(names)
    colour = next(names)
    no_enzyme = [next(names) for _ in range(NO_ENZYME)]
    std = {next(names): molar["standard"] * v / WELL_UL for v in STANDARD_UL}
    buffer, substrate, standard = stocks["buffer"], stocks["substrate"], stocks["standard"]
    ends = _chains(call, buffer, stocks["enzyme"], plan, CHAINS)

    moves = [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL - d) for w, (d, _) in reactions.items()]
    moves += [(buffer, well(blank), WELL_UL), (buffer, well(colour), WELL_UL - DOSES_UL[-1])]
    moves += [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL) for w in no_enzyme]
    moves += [(buffer, well(w), WELL_UL - v) for w, v in zip(std, STANDARD_UL, strict=True)]
    transfer(call, moves, "reuse")
    moves = [(substrate, well(w), SUBSTRATE_MAX_UL) for w in [*reactions, *no_enzyme]]
    transfer(call, moves, "reuse")
    transfer(call, [(standard, well(w), v) for w, v in zip(std, STANDARD_UL, strict=True)], "reuse")

    started = [*reactions, colour]
    everything = [*started, blank, *no_enzyme, *std]
    call("lh_move_plate", plate=PLATE, destination="reader")
    before = read_baselines(call, p, everything)
    call("lh_move_plate", plate=PLATE, destination=home)
    moves = [(ends[c], well(w), d) for w, (d, c) in reactions.items()]
    moves.append((ends[0], well(colour), DOSES_UL[-1]))
    transfer(call, moves, "new")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, [*started, *no_enzyme], READ_S, SEGMENTS)
    after = read_endpoint(call, p, [blank, *std])
    bands = water_band(call, PLATE, everything)
    call("lh_move_plate", plate=PLATE, destination=home)
    healthy = sound(np.array([bands[w] for w in everything]), everything)

    good = kept([w for w in std if w in healthy], list(std), 2)
    x = np.array([std[w] for w in good])
    y = np.array([after[w] - after[blank] for w in good])
    slope = float(x @ y / (x @ x))
    slope_sd = through_zero_sd(x, y, slope) / slope
    tint = float(np.nanmean(series[colour]) - before[colour]) / DOSES_UL[-1]
    # the substrate's own hydrolysis: the no-enzyme wells' slopes, as points at no enzyme
    xs, ys, ses = [], [], []
    for w in no_enzyme:
        line = _slope(times, series[w])
        if line is not None:
            xs.append(0.0)
            ys.append(line[0] / slope)
            ses.append(line[1] / slope)

    s, km = plan.substrate, p.km_centre
    for w in kept([w for w in reactions if w in healthy], list(reactions), 2):
        dose = reactions[w][0]
        od = np.where(series[w] > OVER_OD, np.nan, series[w])
        rate = rate_from_progress(
            times, od, before[w] + tint * dose, slope, s, max_conversion=MAX_CONVERSION
        )
        if rate is None or not rate.s > 0.5 * s:
            continue
        v = rate.v * (s / (km + s)) / (rate.s / (km + rate.s))
        xs.append(dose / plan.fold)
        ys.append(v)
        ses.append(math.hypot(rate.se, RATE_FLOOR * v))
    if sum(x > 0 for x in xs) < 2:
        return math.nan, math.nan
    mean, sd = _dose_slope(np.array(xs), np.array(ys), np.array(ses))
    steps = STEP_SD * math.sqrt(len(plan.steps) / CHAINS)
    rel = math.hypot(sd / abs(mean), slope_sd, LABEL_SD, steps, DECAY_SD)
    return u_per_ml(mean), rel * abs(u_per_ml(mean))


def _slope(times: np.ndarray, od: np.ndarray) -> tuple[float, float] | None:
    """A straight line's slope through ``od`` against ``times`` (OD/s) and its standard
    error; ``None`` with fewer than three finite reads."""
    keep = np.isfinite(od)
    if keep.sum() < 3:
        return None
    t, y = times[keep], od[keep]
    fit, intercept = np.polyfit(t, y, 1)
    residual = y - (fit * t + intercept)
    spread = float(((t - t.mean()) ** 2).sum())
    return float(fit), math.sqrt(float(residual @ residual) / (t.size - 2) / spread)


def _dose_slope(x: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[float, float]:
    """The rate per µL of stock: the weighted straight line through the rates ``y`` (M/s)
    against the stock in each well ``x`` (µL), its intercept the rate without enzyme (the
    substrate's own hydrolysis, the no-enzyme wells at x = 0); its slope and the slope's
    standard error (scaled up by the scatter where the points stray more than their errors)."""
    w = 1.0 / se**2
    design = np.column_stack([x, np.ones_like(x)])
    information = design.T @ (w[:, None] * design)
    covariance = np.linalg.inv(information)
    coef = covariance @ (design.T @ (w * y))
    residual = y - design @ coef
    dof = max(x.size - 2, 1)
    chi2 = float(w @ residual**2) / dof
    return float(coef[0]), math.sqrt(float(covariance[0, 0]) * max(chi2, 1.0))


# -- the shortcuts -----------------------------------------------------------------------------
def uncontrolled(call: Call, p: Pair, stocks: Mapping[str, str]) -> tuple[float, float]:
    """The experiment without controls: the expert's dilution (one chain), the middle dose once
    in the substrate, one kinetic read; the rate from its progress curve with its first reading
    as baseline, converted with the library's ε at the labelled pH over the nominal path; its
    fit's sd alone."""
    deck, molar = _labels(call, stocks)
    home = site_of(deck, PLATE)
    plan = design(p, molar, wells=96)
    (end,) = _chains(call, stocks["buffer"], stocks["enzyme"], plan, 1)
    dose = DOSES_UL[1]
    moves = [(stocks["buffer"], well("A1"), WELL_UL - SUBSTRATE_MAX_UL - dose)]
    moves += [(stocks["substrate"], well("A1"), SUBSTRATE_MAX_UL)]
    transfer(call, moves, "reuse")
    transfer(call, [(end, well("A1"), dose)], "new")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, ["A1"], READ_S)
    call("lh_move_plate", plate=PLATE, destination=home)
    od = np.where(series["A1"] > OVER_OD, np.nan, series["A1"])
    finite = od[np.isfinite(od)]
    if not finite.size:
        return math.nan, math.nan
    rate = rate_from_progress(
        times, od, float(finite[0]), p.od_per_molar, plan.substrate, max_conversion=MAX_CONVERSION
    )
    if rate is None:
        return math.nan, math.nan
    stock_ul = dose / plan.fold
    return u_per_ml(rate.v / stock_ul), u_per_ml(rate.se / stock_ul)


def naive_endpoint(call: Call, p: Pair, stocks: Mapping[str, str]) -> float:
    """The naive endpoint: the stated substrate level with 10 µL of the stock undiluted in
    plate_1:A1, read over :data:`~.kinetics_expert.NAIVE_S`; the last reading, unblanked, over
    the library's ε at the product's peak and 1 cm and that time, per µL of stock → U/mL."""
    moves = [
        (stocks["buffer"], well("A1"), WELL_UL - SUBSTRATE_MAX_UL - 10.0),
        (stocks["substrate"], well("A1"), SUBSTRATE_MAX_UL),
        (stocks["enzyme"], well("A1"), 10.0),
    ]
    transfer(call, moves, "new")
    call("lh_move_plate", plate=PLATE, destination="reader")
    _, series = kinetic(call, p, ["A1"], NAIVE_S)
    end = float(series["A1"][-1])
    end = end if math.isfinite(end) else 4.0
    peak = SpeciesLibrary.default()[p.product].epsilon_max
    return u_per_ml(max(end, 1e-3) / peak / NAIVE_S / 10.0)
