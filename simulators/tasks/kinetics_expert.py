"""The expert enzyme-kinetics protocols: a coarse pilot, then a design around what it found.

1. **Pilot**: a half-decade pNPP series (25 mM–25 µM in the well) at two enzyme levels 10×
   apart, started in one batch and read together for 5 min; rates from the early progress
   curves (nominal path length) and a joint Michaelis–Menten fit give rough Km and kcat.
2. **Design**: substrate at 0.2–5 × the rough Km as serial dilutions along plate rows, one row
   per replicate; the enzyme diluted so that the lowest level converts at most a fifth of its
   substrate by the end of the read and the highest rises by at most 1.5 OD; p-nitrophenol
   standards in the same plate (OD per M at the same volume); every well's optical baseline
   read before the reactions start, all of them in one batch.
3. **Fit**: each well's rate at the middle of its early progress curve, paired with the
   substrate left then (:func:`~labtools.simulators.tasks.kinetics_fit.rate_from_progress`, so
   that the wells' few seconds of different start times cost nothing), then a weighted
   nonlinear least-squares Michaelis–Menten fit (or the three inhibition models).

The inhibition variant adds an IC50 scan at S ≈ Km between pilot and design, and reads the
substrate series at no inhibitor, ≈ IC50 and ≈ 4 × IC50 (one row each), the inhibitor
premixed with the enzyme.

Dilutions step down a half-decade ladder of rungs below each stock, so that every dilution
draws at least about 50 µL and a channel's bias (±0.5 µL, 1 sd, for the 200 µL class) stays
near 1 % or below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labtools.simulators.tasks.kinetics_fit import (
    Rate,
    fit_inhibition_robust,
    fit_michaelis_menten,
    mechanism_probabilities,
    rate_from_progress,
    weights,
)
from labtools.simulators.tasks.kinetics_protocol import WELL_UL, Assay, Well, nominal_od_per_molar

__all__ = [
    "Estimate",
    "design_enzyme",
    "inhibition_expert",
    "kinetics_expert",
    "pilot",
    "prepare",
    "serial_dilution",
    "strongest_molar",
    "unsaturated",
]

#: the pilot's substrate series: this many half-decade rungs from the stock (as 2×)
PILOT_LEVELS = 7
#: the pilot's two enzyme levels differ by this factor: with kcat spanning 100×, one of them
#: gives 0.01–1 OD/min at saturation
PILOT_SPAN = 10.0
#: how long the pilot's reactions are read (s)
PILOT_READ_S = 300.0
#: the pilot's rough constants are kept where a design can use them (M, s⁻¹)
PILOT_KM_RANGE = (2e-5, 2e-2)
PILOT_KCAT_RANGE = (1.0, 1e4)
#: IC50 scan: no inhibitor, then the inhibitor's half-decade ladder as 10× solutions (the stock
#: first: 5 mM … 50 µM in the well)
IC50_LEVELS = 5
#: refined substrate levels as multiples of the rough Km (geometric: a serial dilution)
DESIGN_S = (0.2, 0.35, 0.6, 1.0, 1.7, 3.0, 5.0)
INHIBITION_S = (0.2, 0.4, 0.8, 1.6, 3.2, 6.0)
#: replicate rows of the kinetics design
DESIGN_ROWS = 2
#: the design's inhibitor solutions are made at this many times their level in the well
INHIBITOR_FOLD = 8.0
#: the design's limits: fraction of the lowest level converted by the end of the read, and the
#: OD rise of the highest level
MAX_CONVERSION = 0.2
MAX_RISE_OD = 1.5
#: design wells (µL): substrate at 2× final, then the starter, enzyme (and inhibitor) at 2×
SUBSTRATE_UL, STARTER_UL = 100.0, 100.0
#: pilot wells (µL): buffer, substrate at 2×, enzyme
PILOT_UL = {"buffer": 80.0, "substrate": 100.0, "enzyme": 20.0}
#: IC50 wells (µL): buffer, inhibitor at 10×, substrate at 4×, enzyme at 5×
IC50_UL = {"buffer": 90.0, "inhibitor": 20.0, "substrate": 50.0, "enzyme": 40.0}
READ_S = 600.0
#: µL of the p-nitrophenol stock in each standard well (0, 60 and 120 µM from 200 µM, each
#: twice, so that two channels pipette each level)
STANDARDS_UL = (0.0, 0.0, 60.0, 60.0, 120.0, 120.0)
#: seconds between the first enzyme addition and the first read: the starting batch's tips and
#: rounds, and the plate's move into the reader
LAG_S = 60.0
#: the ladders' rungs are half a decade apart in plate wells, each holding at least
#: ``RUNG_UL`` to draw (so that it takes ≥ 71 µL of the rung above) and giving at most
#: ``RUNG_DRAW_UL`` to a trough's dilution
RUNG_FOLD = 10.0**0.5
RUNG_UL, RUNG_DRAW_UL = 250.0, 250.0
#: a dilution is made from a rung at least this many-fold stronger (a copy at 1×): the
#: buffer's part is then large enough to pipette precisely
LEAST_FOLD = 1.25


@dataclass(frozen=True)
class Estimate:
    """Kinetic constants: Km (M) and kcat (s⁻¹); ``ki`` (M) for the inhibitor, if any."""

    km: float
    kcat: float
    ki: float = math.nan


# -- solutions ---------------------------------------------------------------------------------
def prepare(
    assay: Assay, key: str, targets: list[tuple[float, float]], *, trough: bool = False
) -> list[str]:
    """Containers of stock ``key`` diluted in buffer from which ``targets`` (molar, µL to
    draw) can be drawn; with ``trough``, reservoir columns that all channels draw from at once.

    Each target is made from a rung of a half-decade ladder below the stock, at least
    :data:`LEAST_FOLD` stronger (:func:`_rung`; for a trough, strong enough that at most
    :data:`RUNG_DRAW_UL` is drawn); rungs are planned first, each just large enough for what
    is drawn from it. A target at a rung's concentration is that rung (the stock itself)
    unless it is to be in a trough. A target must be the stock's strength or at least
    :data:`LEAST_FOLD` weaker.
    """
    stock, c0 = assay.stock[key], assay.molar[key]
    for c, _ in targets:
        if not (c0 / c < 1.001 or c0 / c > LEAST_FOLD * 0.999):
            raise ValueError(f"dilute the {key} stock ({c0:g} M) at least {LEAST_FOLD}-fold")
    made = [assay.made_ul(volume, trough=trough) for _, volume in targets]
    rung_of, copied = [], []
    for (c, _), m in zip(targets, made, strict=True):
        steps = math.log(c0 / c) / math.log(RUNG_FOLD)
        on_rung = abs(steps - round(steps)) < 1e-3 and not (trough and round(steps) > 0)
        least = max(LEAST_FOLD, m / RUNG_DRAW_UL) if trough else LEAST_FOLD
        rung_of.append(round(steps) if on_rung else _rung(c0 / c, least))
        copied.append(not on_rung)
    depth = max(rung_of, default=0)
    rung_c = [c0 / RUNG_FOLD**k for k in range(depth + 1)]
    need = [0.0] * (depth + 1)  # µL drawn from each rung
    for (c, volume), k, m, copy in zip(targets, rung_of, made, copied, strict=True):
        need[k] += m * c / rung_c[k] if copy else volume
    for k in range(depth, 0, -1):
        need[k] = max(need[k], RUNG_UL)
        need[k - 1] += assay.made_ul(need[k]) / RUNG_FOLD
    rungs = [stock]
    for k in range(1, depth + 1):
        rungs.append(assay.dilute(rungs[-1], RUNG_FOLD, need[k]))
    return [
        assay.dilute(rungs[k], rung_c[k] / c, volume, trough=trough) if copy else rungs[k]
        for (c, volume), k, copy in zip(targets, rung_of, copied, strict=True)
    ]


def _rung(fold: float, least: float) -> int:
    """The ladder rung to make a ``fold``-fold dilution of the stock from: the most dilute
    one at least ``least``-fold stronger (the stock if none is)."""
    return max(0, math.floor(math.log(fold / least) / math.log(RUNG_FOLD) + 1e-9))


def strongest_molar(assay: Assay, key: str, part_ul: float) -> float:
    """The most of stock ``key`` (M) a 200 µL well holds from ``part_ul`` of a dilution of it
    (at least :data:`LEAST_FOLD`: every starter is a dilution in buffer)."""
    return assay.molar[key] / LEAST_FOLD * part_ul / WELL_UL


def unsaturated(od: np.ndarray, limit: float = 2.5) -> np.ndarray:
    """Readings above ``limit`` OD (noisy near the stray-light ceiling) as missing."""
    return np.where(od > limit, np.nan, od)


# -- pilot -------------------------------------------------------------------------------------
def pilot(assay: Assay) -> Estimate:
    """Rough Km and kcat from the half-decade substrate series at two enzyme levels (10×
    apart)."""
    c0, e0 = assay.molar["pnpp"], assay.molar["enzyme"]
    substrates = prepare(
        assay,
        "pnpp",
        [(c0 / RUNG_FOLD**k, 2 * PILOT_UL["substrate"]) for k in range(PILOT_LEVELS)],
    )
    (low,) = prepare(assay, "enzyme", [(e0 / PILOT_SPAN, PILOT_LEVELS * PILOT_UL["enzyme"])])
    wells: list[Well] = []
    enzymes = ((assay.stock["enzyme"], e0), (low, e0 / PILOT_SPAN))
    for (enzyme, e), places in zip(enzymes, assay.block(2, PILOT_LEVELS), strict=True):
        for k, (source, place) in enumerate(zip(substrates, places, strict=True)):
            parts = [
                (assay.stock["buffer"], PILOT_UL["buffer"]),
                (source, PILOT_UL["substrate"]),
                (enzyme, PILOT_UL["enzyme"]),
            ]
            s = c0 / RUNG_FOLD**k * PILOT_UL["substrate"] / WELL_UL
            wells.append(Well(place, parts, s=s, e=e * PILOT_UL["enzyme"] / WELL_UL))
    blank = Well(assay.wells(1)[0], [(assay.stock["buffer"], WELL_UL)])
    progress = assay.run(wells, read_s=PILOT_READ_S, extra=[blank])
    baseline = float(np.nanmean(progress.series[blank.well]))
    od_per_molar = nominal_od_per_molar()
    rates, scales = [], []
    for w in wells:
        od = unsaturated(progress.series[w.well])
        rate = rate_from_progress(progress.times, od, baseline, od_per_molar, w.s, min_points=4)
        if rate is not None and rate.v > 3.0 * rate.se and rate.s > 0.2 * w.s:
            rates.append(rate)
            scales.append(w.e)
    if len(rates) < 3:
        return Estimate(km=5e-4, kcat=100.0)
    km, kcat, _ = fit_michaelis_menten(*_arrays(rates), scale=np.array(scales))
    return Estimate(
        km=min(max(km, PILOT_KM_RANGE[0]), PILOT_KM_RANGE[1]),
        kcat=min(max(kcat, PILOT_KCAT_RANGE[0]), PILOT_KCAT_RANGE[1]),
    )


# -- design ------------------------------------------------------------------------------------
def design_enzyme(est: Estimate, s_low: float, s_top: float, e_max: float, lag_s: float) -> float:
    """The enzyme in the well (M): as much as the limits allow — the lowest level converts at
    most :data:`MAX_CONVERSION` by the end of the read (``lag_s`` after the first well
    started), the highest rises at most :data:`MAX_RISE_OD` — and at most ``e_max``."""
    total_s = READ_S + lag_s
    first_order = est.kcat / (est.km + s_low)  # per M of enzyme, per s
    by_conversion = MAX_CONVERSION / (first_order * total_s)
    rate_top = est.kcat * s_top / (est.km + s_top)
    by_rise = MAX_RISE_OD / (rate_top * nominal_od_per_molar() * total_s)
    return min(e_max, by_conversion, by_rise)


def _levels(assay: Assay, est: Estimate, multiples: tuple[float, ...]) -> list[float]:
    """Substrate levels at ``multiples`` of the rough Km (a geometric series), squeezed below
    the most a well holds (the pNPP stock as the 2× solution) when the top would exceed it,
    and raised to it when the top lies within :data:`LEAST_FOLD` of it."""
    top = assay.molar["pnpp"] * SUBSTRATE_UL / WELL_UL
    low, high = est.km * multiples[0], est.km * multiples[-1]
    if high > top / LEAST_FOLD:
        high = top
        low = min(low, high / (multiples[-1] / multiples[0]))
    return list(np.geomspace(low, high, len(multiples)))


def serial_dilution(assay: Assay, levels: list[float], rows: int) -> list[list[tuple[str, float]]]:
    """Plan ``rows`` serial dilutions of pNPP along plate rows, one well per level of the
    geometric ``levels`` (M in the well, ascending), each left holding 100 µL at 2×: the top
    well takes the 2× top level, each well passes its share to the next and the last one's
    goes to waste. Returns each row's (well, substrate in the well)."""
    ratio = levels[1] / levels[0]
    carry = SUBSTRATE_UL / (ratio - 1.0)
    grid = assay.block(rows, len(levels))
    (top,) = prepare(
        assay, "pnpp", [(2.0 * levels[-1], rows * (carry + SUBSTRATE_UL))], trough=True
    )
    buffer = assay.stock["buffer"]
    for row, waste in zip(grid, assay.wells(rows, "plate_2"), strict=True):
        for well in row[1:]:
            assay.plan(buffer, well, SUBSTRATE_UL)
        assay.plan(top, row[0], carry + SUBSTRATE_UL)
        for source, destination in zip(row, [*row[1:], waste], strict=True):
            assay.plan(source, destination, carry)
    return [list(zip(row, reversed(levels), strict=True)) for row in grid]


