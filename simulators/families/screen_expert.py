"""The ``screen`` family's scripted protocols: the expert, the naive screen and the screen
without its controls. Each returns P(inhibits) and a Ki (M) per compound, in order.

The expert (:func:`expert`) runs the inhibition expert's pilot (rough Km and kcat,
:func:`~..tasks.kinetics_expert.pilot`), then one plate read at 405 nm holding a blank, each
compound without enzyme at the screening share, reactions without any compound at two pNPP
levels (half the rough Km and five times it, in duplicate) and each compound's reaction at both
levels. A compound whose own well reads above the blank is coloured: in this world, a decoy.
For the others, the rates' ratios at the two levels, with Km from the references' two rates,
give 1/Kic and 1/Kiu (v₀/vᵢ − 1 = I·((1 − f)/Kic + f/Kiu), f = S/(Km + S)); Ki is the stronger
of the two (a competitive inhibitor's Kiu and an uncompetitive one's Kic are infinite).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.session import Session
from labtools.simulators.families.screen_parts import SCREEN_UL
from labtools.simulators.tasks.compound_screen import COLOURED_OD, SURE
from labtools.simulators.tasks.kinetics_expert import (
    LAG_S,
    LEAST_FOLD,
    READ_S,
    Estimate,
    design_enzyme,
    pilot,
    prepare,
    strongest_molar,
    unsaturated,
)
from labtools.simulators.tasks.kinetics_fit import rate_from_progress
from labtools.simulators.tasks.kinetics_protocol import WELL_UL, Assay, Well, nominal_od_per_molar
from labtools.simulators.world.kinetics import KineticsData

__all__ = ["expert", "naive", "uncontrolled"]

#: a reaction well (µL): the 2× pNPP solution, the enzyme starter (last), buffer to 200
SUBSTRATE_UL, STARTER_UL = 100.0, 20.0
#: the two pNPP levels as multiples of the rough Km [A: below Km the rate tells Kic, well above
#: it Kiu]
LOW_KM, HIGH_KM = 0.5, 5.0
#: reference reactions (no compound) at each level
REFERENCE_ROWS = 2
#: a pNPP solution serves at most this many wells, so that it fits a plate_2 well (340 µL)
PER_VESSEL = 3
#: the naive and uncontrolled verdicts: P(inhibits) when the rate falls (or not) by this share
NAIVE_SURE, NAIVE_DROP = 0.9, 0.1


def _bench(session: Session, compounds: Sequence[str]) -> Assay:
    """An :class:`Assay` that also knows the compounds (keys ``c0`` …) by their labels."""
    assay = Assay(session)
    labels = assay.call("lh_get_deck")["labels"]
    for j, container in enumerate(compounds):
        assay.stock[f"c{j}"] = container
        assay.molar[f"c{j}"] = label_micromolar(labels[container]) * 1e-6
    return assay


def _levels(assay: Assay, est: Estimate) -> tuple[float, float]:
    """The two pNPP levels' 2× solutions (M): five times the rough Km (the stock when that is
    near or above it) and half of it (at most a quarter of the top)."""
    c0 = assay.molar["pnpp"]
    high = min(c0, 2.0 * HIGH_KM * est.km)
    if c0 / high < LEAST_FOLD:
        high = c0
    low = min(2.0 * LOW_KM * est.km, high / 4.0)
    return high, low


def _screen(
    assay: Assay, n: int, est: Estimate, *, controls: bool, references: int
) -> tuple[list[float], list[float | None], dict[str, float]]:
    """One plate: reactions at the two levels (``references`` without compound, one with each
    compound), with a blank and each compound alone if ``controls``; the levels in the well
    (M), each compound's four rates (M/s: reference high, reference low, test high, test low)
    and each compound alone's OD above the blank (NaN: over range; empty without controls)."""
    buffer = assay.stock["buffer"]
    high, low = _levels(assay, est)
    wells_each = references + n
    chunks = [min(PER_VESSEL, wells_each - k) for k in range(0, wells_each, PER_VESSEL)]
    made = prepare(assay, "pnpp", [(c, m * SUBSTRATE_UL) for c in (high, low) for m in chunks])
    solutions = [
        [
            v
            for v, m in zip(made[i * len(chunks) : (i + 1) * len(chunks)], chunks, strict=True)
            for _ in range(m)
        ]
        for i in (0, 1)
    ]
    levels = [c * SUBSTRATE_UL / WELL_UL for c in (high, low)]
    e_max = strongest_molar(assay, "enzyme", STARTER_UL)
    e_well = design_enzyme(est, levels[1], levels[0], e_max, LAG_S)
    (starter,) = prepare(
        assay, "enzyme", [(e_well * WELL_UL / STARTER_UL, 2 * wells_each * STARTER_UL)]
    )
    reactions: list[Well] = []
    for sources, s in zip(solutions, levels, strict=True):
        for k in range(references):
            parts = [(buffer, WELL_UL - SUBSTRATE_UL - STARTER_UL), (sources[k], SUBSTRATE_UL)]
            reactions.append(Well(assay.wells(1)[0], [*parts, (starter, STARTER_UL)], s=s))
        for j in range(n):
            parts = [
                (buffer, WELL_UL - SUBSTRATE_UL - STARTER_UL - SCREEN_UL),
                (assay.stock[f"c{j}"], SCREEN_UL),
                (sources[references + j], SUBSTRATE_UL),
            ]
            reactions.append(Well(assay.wells(1)[0], [*parts, (starter, STARTER_UL)], s=s))
    extra: list[Well] = []
    if controls:
        extra.append(Well(assay.wells(1)[0], [(buffer, WELL_UL)]))
        extra += [
            Well(
                assay.wells(1)[0],
                [(buffer, WELL_UL - SCREEN_UL), (assay.stock[f"c{j}"], SCREEN_UL)],
            )
            for j in range(n)
        ]
    progress = assay.run(reactions, read_s=READ_S, extra=extra)
    baseline = float(np.nanmean(progress.series[extra[0].well])) if controls else 0.0
    if not math.isfinite(baseline):
        baseline = 0.0
    rates: list[float | None] = []
    for w in reactions:
        od = unsaturated(progress.series[w.well])
        rate = rate_from_progress(
            progress.times, od, baseline, nominal_od_per_molar(), w.s, min_points=4
        )
        rates.append(None if rate is None else rate.v)
    alone = [
        float(np.nanmean(progress.series[w.well])) - baseline
        if np.isfinite(progress.series[w.well]).any()
        else math.nan
        for w in extra[1:]
    ]
    return levels, rates, {f"c{j}": a for j, a in enumerate(alone)}


