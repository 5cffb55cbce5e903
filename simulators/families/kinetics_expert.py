"""The ``kinetics`` family's protocols on a plate: the expert's design, controls, kinetic reads
and fit; the naive endpoint; the experiment without controls.

The expert (:func:`constants`):

1. **Design** from the labels and the published constants only (:func:`design`): :data:`LEVELS`
   substrate levels in a geometric series from the most a well holds (the stock at half the
   well) down to a fifth of the published Km (a span of 8 to 32); the enzyme such that, at the
   published constants, the lowest level converts at most :data:`MAX_CONVERSION` and the
   highest rises at most :data:`MAX_RISE_OD` over the :data:`READ_S` read (diluted in plate_2
   where a well would take less than :data:`LEAST_ENZYME_UL` of the stock); the levels in
   triplicate where the wells budget holds them, else in duplicate.
2. **Controls** beside them: a buffer blank, the product standard at :data:`~.kinetics_parts.
   STANDARD_UL` in the assay buffer, :data:`NO_ENZYME` wells of the top level without enzyme
   (the substrate's own hydrolysis), :data:`ENZYME_ONLY` wells of the enzyme without substrate
   (a coloured preparation's own optical density).
3. **Reads**: every well :data:`BASELINE_READS` times before the enzyme goes in (each well's
   baseline); the enzyme into the reactions (one tip, channel 0); :data:`SEGMENTS` kinetic
   reads of the reactions and the no-enzyme wells back to back, as many reads each as come
   back inline; the blank and the standards read once more; water's band in every well
   (defect wells left out).
4. **Fit**: OD per M from the standards against the blank; each reaction's rate at the middle
   of its early progress curve, paired with the substrate left then
   (:func:`~labtools.simulators.tasks.kinetics_fit.rate_from_progress`; its baseline the
   pre-read plus the preparation's colour), less the substrate's own hydrolysis where the
   no-enzyme wells show any; a weighted Michaelis-Menten fit
   (:func:`~labtools.simulators.tasks.kinetics_fit.fit_michaelis_menten`), its covariance from
   the weighted Jacobian, with the labels' ±1 % and the pipetting's on top.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.kinetics_parts import (
    ENZYME_MAX_UL,
    STANDARD_UL,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    Pair,
)
from labtools.simulators.families.protocol import PLATE, kept, sound, transfer, well
from labtools.simulators.tasks.kinetics_expert import unsaturated
from labtools.simulators.tasks.kinetics_fit import (
    Rate,
    fit_michaelis_menten,
    rate_from_progress,
    weights,
)
from labtools.simulators.tasks.kinetics_protocol import INLINE_VALUES, MAX_READS
from labtools.simulators.tasks.scripting import Call, nm, site_of, water_band
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "Design",
    "PlateRun",
    "background_slope",
    "constants",
    "design",
    "diluted_stock",
    "endpoint_kcat",
    "enzyme_source",
    "on_dilution",
    "read_baselines",
    "read_endpoint",
    "run_plate",
    "through_zero_sd",
    "uncontrolled",
    "unsaturated",
]

#: substrate levels [A: six, from 8 × Km down to a quarter of it at level 1, from 2.5 × down to
#: a fifth at level 5]
LEVELS = 6
#: the levels' span (highest over lowest) reaches down to this share of the published Km, within
#: these bounds [A: a fifth of Km gives a sixth of Vmax; a span of 8 at least]
LOWEST, SPAN = 0.2, (8.0, 32.0)
#: at the published constants, the lowest level converts at most this much, the highest rises
#: at most this much (OD), by the read's end [A: the early-curve rate takes the reads before 30 %
#: conversion; an enzyme twice as active as published still leaves it half the read]
MAX_CONVERSION, MAX_RISE_OD = 0.3, 0.8
#: a rate counts only where its window's middle still holds this share of the level's substrate
#: (a well that ran faster than designed converts too much before its first reads) [A]
KEPT_LEFT = 0.6
#: a no-enzyme slope counts as the substrate's own hydrolysis beyond this many standard errors
#: [A: one spurious correction in ~400 episodes]
SIGNIFICANT = 3.0
#: no-enzyme wells at the top level [A: two, so that one well's noise does not pass for
#: hydrolysis]
NO_ENZYME = 2
#: enzyme-only wells (a coloured preparation's own OD) [A: two, so that a defect well's short
#: path leaves one]; reads of each well's baseline before the enzyme goes in [A: four, the read
#: noise halved]
ENZYME_ONLY, BASELINE_READS = 2, 4
#: the kinetic read's length (s), and the kinetic reads it is split into (each returns at most
#: 600 values inline: more reads, less noise in each rate) [A: forty minutes, three reads]
READ_S, SEGMENTS = 2400.0, 3
#: seconds from the first enzyme addition to the first read [A: ~6 s a well on one channel]
LAG_S = 120.0
#: the least enzyme volume put in a well (µL) [A]; below it the enzyme is diluted in buffer
LEAST_ENZYME_UL = 5.0
#: a dilution of the enzyme: its volume in a plate_2 well, what a tip cannot draw from it, and
#: the most a reaction well takes of it (µL) [A]
DILUTION_UL, DILUTION_SPARE_UL, ENZYME_ON_DILUTION_UL = 300.0, 30.0, 12.0
#: where the enzyme's dilutions are made
STORE = "plate_2"
#: relative standard uncertainties added to the fit's [A]: a label's ±1 % (the substrate's for
#: Km, the standard's for kcat), the pipetting of the volumes and the enzyme's slow loss of
#: activity over the episode (half a per cent each)
LABEL_SD, PIPETTING_SD, DECAY_SD = 0.01, 0.005, 0.005
ROWS = "ABCDEFGH"
#: the naive endpoint's wait (s) [A: enzyme_kinetics' naive 10 minutes]
NAIVE_S = 600.0
#: a well that reads nothing in range counts as this (the ceiling of :func:`unsaturated`, as
#: enzyme_kinetics' expert)
OVER_OD = 2.5


@dataclass
class Design:
    """A plate's plan: substrate levels (M in the well), the enzyme in a reaction well (M) and
    the volume of its source put in (µL), the 1-in-``f`` dilutions of the stock that source is
    made by, the read's length (s), the replicates."""

    levels: list[float]
    e_well: float
    enzyme_ul: float
    dilutions: list[float]
    read_s: float
    replicates: int