def _standards(assay: Assay) -> tuple[list[Well], list[float]]:
    """p-nitrophenol standards (:data:`STANDARDS_UL` of the 200 µM stock in 200 µL)."""
    parts = STANDARDS_UL
    places = assay.wells(len(parts))
    buffer, pnp = assay.stock["buffer"], assay.stock["pnp"]
    wells = [Well(p, [(buffer, WELL_UL - v), (pnp, v)]) for p, v in zip(places, parts, strict=True)]
    return wells, [assay.molar["pnp"] * v / WELL_UL for v in parts]


def _calibration(series: dict[str, np.ndarray], wells: list[Well], molar: list[float]) -> float:
    """OD per M of p-nitrophenol from the standards' mean readings."""
    od = np.array([np.nanmean(series[w.well]) for w in wells])
    slope, _ = np.polyfit(np.array(molar), od, 1)
    return float(slope)


def _measure(assay: Assay, wells: list[Well], *, calibrate: bool) -> tuple[list[Rate], list[Well]]:
    """Run the reaction wells; each well's rate (M/s) and the wells that gave one. With
    ``calibrate``, p-nitrophenol standards give the OD per M and each well's baseline is read
    before its enzyme goes in; otherwise the nominal OD per M and each well's first reading
    serve."""
    standards, molar = _standards(assay) if calibrate else ([], [])
    progress = assay.run(wells, read_s=READ_S, extra=standards, preread=calibrate)
    series = progress.series
    baselines = progress.baselines or {w.well: float(series[w.well][0]) for w in wells}
    od_per_molar = _calibration(series, standards, molar) if calibrate else nominal_od_per_molar()
    rates, used = [], []
    for w in wells:
        rate = rate_from_progress(
            progress.times, unsaturated(series[w.well]), baselines[w.well], od_per_molar, w.s
        )
        if rate is not None and rate.s > 0.0:
            rates.append(rate)
            used.append(w)
    return rates, used