def _ki(
    levels: list[float], rates: list[float | None], n: int, references: int, i_well: float
) -> list[float]:
    """Each compound's Ki (M) from the rates (:func:`_screen`'s order); NaN where none."""
    per = references + n
    ref = []
    for block in (0, 1):
        got = [r for r in rates[block * per : block * per + references] if r is not None and r > 0]
        ref.append(float(np.mean(got)) if got else math.nan)
    s_high, s_low = levels
    q = ref[1] / ref[0]
    km = s_low * s_high * (1.0 - q) / (q * s_high - s_low)
    if not (math.isfinite(km) and km > 0.0):
        km = math.sqrt(s_low * s_high)
    f = [s / (km + s) for s in (s_high, s_low)]
    out = []
    for j in range(n):
        tests = [rates[block * per + references + j] for block in (0, 1)]
        r = [
            ref[k] / t - 1.0 if t is not None and t > 0 and math.isfinite(ref[k]) else math.nan
            for k, t in enumerate(tests)
        ]
        if not all(math.isfinite(x) for x in r):
            out.append(math.nan)
            continue
        matrix = np.array([[1.0 - f[0], f[0]], [1.0 - f[1], f[1]]])
        try:
            a, b = np.linalg.solve(matrix, np.array(r) / i_well)
        except np.linalg.LinAlgError:
            a = b = max(r) / i_well
        strongest = max(a, b)
        out.append(1.0 / strongest if strongest > 0 else 100.0 * i_well)
    return out


