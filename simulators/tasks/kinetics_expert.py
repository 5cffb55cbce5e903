"""The expert enzyme-kinetics protocols: a coarse pilot, then a design around what it found.

1. **Pilot**: seven pNPP levels (25 µM–25 mM, half a decade apart) at two enzyme levels 10×
   apart, read for 5 min; rates from the early progress curves (nominal path length) and a
   joint Michaelis–Menten fit give rough Km and kcat.
2. **Design**: substrate at 0.2–5 × the rough Km; the enzyme diluted so that the lowest level
   converts at most a fifth of its substrate by the end of the read and the highest rises by at
   most 1.5 OD; p-nitrophenol standards in the same plate (OD per M at the same volume); each
   reaction well's optical baseline read before the enzyme goes in.
3. **Fit**: each well's rate at the middle of its early progress curve, paired with the
   substrate left then (:func:`~labtools.simulators.tasks.kinetics_fit.rate_from_progress`), then a
   weighted nonlinear least-squares Michaelis–Menten fit (or the three inhibition models).

The inhibition variant adds an IC50 scan at S ≈ Km between pilot and design, and reads the
substrate series at no inhibitor, ≈ IC50 and ≈ 4 × IC50.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labtools.simulators.tasks.kinetics_fit import (
    MECHANISMS,
    Rate,
    fit_inhibition,
    fit_michaelis_menten,
    mechanism_probabilities,
    rate_from_progress,
    weights,
)
from labtools.simulators.tasks.kinetics_protocol import WELL_UL, Assay, Well, nominal_od_per_molar

__all__ = ["Estimate", "design_enzyme", "inhibition_expert", "kinetics_expert", "pilot"]

#: pilot substrate levels in the well (M)
PILOT_S = (25e-3, 8e-3, 2.5e-3, 8e-4, 2.5e-4, 8e-5, 2.5e-5)
#: the pilot's two enzyme levels differ by this factor: with kcat spanning 100×, one of them
#: gives 0.01–1 OD/min at saturation
PILOT_SPAN = 10.0
#: µL of the pilot's two substrate dilutions (5 and 0.5 mM) drawn per enzyme level
PILOT_DRAW_UL = 100.0 + 32.0 + 10.0
#: the pilot's rough constants are kept where a design can use them (M, s⁻¹)
PILOT_KM_RANGE = (2e-5, 2e-2)
PILOT_KCAT_RANGE = (1.0, 1e4)
#: IC50 scan inhibitor levels (M); the highest is the 50 mM stock as the 10× solution
IC50_I = (0.0, 5e-5, 2e-4, 8e-4, 3.2e-3)
#: refined substrate levels as multiples of the rough Km
DESIGN_S = (0.2, 0.35, 0.6, 1.0, 1.7, 3.0, 5.0)
INHIBITION_S = (0.2, 0.4, 0.8, 1.6, 3.2, 6.0)
#: highest substrate level a well can hold: the 50 mM stock at half the well
MAX_S = 25e-3
#: the design's limits: fraction of the lowest level converted by the end of the read, and the
#: OD rise of the highest level
MAX_CONVERSION = 0.2
MAX_RISE_OD = 1.5
#: reaction-well recipe (µL): buffer, substrate at 2× final, water or inhibitor at 10× final,
#: enzyme at 5× final
BUFFER_UL, SUBSTRATE_UL, SMALL_UL, ENZYME_UL = 40.0, 100.0, 20.0, 40.0
READ_S = 600.0
#: seconds between the first enzyme addition and the first read, per well started, and fixed
LAG_PER_WELL_S, LAG_S = 6.0, 30.0
_ORDER = ["buffer", "water"]
#: a ladder rung holds at least this much to draw (made to 340 µL in a plate well): its 10×
#: dilution then takes ≥ 34 µL of the rung above, where a 200 µL-class channel's bias
#: (±0.5 µL, 1 sd) is 1.5 %
RUNG_UL = 315.0


@dataclass(frozen=True)
class Estimate:
    """Kinetic constants: Km (M) and kcat (s⁻¹); ``ki`` (M) for the inhibitor, if any."""

    km: float
    kcat: float
    ki: float = math.nan


# -- solutions ---------------------------------------------------------------------------------
def prepare(assay: Assay, key: str, diluent: str, targets: list[tuple[float, float]]) -> list[str]:
    """Containers of stock ``key`` diluted in ``diluent`` from which ``targets`` (molar, µL
    to draw) can be drawn.

    Each target is made from a rung of a 10-fold ladder below the stock (:func:`_rung`: its
    draw is 8 % to all of its volume); rungs are made first, each just large enough for what
    is drawn from it. A target at a rung's concentration is that rung (the stock itself).
    """
    stock, c0 = assay.stock[key], assay.molar[key]
    if any(c > c0 * 1.001 for c, _ in targets):
        raise ValueError(f"cannot make more than the {key} stock's {c0:g} M by dilution")
    rung_of = [_rung(c0 / c) for c, _ in targets]
    depth = max(rung_of, default=0)
    need = [0.0] * (depth + 1)  # µL drawn from each rung
    for (c, volume), k in zip(targets, rung_of, strict=True):
        need[k] += assay.made_ul(volume) * c / (c0 / 10**k) if c < c0 / 10**k * 0.999 else volume
    for k in range(depth, 0, -1):
        need[k] = max(need[k], RUNG_UL)
        need[k - 1] += assay.made_ul(need[k]) / 10.0
    rungs = [stock]
    for k in range(1, depth + 1):
        rungs.append(assay.dilute(rungs[-1], 10.0, need[k], diluent))
    out = []
    for (c, volume), k in zip(targets, rung_of, strict=True):
        factor = (c0 / 10**k) / c
        out.append(rungs[k] if factor < 1.001 else assay.dilute(rungs[k], factor, volume, diluent))
    return out


def _rung(fold: float) -> int:
    """The ladder rung (10-fold steps) to dilute a ``fold``-fold dilution from: the most dilute
    one still concentrated enough, unless that leaves a dilution of under 1.25-fold, whose
    small diluent volume would be imprecise (then the rung above: 10–12.5-fold)."""
    k = max(0, math.floor(math.log10(fold) + 1e-9))
    if k > 0 and 1.001 < fold / 10**k < 1.25:
        k -= 1
    return k


def _unsaturated(od: np.ndarray, limit: float = 2.5) -> np.ndarray:
    """Readings above ``limit`` OD (noisy near the stray-light ceiling) as missing."""
    return np.where(od > limit, np.nan, od)


# -- pilot -------------------------------------------------------------------------------------
def pilot(assay: Assay) -> Estimate:
    """Rough Km and kcat from seven substrate levels at two enzyme levels (10× apart)."""
    e_stock = assay.molar["enzyme"]
    small = 20.0
    enzymes = {"hi": (assay.stock["enzyme"], e_stock * small / WELL_UL)}
    (low,) = prepare(assay, "enzyme", "buffer", [(e_stock / PILOT_SPAN, 7 * small)])
    enzymes["lo"] = (low, e_stock / PILOT_SPAN * small / WELL_UL)
    rungs = prepare(
        assay, "pnpp", "water", [(assay.molar["pnpp"] / 10**k, 2 * PILOT_DRAW_UL) for k in (1, 2)]
    )
    sources = [(assay.stock["pnpp"], assay.molar["pnpp"])] + [
        (r, assay.molar["pnpp"] / 10 ** (k + 1)) for k, r in enumerate(rungs)
    ]
    wells: list[Well] = []
    for source, e in enzymes.values():
        for s, place in zip(PILOT_S, assay.wells(len(PILOT_S)), strict=True):
            # the most dilute source that needs at most 100 µL
            src, c = next((x, c) for x, c in reversed(sources) if WELL_UL * s / c <= 100.0001)
            part = WELL_UL * s / c
            parts = [("buffer", BUFFER_UL), (src, part), ("water", 140.0 - part), (source, small)]
            wells.append(Well(place, _named(assay, parts), s=s, e=e))
    (blank,) = assay.wells(1)
    assay.fill([Well(blank, _named(assay, [("buffer", BUFFER_UL), ("water", 160.0)]))], [])
    times, series, _ = assay.run(
        wells,
        [source for source, _ in enzymes.values()],
        order=_stock_order(assay),
        interval_s=15.0,
        reads=21,
        extra=[blank],
    )
    baseline = float(np.nanmean(series[blank]))
    od_per_molar = nominal_od_per_molar()
    rates, scales = [], []
    for w in wells:
        rate = rate_from_progress(
            times, _unsaturated(series[w.well]), baseline, od_per_molar, w.s, min_points=4
        )
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


def _levels(est: Estimate, multiples: tuple[float, ...]) -> list[float]:
    """Substrate levels at ``multiples`` of the rough Km, squeezed geometrically below
    :data:`MAX_S` when the top would exceed it."""
    low, high = est.km * multiples[0], est.km * multiples[-1]
    if high > MAX_S:
        high = MAX_S
        low = min(low, high / (multiples[-1] / multiples[0]))
    return list(np.geomspace(low, high, len(multiples)))


def _standards(assay: Assay) -> tuple[list[Well], list[float]]:
    """Four p-nitrophenol standards (0, 0, 50 and 100 µM nominal from the 200 µM stock)."""
    parts = [0.0, 0.0, 50.0, 100.0]
    places = assay.wells(len(parts))
    wells = [
        Well(p, _named(assay, [("buffer", BUFFER_UL), ("pnp", v), ("water", 160.0 - v)]))
        for p, v in zip(places, parts, strict=True)
    ]
    return wells, [assay.molar["pnp"] * v / WELL_UL for v in parts]


def _calibration(series: dict[str, np.ndarray], wells: list[Well], molar: list[float]) -> float:
    """OD per M of p-nitrophenol from the standards' mean readings."""
    od = np.array([np.nanmean(series[w.well]) for w in wells])
    slope, _ = np.polyfit(np.array(molar), od, 1)
    return float(slope)