def design(p: Pair, labels: Mapping[str, float], *, wells: int, controls: bool = True) -> Design:
    """The plan from the stocks' labelled concentrations (M: ``substrate``, ``enzyme``) and the
    published constants of ``p``; ``wells``: the wells budget (``controls``: with the expert's
    controls and replicates, else one well a level)."""
    top = labels["substrate"] * SUBSTRATE_MAX_UL / WELL_UL
    km, kcat = p.km_centre, p.kcat_centre
    span = min(max(top / (LOWEST * km), SPAN[0]), SPAN[1])
    levels = [top / span ** (k / (LEVELS - 1)) for k in range(LEVELS)]
    # Vmax × time allowed: the lowest level's conversion, the highest level's rise
    allowed = min(
        MAX_CONVERSION * (km + levels[-1]),
        MAX_RISE_OD / (p.od_per_molar * top / (km + top)),
    )
    e_max = labels["enzyme"] * ENZYME_MAX_UL / WELL_UL
    read_s = READ_S
    e_well = min(e_max, allowed / (kcat * (read_s + LAG_S)))
    replicates = 1
    if controls:
        extra = len(STANDARD_UL) + 1 + NO_ENZYME + ENZYME_ONLY + 2  # a blank, two dilutions
        replicates = 3 if LEVELS * 3 + extra <= wells - 1 else 2
    started = LEVELS * replicates + (ENZYME_ONLY if controls else 0)
    enzyme_ul, dilutions, e_well = enzyme_source(labels["enzyme"], e_well, on_dilution(started))
    return Design(levels, e_well, enzyme_ul, dilutions, read_s, replicates)