def expert(session: Session, compounds: Sequence[str]) -> tuple[list[float], list[float]]:
    """The pilot, then the controlled screen (module docstring)."""
    assay = _bench(session, compounds)
    est = pilot(assay)
    n = len(compounds)
    levels, rates, alone = _screen(assay, n, est, controls=True, references=REFERENCE_ROWS)
    i_well = assay.molar["c0"] * SCREEN_UL / WELL_UL
    kis = _ki(levels, rates, n, REFERENCE_ROWS, i_well)
    p = []
    for j in range(n):
        excess = alone[f"c{j}"]
        coloured = not (math.isfinite(excess) and excess < COLOURED_OD)
        p.append(1.0 - SURE if coloured else SURE)
    return p, [k if math.isfinite(k) else i_well for k in kis]


def uncontrolled(session: Session, compounds: Sequence[str]) -> tuple[list[float], list[float]]:
    """The screen's reactions once each, designed from the package's Km and kcat (the spans'
    centres): no pilot, blank, compound-only well or replicate; a compound inhibits if either
    level's rate falls by :data:`NAIVE_DROP`."""
    assay = _bench(session, compounds)
    enzyme = KineticsData.default().enzymes["alkaline_phosphatase"]
    est = Estimate(
        km=math.sqrt(enzyme.km_mm[0] * enzyme.km_mm[1]) * 1e-3,
        kcat=math.sqrt(enzyme.kcat_per_s[0] * enzyme.kcat_per_s[1]),
    )
    n = len(compounds)
    levels, rates, _ = _screen(assay, n, est, controls=False, references=1)
    i_well = assay.molar["c0"] * SCREEN_UL / WELL_UL
    kis = _ki(levels, rates, n, 1, i_well)
    p = []
    for j in range(n):
        pairs = [(rates[b * (1 + n)], rates[b * (1 + n) + 1 + j]) for b in (0, 1)]
        drops = [1.0 - t / r for r, t in pairs if r and t is not None and r > 0]
        p.append(NAIVE_SURE if drops and max(drops) > NAIVE_DROP else 1.0 - NAIVE_SURE)
    return p, [k if math.isfinite(k) else i_well for k in kis]


def naive(session: Session, compounds: Sequence[str]) -> tuple[list[float], list[float]]:
    """Raw OD slopes at 405 nm over 10 minutes of one reaction without compound and one with
    each (the pNPP stock as half the well, the enzyme stock undiluted): inhibits if the slope
    falls below 0.9 of the reference's, Ki from the ratio as if noncompetitive."""
    assay = _bench(session, compounds)
    stock, buffer = assay.stock, assay.stock["buffer"]
    n = len(compounds)
    third = [(buffer, SCREEN_UL)] + [(stock[f"c{j}"], SCREEN_UL) for j in range(n)]
    wells = [
        Well(
            place,
            [(buffer, 40.0), (stock["pnpp"], SUBSTRATE_UL), part, (stock["enzyme"], STARTER_UL)],
        )
        for place, part in zip(assay.wells(n + 1), third, strict=True)
    ]
    progress = assay.run(wells, read_s=READ_S)
    slopes = [_raw_slope(progress.times, progress.series[w.well]) for w in wells]
    i_well = assay.molar["c0"] * SCREEN_UL / WELL_UL
    p, kis = [], []
    for slope in slopes[1:]:
        ratio = slope / slopes[0] if slopes[0] > 0.0 else 1.0
        p.append(NAIVE_SURE if ratio < 1.0 - NAIVE_DROP else 1.0 - NAIVE_SURE)
        kis.append(i_well * ratio / (1.0 - ratio) if 0.0 < ratio < 1.0 else i_well)
    return p, kis


def _raw_slope(times: np.ndarray, od: np.ndarray) -> float:
    """OD/s of a straight line through a well's finite readings (raw: no blank, no standard)."""
    finite = np.isfinite(od)
    if finite.sum() < 2:
        return 0.0
    return float(np.polyfit(times[finite], od[finite], 1)[0])