# -- the protocols -----------------------------------------------------------------------------
def kinetics_expert(assay: Assay) -> Estimate:
    """Pilot, design, measure, fit: Km (M) and kcat (s⁻¹)."""
    est = pilot(assay)
    levels = _levels(assay, est, DESIGN_S)
    e_max = strongest_molar(assay, "enzyme", STARTER_UL)
    e_well = design_enzyme(est, levels[0], levels[-1], e_max, LAG_S)
    rows = serial_dilution(assay, levels, DESIGN_ROWS)
    count = sum(len(row) for row in rows)
    targets = [(e_well * WELL_UL / STARTER_UL, count * STARTER_UL)]
    (enzyme,) = prepare(assay, "enzyme", targets, trough=True)
    wells = [Well(w, [(enzyme, STARTER_UL)], s=s, e=e_well) for row in rows for w, s in row]
    rates, used = _measure(assay, wells, calibrate=True)
    km, kcat, _ = fit_michaelis_menten(*_arrays(rates), scale=np.array([w.e for w in used]))
    return Estimate(km=km, kcat=kcat)


def ic50_scan(assay: Assay, est: Estimate) -> float:
    """The inhibitor concentration (M) halving the rate at S ≈ Km (:data:`IC50_LEVELS`)."""
    volume = IC50_UL
    s = min(est.km, strongest_molar(assay, "pnpp", volume["substrate"]))
    ladder = [assay.molar["inhibitor"] / RUNG_FOLD**k for k in range(IC50_LEVELS)]
    levels = [0.0] + [c * volume["inhibitor"] / WELL_UL for c in ladder]
    n = len(levels)
    e_well = design_enzyme(est, s, s, strongest_molar(assay, "enzyme", volume["enzyme"]), LAG_S)
    fold = {k: WELL_UL / volume[k] for k in ("substrate", "enzyme")}
    (substrate,) = prepare(assay, "pnpp", [(s * fold["substrate"], n * volume["substrate"])])
    (enzyme,) = prepare(assay, "enzyme", [(e_well * fold["enzyme"], n * volume["enzyme"])])
    buffer = assay.stock["buffer"]
    made = prepare(assay, "inhibitor", [(c, volume["inhibitor"]) for c in ladder])
    firsts = [[(buffer, volume["buffer"] + volume["inhibitor"])]] + [
        [(buffer, volume["buffer"]), (m, volume["inhibitor"])] for m in made
    ]
    tail = [(substrate, volume["substrate"]), (enzyme, volume["enzyme"])]
    wells = [
        Well(place, first + tail, s=s, i=i, e=e_well)
        for place, first, i in zip(assay.wells(n), firsts, levels, strict=True)
    ]
    rates, used = _measure(assay, wells, calibrate=False)
    _, v, se = _arrays(rates)
    inhibitor = np.array([w.i for w in used])
    w = weights(v, se)
    grid = np.geomspace(1e-6, 1.0, 241)[:, None]
    x = 1.0 / (1.0 + inhibitor / grid)  # (grid, wells)
    v0 = (w * v * x).sum(axis=1) / (w * x * x).sum(axis=1)
    rss = (w * (v - v0[:, None] * x) ** 2).sum(axis=1)
    return float(grid[int(np.argmin(rss)), 0])