def on_dilution(started: int) -> float:
    """µL of a dilution each of ``started`` wells takes: :data:`ENZYME_ON_DILUTION_UL`, less
    where the dilution's volume would not hold them all."""
    return min(ENZYME_ON_DILUTION_UL, (DILUTION_UL - DILUTION_SPARE_UL) / started)


def enzyme_source(
    label: float, e_well: float, dilution_ul: float
) -> tuple[float, list[float], float]:
    """How a reaction well gets ``e_well`` (M) of an enzyme stock labelled ``label`` (M): the
    volume (µL, to 10 nL) of the stock, or, where a well would take less than
    :data:`LEAST_ENZYME_UL` of it, ``dilution_ul`` of its dilutions (1 in 10 each, the last
    1 in whatever is left); the dilutions; the enzyme then in the well (M)."""
    enzyme_ul, dilutions = e_well * WELL_UL / label, []
    if enzyme_ul < LEAST_ENZYME_UL:
        enzyme_ul = dilution_ul
        fold = label * enzyme_ul / (e_well * WELL_UL)
        while fold > 10.0 * (1 + 1e-9):
            dilutions.append(10.0)
            fold /= 10.0
        dilutions.append(fold)
    enzyme_ul = round(enzyme_ul, 2)
    return enzyme_ul, dilutions, label / math.prod(dilutions) * enzyme_ul / WELL_UL