def _reaction_wells(
    assay: Assay, levels: list[float], inhibitors: list[float], e_well: float, repeats: int
) -> list[Well]:
    """Wells for every (substrate, inhibitor) pair, ``repeats`` of each; solutions made here."""
    uses = repeats * len(inhibitors)
    substrates = prepare(assay, "pnpp", "water", [(2.0 * s, uses * SUBSTRATE_UL) for s in levels])
    work = e_well * WELL_UL / ENZYME_UL
    n = len(levels) * uses
    if work >= assay.molar["enzyme"] * 0.999:
        enzyme = assay.stock["enzyme"]
        e_well = assay.molar["enzyme"] * ENZYME_UL / WELL_UL
    else:
        (enzyme,) = prepare(assay, "enzyme", "buffer", [(work, n * ENZYME_UL)])
    active = [i for i in inhibitors if i > 0]
    made = iter(
        prepare(
            assay,
            "inhibitor",
            "water",
            [(10.0 * i, len(levels) * repeats * SMALL_UL) for i in active],
        )
        if active
        else ()
    )
    small = [next(made) if i > 0 else "water" for i in inhibitors]
    wells = []
    places = iter(assay.wells(n))
    for _ in range(repeats):
        for s, sub in zip(levels, substrates, strict=True):
            for i, inh in zip(inhibitors, small, strict=True):
                parts = [(sub, SUBSTRATE_UL), (enzyme, ENZYME_UL)]
                if active:  # the inhibitor's part, or water in its place
                    parts[:0] = [("buffer", BUFFER_UL), (inh, SMALL_UL)]
                else:
                    parts[:0] = [("buffer", BUFFER_UL + SMALL_UL)]
                wells.append(Well(next(places), _named(assay, parts), s=s, i=i, e=e_well))
    return wells