def _starters(assay: Assay, e_well: float, inhibitors: list[float], wells_each: int) -> list[str]:
    """Troughs of the enzyme at twice ``e_well`` (M) with each inhibitor level at twice its
    level (M), ``wells_each`` wells' worth each, all from one enzyme solution at 4× so that
    they hold the same enzyme."""
    volume = assay.made_ul(wells_each * STARTER_UL, trough=True)
    targets = [(4.0 * e_well, len(inhibitors) * volume / 2.0)]
    (enzyme,) = prepare(assay, "enzyme", targets, trough=True)
    part = volume * 2.0 / INHIBITOR_FOLD
    active = [INHIBITOR_FOLD * i for i in inhibitors if i > 0]
    made = iter(prepare(assay, "inhibitor", [(c, part) for c in active]))
    troughs = []
    for i in inhibitors:
        parts = [(enzyme, volume / 2.0)] + ([(next(made), part)] if i > 0 else [])
        troughs.append(assay.mix(parts, volume, trough=True))
    return troughs


def inhibition_expert(assay: Assay) -> tuple[Estimate, dict[str, float]]:
    """Pilot, IC50 scan, the substrate series at three inhibitor levels, three model fits:
    the estimate (from the best model) and the mechanisms' probabilities."""
    est = pilot(assay)
    ic50 = ic50_scan(assay, est)
    top = strongest_molar(assay, "inhibitor", WELL_UL / INHIBITOR_FOLD)
    inhibitors = [0.0, min(ic50, top / 4.0), min(4.0 * ic50, top)]
    levels = _levels(assay, est, INHIBITION_S)
    e_max = strongest_molar(
        assay, "enzyme", STARTER_UL / 2.0
    )  # the 4× solution at half the starter
    e_well = design_enzyme(est, levels[0], levels[-1], e_max, LAG_S)
    rows = serial_dilution(assay, levels, len(inhibitors))
    starters = _starters(assay, e_well, inhibitors, len(levels))
    wells = [
        Well(w, [(starter, STARTER_UL)], s=s, i=i, e=e_well)
        for row, starter, i in zip(rows, starters, inhibitors, strict=True)
        for w, s in row
    ]
    rates, used = _measure(assay, wells, calibrate=True)
    s, v, se = _arrays(rates)
    e = np.array([w.e for w in used])
    i = np.array([w.i for w in used])
    fits, kept = fit_inhibition_robust(s, i, v / e, se / e)
    probabilities = mechanism_probabilities(fits, int(kept.sum()))
    best = min(fits, key=lambda f: f.rss)
    return Estimate(km=best.km, kcat=best.vmax, ki=best.ki), probabilities


# -- helpers -----------------------------------------------------------------------------------
def _arrays(rates: list[Rate]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.array([r.s for r in rates]),
        np.array([r.v for r in rates]),
        np.array([r.se for r in rates]),
    )