def constants(
    call: Call, p: Pair, stocks: Mapping[str, str], *, wells: int
) -> tuple[float, float, float, float]:
    """Km (M), its sd, kcat per labelled site (s⁻¹) and its sd, through ``call`` only;
    ``stocks``: the containers of water, buffer, substrate, standard and enzyme."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in stocks
        if k != "water" and k != "buffer"
    }
    plan = design(p, molar, wells=wells)
    names = iter(f"{r}{c}" for c in range(1, 13) for r in ROWS)
    reactions = {next(names): s for _ in range(plan.replicates) for s in plan.levels}
    blank = next(names)
    enzyme_only = [next(names) for _ in range(ENZYME_ONLY)]
    no_enzyme = [next(names) for _ in range(NO_ENZYME)]
    std = {next(names): molar["standard"] * v / WELL_UL for v in STANDARD_UL}
    buffer, substrate, standard = stocks["buffer"], stocks["substrate"], stocks["standard"]
    volume = {s: s / molar["substrate"] * WELL_UL for s in plan.levels}
    enzyme = diluted_stock(call, stocks, plan)

    moves = [(buffer, well(w), WELL_UL - volume[s] - plan.enzyme_ul) for w, s in reactions.items()]
    moves += [(buffer, well(blank), WELL_UL)]
    moves += [(buffer, well(w), WELL_UL - plan.enzyme_ul) for w in enzyme_only]
    moves += [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL) for w in no_enzyme]
    moves += [(buffer, well(w), WELL_UL - v) for w, v in zip(std, STANDARD_UL, strict=True)]
    transfer(call, moves, "reuse")
    moves = [(substrate, well(w), volume[s]) for w, s in reactions.items()]
    moves += [(substrate, well(w), SUBSTRATE_MAX_UL) for w in no_enzyme]
    transfer(call, moves, "reuse")
    moves = [(standard, well(w), v) for w, v in zip(std, STANDARD_UL, strict=True)]
    transfer(call, moves, "reuse")

    run = run_plate(
        call,
        p,
        home,
        plan,
        enzyme,
        [*reactions],
        blank=blank,
        enzyme_only=enzyme_only,
        no_enzyme=no_enzyme,
        std=std,
    )
    times, series, before, healthy = run.times, run.series, run.before, run.healthy
    slope, colour, hydrolysis = run.slope, run.colour, run.hydrolysis

    rates: list[Rate] = []
    for level in plan.levels:
        mine = [w for w, s in reactions.items() if s == level]
        for w in kept([w for w in mine if w in healthy], mine, 1):
            rate = rate_from_progress(
                times, unsaturated(series[w]), before[w] + colour, slope, level
            )
            if rate is not None and rate.s > KEPT_LEFT * level:
                rates.append(Rate(rate.s, rate.v - hydrolysis * rate.s, rate.se))
    km, kcat, km_sd, kcat_sd = fit(rates, plan.e_well)
    km_sd = math.hypot(km_sd, LABEL_SD, PIPETTING_SD)
    kcat_sd = math.hypot(kcat_sd, LABEL_SD, PIPETTING_SD, DECAY_SD, run.slope_sd / slope)
    return km, km_sd * km, kcat, kcat_sd * kcat


def fit(rates: list[Rate], e_well: float) -> tuple[float, float, float, float]:
    """Km (M) and kcat (s⁻¹) by weighted least squares of the rates at enzyme ``e_well``, and
    the sd of their logarithms from the weighted Jacobian (scaled by the residuals where they
    scatter more than the rates' own errors say)."""
    if len(rates) < 3:
        return math.nan, math.nan, math.nan, math.nan
    s = np.array([r.s for r in rates])
    v = np.array([r.v for r in rates])
    se = np.array([r.se for r in rates])
    km, kcat, rss = fit_michaelis_menten(s, v, se, scale=np.full(s.size, e_well))
    model = kcat * e_well * s / (km + s)
    jacobian = np.column_stack([-model * km / (km + s), model])  # d/d ln Km, d/d ln kcat
    w = weights(v, se)
    information = jacobian.T @ (w[:, None] * jacobian)
    try:
        covariance = np.linalg.inv(information) * max(rss / max(s.size - 2, 1), 1.0)
    except np.linalg.LinAlgError:
        return km, kcat, 1.0, 1.0
    return km, kcat, math.sqrt(max(covariance[0, 0], 0.0)), math.sqrt(max(covariance[1, 1], 0.0))


@dataclass(frozen=True)
class PlateRun:
    """What one plate's run gives (:func:`run_plate`): the kinetic read's ``times`` (s) and
    ``series`` (OD per well), each well's OD ``before`` the enzyme went in, the ``healthy``
    wells (their water band shows no defect), the product's ``slope`` (OD per M, the standards
    through zero) and its sd, a coloured preparation's OD in a reaction well (``colour``) and
    the substrate's own first-order ``hydrolysis`` (s⁻¹)."""

    times: np.ndarray
    series: dict[str, np.ndarray]
    before: dict[str, float]
    healthy: set[str]
    slope: float
    slope_sd: float
    colour: float
    hydrolysis: float


def run_plate(
    call: Call,
    p: Pair,
    home: str,
    plan: Design,
    enzyme: str,
    reactions: Sequence[str],
    *,
    blank: str,
    enzyme_only: Sequence[str],
    no_enzyme: Sequence[str],
    std: Mapping[str, float],
) -> PlateRun:
    """A plate whose wells hold everything but the enzyme: baselines read, the enzyme into
    ``reactions`` and ``enzyme_only`` (from ``enzyme``, ``plan.enzyme_ul`` each), the kinetic
    read, the blank and the product standards ``std`` (well → M) read at its end, the water
    band of every well."""
    started = [*reactions, *enzyme_only]
    everything = [*started, blank, *no_enzyme, *std]
    call("lh_move_plate", plate=PLATE, destination="reader")
    before = read_baselines(call, p, everything)
    call("lh_move_plate", plate=PLATE, destination=home)
    transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in started], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, [*started, *no_enzyme], plan.read_s, SEGMENTS)
    after = read_endpoint(call, p, [blank, *std])
    bands = water_band(call, PLATE, everything)
    call("lh_move_plate", plate=PLATE, destination=home)
    healthy = sound(np.array([bands[w] for w in everything]), everything)

    # OD per M of product, from the standards (and the blank as 0)
    good = kept([w for w in std if w in healthy], list(std), 2)
    x = np.array([std[w] for w in good])
    y = np.array([after[w] - after[blank] for w in good])
    slope = float(x @ y / (x @ x))
    # a coloured preparation's own OD in a reaction well (its path-checked enzyme-only wells)
    coloured = kept([w for w in enzyme_only if w in healthy], list(enzyme_only), 1)
    colour = float(np.mean([np.nanmean(series[w]) - before[w] for w in coloured]))
    # the substrate's own hydrolysis, per s (first order)
    hydrolysis = background_slope(times, [series[w] for w in no_enzyme]) / slope / plan.levels[0]
    return PlateRun(
        times,
        series,
        before,
        healthy,
        slope,
        through_zero_sd(x, y, slope),
        colour,
        hydrolysis,
    )