def _measure(
    assay: Assay, wells: list[Well], *, calibrate: bool, last: bool
) -> tuple[list[Rate], list[Well]]:
    """Run the reaction wells; each well's rate (M/s) and the wells that gave one. With
    ``calibrate``, p-nitrophenol standards give the OD per M and each well's baseline is read
    before its enzyme goes in; otherwise the nominal OD per M and each well's first reading
    serve. The plate stays in the reader after the ``last`` read."""
    standards, molar = _standards(assay) if calibrate else ([], [])
    assay.fill(standards, _stock_order(assay))
    count = len(wells) + len(standards)
    reads = min(600 // count, 41)
    times, series, baselines = assay.run(
        wells,
        [wells[0].parts[-1][0]],
        order=_stock_order(assay),
        interval_s=READ_S / (reads - 1),
        reads=reads,
        extra=[w.well for w in standards],
        preread=calibrate,
        last=last,
    )
    if not calibrate:
        baselines = {w.well: float(series[w.well][0]) for w in wells}
    od_per_molar = _calibration(series, standards, molar) if calibrate else nominal_od_per_molar()
    rates, used = [], []
    for w in wells:
        rate = rate_from_progress(
            times, _unsaturated(series[w.well]), baselines[w.well], od_per_molar, w.s
        )
        if rate is not None and rate.s > 0.0:
            rates.append(rate)
            used.append(w)
    return rates, used


def _lag(wells: int) -> float:
    return LAG_S + LAG_PER_WELL_S * wells


# -- the protocols -----------------------------------------------------------------------------
def kinetics_expert(assay: Assay) -> Estimate:
    """Pilot, design, measure, fit: Km (M) and kcat (s⁻¹)."""
    est = pilot(assay)
    levels = _levels(est, DESIGN_S)
    e_max = assay.molar["enzyme"] * ENZYME_UL / WELL_UL
    e_well = design_enzyme(est, levels[0], levels[-1], e_max, _lag(2 * len(levels)))
    wells = _reaction_wells(assay, levels, [0.0], e_well, repeats=2)
    rates, used = _measure(assay, wells, calibrate=True, last=True)
    km, kcat, _ = fit_michaelis_menten(*_arrays(rates), scale=np.array([w.e for w in used]))
    return Estimate(km=km, kcat=kcat)


def ic50_scan(assay: Assay, est: Estimate) -> float:
    """The inhibitor concentration (M) halving the rate at S ≈ Km (:data:`IC50_I`)."""
    s = min(est.km, MAX_S)
    levels = list(IC50_I)
    e_max = assay.molar["enzyme"] * ENZYME_UL / WELL_UL
    e_well = design_enzyme(est, s, s, e_max, _lag(len(levels)))
    wells = _reaction_wells(assay, [s], levels, e_well, repeats=1)
    rates, used = _measure(assay, wells, calibrate=False, last=False)
    _, v, se = _arrays(rates)
    inhibitor = np.array([w.i for w in used])
    w = weights(v, se)
    grid = np.geomspace(1e-6, 1.0, 241)[:, None]
    x = 1.0 / (1.0 + inhibitor / grid)  # (grid, wells)
    v0 = (w * v * x).sum(axis=1) / (w * x * x).sum(axis=1)
    rss = (w * (v - v0[:, None] * x) ** 2).sum(axis=1)
    return float(grid[int(np.argmin(rss)), 0])


def inhibition_expert(assay: Assay) -> tuple[Estimate, dict[str, float]]:
    """Pilot, IC50 scan, the substrate series at three inhibitor levels, three model fits:
    the estimate (from the best model) and the mechanisms' probabilities."""
    est = pilot(assay)
    ic50 = ic50_scan(assay, est)
    top = assay.molar["inhibitor"] * SMALL_UL / WELL_UL  # the stock as the 10× solution
    inhibitors = [0.0, min(ic50, top / 4.0), min(4.0 * ic50, top)]
    levels = _levels(est, INHIBITION_S)
    e_max = assay.molar["enzyme"] * ENZYME_UL / WELL_UL
    e_well = design_enzyme(est, levels[0], levels[-1], e_max, _lag(3 * len(levels)))
    wells = _reaction_wells(assay, levels, inhibitors, e_well, repeats=1)
    rates, used = _measure(assay, wells, calibrate=True, last=True)
    s, v, se = _arrays(rates)
    e = np.array([w.e for w in used])
    i = np.array([w.i for w in used])
    fits = [fit_inhibition(s, i, v / e, se / e, m) for m in MECHANISMS]
    probabilities = mechanism_probabilities(fits, len(rates))
    best = min(fits, key=lambda f: f.rss)
    return Estimate(km=best.km, kcat=best.vmax, ki=best.ki), probabilities


# -- helpers -----------------------------------------------------------------------------------
def _arrays(rates: list[Rate]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.array([r.s for r in rates]),
        np.array([r.v for r in rates]),
        np.array([r.se for r in rates]),
    )


def _named(assay: Assay, parts: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Parts with stock keys (``"buffer"``) replaced by their containers."""
    return [(assay.stock.get(src, src), v) for src, v in parts]


def _stock_order(assay: Assay) -> list[str]:
    return [assay.stock[k] for k in _ORDER]