def kinetic(
    call: Call, p: Pair, wells: list[str], read_s: float, segments: int = 1
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Kinetic reads of ``wells`` of :data:`~.protocol.PLATE` (in the reader) at the pair's
    wavelength over ``read_s`` in all, ``segments`` of them back to back, each with as many
    reads as come back inline (at most 41); the times run on from one to the next (each read
    starts at once after the one before)."""
    reads = max(min(INLINE_VALUES // len(wells), MAX_READS), 2)
    interval = round(read_s / segments / (reads - 1), 3)
    times: list[float] = []
    series: dict[str, list[float]] = {w: [] for w in wells}
    for _ in range(segments):
        data = call(
            "reader_read_absorbance_kinetic",
            plate=PLATE,
            wells=wells,
            wavelength=nm(p.read_nm),
            interval={"value": interval, "unit": "second"},
            reads=reads,
        )
        start = times[-1] if times else 0.0
        times += [start + float(t) for t in data["times"]]
        for w in wells:
            series[w] += [math.nan if x is None else float(x) for x in data["values"][w]]
    return np.array(times, dtype=float), {w: np.array(v, dtype=float) for w, v in series.items()}


def read_baselines(call: Call, p: Pair, wells: list[str]) -> dict[str, float]:
    """Each of ``wells`` read :data:`BASELINE_READS` times at the pair's wavelength before the
    enzyme goes in: the mean (its plate, its offsets, what the substrate brought)."""
    reads = BASELINE_READS
    data = call(
        "reader_read_absorbance_kinetic",
        plate=PLATE,
        wells=wells,
        wavelength=nm(p.read_nm),
        interval={"value": 1.0, "unit": "second"},
        reads=reads,
    )
    out = {}
    for w in wells:
        values = [float(x) for x in data["values"][w] if x is not None]
        out[w] = float(np.mean(values)) if values else OVER_OD
    return out


def read_endpoint(call: Call, p: Pair, wells: list[str]) -> dict[str, float]:
    """Each of ``wells`` read once at the pair's wavelength (OD; :data:`OVER_OD` where a well
    reads nothing in range)."""
    values = call("reader_read_absorbance", plate=PLATE, wavelength=nm(p.read_nm), wells=wells)[
        "values"
    ]
    return {w: float(values.get(w, OVER_OD)) for w in wells}


def diluted_stock(call: Call, stocks: Mapping[str, str], plan: Design) -> str:
    """The enzyme's source: the stock, or its dilutions (``plan.dilutions``, each 1 in ``f``
    in buffer) in plate_2 wells."""
    source = stocks["enzyme"]
    for i, fold in enumerate(plan.dilutions):
        vessel = f"{STORE}:A{i + 1}"
        part = round(DILUTION_UL / fold, 2)
        transfer(call, [(stocks["buffer"], vessel, DILUTION_UL - part)], "reuse")
        transfer(call, [(source, vessel, part)], "reuse")
        source = vessel
    return source


def background_slope(times: np.ndarray, wells: list[np.ndarray]) -> float:
    """The no-enzyme wells' mean slope (OD/s) where it stands out from its noise
    (:data:`SIGNIFICANT` standard errors), else 0: a slope within the noise would only add that
    noise to every rate, most to the highest level's."""
    slopes, variances = [], []
    for od in wells:
        keep = np.isfinite(od)
        if keep.sum() < 3:
            continue
        t, y = times[keep], od[keep]
        slope, intercept = np.polyfit(t, y, 1)
        residual = y - (slope * t + intercept)
        spread = float(((t - t.mean()) ** 2).sum())
        slopes.append(float(slope))
        variances.append(float(residual @ residual) / (t.size - 2) / spread)
    if not slopes:
        return 0.0
    mean = float(np.mean(slopes))
    se = math.sqrt(sum(variances)) / len(slopes)
    return mean if abs(mean) > SIGNIFICANT * se else 0.0


def through_zero_sd(x: np.ndarray, y: np.ndarray, slope: float) -> float:
    """The standard error of a slope through the origin (0 with fewer than two points)."""
    if x.size < 2:
        return 0.0
    residual = y - slope * x
    return math.sqrt(float(residual @ residual) / (x.size - 1) / float(x @ x))


# -- the shortcuts -----------------------------------------------------------------------------
def uncontrolled(
    call: Call, p: Pair, stocks: Mapping[str, str]
) -> tuple[float, float, float, float]:
    """The experiment without controls: the expert's substrate levels and enzyme, one well
    each, no blank, standard, no-enzyme well, pre-read or replicate; one kinetic read; each
    rate from its progress curve with its first reading as baseline, converted with the
    library's ε at the labelled pH over the nominal path; the same fit (its sd alone)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6 for k in ("substrate", "enzyme")}
    plan = design(p, molar, wells=96, controls=False)
    names = [f"A{i + 1}" for i in range(len(plan.levels))]
    volume = [s / molar["substrate"] * WELL_UL for s in plan.levels]
    enzyme = diluted_stock(call, stocks, plan)
    moves = [
        (stocks["buffer"], well(w), WELL_UL - v - plan.enzyme_ul)
        for w, v in zip(names, volume, strict=True)
    ]
    transfer(call, moves, "reuse")
    transfer(
        call,
        [(stocks["substrate"], well(w), v) for w, v in zip(names, volume, strict=True)],
        "reuse",
    )
    transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in names], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, names, plan.read_s)
    call("lh_move_plate", plate=PLATE, destination=home)
    rates = []
    for w, level in zip(names, plan.levels, strict=True):
        od = unsaturated(series[w])
        first = od[np.isfinite(od)]
        if first.size:
            rate = rate_from_progress(times, od, float(first[0]), p.od_per_molar, level)
            if rate is not None and rate.s > 0.0:
                rates.append(rate)
    km, kcat, km_sd, kcat_sd = fit(rates, plan.e_well)
    return km, km_sd * km, kcat, kcat_sd * kcat


def endpoint_kcat(call: Call, p: Pair, stocks: Mapping[str, str]) -> float:
    """The naive endpoint: the top substrate level (half the well of the stock) with a tenth of
    the enzyme stock in plate_1:A1, read over :data:`NAIVE_S`; the last reading, unblanked,
    over the library's ε at the product's peak and 1 cm, over that time and the enzyme."""
    deck = call("lh_get_deck")
    e_well = label_micromolar(deck["labels"][stocks["enzyme"]]) * 1e-6 * 0.1
    moves = [
        (stocks["buffer"], well("A1"), 80.0),
        (stocks["substrate"], well("A1"), SUBSTRATE_MAX_UL),
        (stocks["enzyme"], well("A1"), 20.0),
    ]
    transfer(call, moves, "new")
    call("lh_move_plate", plate=PLATE, destination="reader")
    _, series = kinetic(call, p, ["A1"], NAIVE_S)
    end = float(series["A1"][-1])
    end = end if math.isfinite(end) else 4.0
    peak = SpeciesLibrary.default()[p.product].epsilon_max
    return max(end, 1e-3) / peak / NAIVE_S / e_well
