"""The ``ic50`` family's protocols on a plate: the expert's dose-response series with its
controls and four-parameter logistic fit; the one-point experiment without controls.

The expert (:func:`dose_response`):

1. **Design** from the labels, the stated substrate level and the published constants only:
   :func:`doses` inhibitor levels spaced geometrically over the IC50s the package allows
   (:func:`~.ic50_parts.ic50_span`, widened by :data:`MARGIN` each way, the top at most what
   :data:`~.inhibition_parts.INHIBITOR_MAX_UL` of the stock gives), each in duplicate; the
   inhibitor pipetted from its stock or from 1-in-10 dilutions of it (:data:`DILUTION_FOLD`)
   so that no volume falls below :data:`LEAST_UL`; the enzyme such that, at the published
   constants, the uninhibited well converts at most :data:`MAX_CONVERSION` of the substrate and
   rises at most :data:`~.kinetics_expert.MAX_RISE_OD` over the read (diluted as the
   ``inhibition`` expert's).
2. **Controls**: a buffer blank; two wells without inhibitor (0 % inhibition, the top of the
   curve); two wells of the substrate without enzyme (100 % inhibition, the bottom: the
   substrate's own hydrolysis, which every well carries and a normalised response must lose).
3. **Reads**: the enzyme into every reaction well (one tip), :data:`SEGMENTS` kinetic reads
   back to back over :data:`READ_S`; water's band in every well (defect wells out, their duplicate
   kept).
4. **Rates**: each well's initial slope (OD/s), the slope at the first read of a quadratic fit
   over the reads before the product reaches :data:`WINDOW_CONVERSION` of the substrate
   (:func:`initial_slope`; the uninhibited wells, which deplete the most, curve the most: a
   slope at the read's middle would flatter their inhibited neighbours), less the 100 %
   controls' slope where it stands out from their noise. No ε is needed: the product's
   absorptivity and the lot's activity cancel in the normalised response
   (v − v₁₀₀)/(v₀ − v₁₀₀).
5. **Fit**: a four-parameter logistic (top, bottom, ln IC50, Hill slope) by least squares over
   every dose, the 0 % controls at a dose far below the series and the 100 % controls far above
   it (:func:`fit_logistic`, the Hill slope fixed at 1 where the free fit's is implausible);
   the IC50's standard uncertainty from the fit's covariance, with the inhibitor label's ±1 %,
   the pipetting's and the initial slope's model on top.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
from scipy.optimize import curve_fit

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.ic50_parts import expected_ic50, ic50_span
from labtools.simulators.families.inhibition_expert import _enzyme_plan
from labtools.simulators.families.inhibition_parts import INHIBITOR_MAX_UL, Inhibitor
from labtools.simulators.families.kinetics_expert import (
    LAG_S,
    MAX_RISE_OD,
    ROWS,
    STORE,
    Design,
    background_slope,
    diluted_stock,
    kinetic,
    unsaturated,
)
from labtools.simulators.families.kinetics_parts import ENZYME_MAX_UL, WELL_UL, Pair
from labtools.simulators.families.protocol import PLATE, kept, sound, transfer, well
from labtools.simulators.tasks.scripting import Call, site_of, water_band

__all__ = ["dose_response", "doses", "fit_logistic", "initial_slope", "one_point"]

#: the series reaches this factor below the lowest and above the highest IC50 the package allows
#: [A: two: a 4PL fit needs both plateaus in sight]
MARGIN = 2.0
#: doses at most, and at least [A: 8-12, a drug-discovery lab's usual series]
MOST_DOSES, FEWEST_DOSES = 12, 8
#: wells beside the doses: a blank, two 0 % and two 100 % controls, two enzyme dilutions and
#: two inhibitor dilutions at most
CONTROL_WELLS = 9
#: a buffer top-up below this (µL) is left out [A: the liquid handler's least volume; the well
#: then holds 0.25 % less]
LEAST_BUFFER_UL = 0.5
#: the least volume pipetted of the inhibitor (µL) [A: a 10 µL tip misses a 2 µL delivery by
#: ~2 % (ISO 8655-2 systematic limits)], and the fold of each of its dilutions [A]
LEAST_UL, DILUTION_FOLD = 2.0, 10.0
#: an inhibitor dilution's volume in its plate_2 well (µL) [A: what the doses drawn from it
#: take, ≤ 2 × 40 µL × three doses a decade, with spare]
INHIBITOR_DILUTION_UL = 300.0
#: at the published constants the uninhibited well converts at most this share of the
#: substrate over the read [A: its initial slope then bends by ≤ 15 %, what a quadratic holds]
MAX_CONVERSION = 0.4
#: the kinetic read's length (s) and the reads it is split into [A: an hour in six reads, each
#: returning as many values as come back inline: the initial slope's noise falls with the
#: read's length to the 3/2 and with the reads' number to the 1/2; a coloured preparation at
#: level 5 leaves a 40-minute read too little]
READ_S, SEGMENTS = 3600.0, 6
#: an initial slope is fitted over the reads before the product reaches this share of the
#: substrate (by the library's ε: a window, not a conversion) [A: a quadratic holds a curve
#: that has slowed by a fifth], and over this many reads at least [A]
WINDOW_CONVERSION, WINDOW_READS = 0.25, 20
#: relative standard uncertainties added to the fit's [A]: the inhibitor label's ±1 %, the
#: pipetting's half a per cent, and the initial slope's model (the reads start a minute or two
#: after the enzyme goes in, and a quadratic only approximates a depleting curve: 3 %)
LABEL_SD, PIPETTING_SD, MODEL_SD = 0.01, 0.005, 0.03
#: the Hill slope's bounds in the fit [A: far outside a reversible inhibitor's]
HILL_BOUNDS = (0.2, 5.0)
#: a fitted Hill slope outside these is the series' shortfall, not the inhibitor's [A: a
#: reversible single-site inhibitor's is 1; 0.5-2 spans what assay artefacts give]
PLAUSIBLE_HILL = (0.5, 2.0)


def doses(p: Pair, inh: Inhibitor, s: float, stock: float, count: int) -> list[float]:
    """``count`` inhibitor levels (M in the well), geometric from :data:`MARGIN` below the
    lowest IC50 the package allows at ``s`` to :data:`MARGIN` above its highest, or to what the
    ``stock`` (M) gives at :data:`~.inhibition_parts.INHIBITOR_MAX_UL` if less."""
    low, high = ic50_span(p, inh, s)
    top = min(high * MARGIN, stock * INHIBITOR_MAX_UL / WELL_UL)
    bottom = min(low / MARGIN, top / 30.0)
    return [bottom * (top / bottom) ** (k / (count - 1)) for k in range(count)]


def _enzyme(p: Pair, s: float, label: float, started: int) -> Design:
    """The enzyme in a reaction well from the published constants: the uninhibited well
    converting at most :data:`MAX_CONVERSION` of ``s`` and rising at most
    :data:`~.kinetics_expert.MAX_RISE_OD` over the read."""
    km, kcat = p.km_centre, p.kcat_centre
    allowed = min(MAX_CONVERSION * (km + s), MAX_RISE_OD * (km + s) / (p.od_per_molar * s))
    e_well = min(label * ENZYME_MAX_UL / WELL_UL, allowed / (kcat * (READ_S + LAG_S)))
    plan = Design([s], e_well, 0.0, [], READ_S, 2)
    return _enzyme_plan(plan, label, started)


def _sources(call: Call, stock: str, buffer: str, molar: float, levels: list[float]) -> dict:
    """Each level's source and volume (µL): the stock, or the first 1-in-
    :data:`DILUTION_FOLD` dilution of it (made in plate_2's row B) that needs at least
    :data:`LEAST_UL`."""
    out: dict[float, tuple[str, float]] = {}
    strengths = [(stock, molar)]
    for level in sorted(levels, reverse=True):
        while level / strengths[-1][1] * WELL_UL < LEAST_UL:
            vessel = f"{STORE}:B{len(strengths)}"
            part = round(INHIBITOR_DILUTION_UL / DILUTION_FOLD, 2)
            transfer(call, [(buffer, vessel, INHIBITOR_DILUTION_UL - part)], "reuse")
            transfer(call, [(strengths[-1][0], vessel, part)], "reuse")
            strengths.append((vessel, strengths[-1][1] / DILUTION_FOLD))
        source, strength = next((c, v) for c, v in strengths if level / v * WELL_UL >= LEAST_UL)
        out[level] = (source, round(level / strength * WELL_UL, 2))
    return out


def initial_slope(times: np.ndarray, od: np.ndarray, limit: float = math.inf) -> float:
    """The slope (OD/s) at the first read of a quadratic fit of ``od`` over ``times`` (the
    readings near the reader's ceiling left out), over the reads before ``od`` has risen by
    ``limit`` from its first (at least :data:`WINDOW_READS`); NaN with fewer than four."""
    keep = np.isfinite(od)
    if keep.sum() < 4:
        return math.nan
    t, y = times[keep] - times[keep][0], od[keep]
    over = np.flatnonzero(y - y[0] > limit)
    end = max(int(over[0]) if over.size else t.size, WINDOW_READS)
    coef = np.polyfit(t[:end], y[:end], 2)
    return float(coef[1])


def logistic(x: np.ndarray, top: float, bottom: float, ln_ic50: float, hill: float) -> np.ndarray:
    """The four-parameter logistic in ln dose."""
    return bottom + (top - bottom) / (1.0 + np.exp(hill * (np.log(x) - ln_ic50)))


def _fit(
    x: np.ndarray, y: np.ndarray, guess: float, hill: float | None
) -> tuple[float, float, float] | None:
    """ln IC50, its sd and the Hill slope of a logistic through ``y`` at ``x``: four parameters,
    or three with the Hill slope fixed at ``hill``."""
    low, high = math.log(x.min()), math.log(x.max())
    start = min(max(math.log(guess), low + 1.0), high - 1.0)
    lower, upper = [0.5, -0.5, low], [1.5, 0.5, high]
    if hill is None:
        model: Callable[..., np.ndarray] = logistic
        p0: tuple[float, ...] = (1.0, 0.0, start, 1.0)
        lower, upper = [*lower, HILL_BOUNDS[0]], [*upper, HILL_BOUNDS[1]]
    else:
        fixed = hill

        def model(x: np.ndarray, top: float, bottom: float, ln_ic50: float) -> np.ndarray:
            return logistic(x, top, bottom, ln_ic50, fixed)

        p0 = (1.0, 0.0, start)
    try:
        coef, cov = curve_fit(model, x, y, p0=p0, bounds=(lower, upper), maxfev=20_000)
    except (RuntimeError, ValueError):
        return None
    sd = math.sqrt(float(cov[2, 2])) if np.all(np.isfinite(cov)) and cov[2, 2] >= 0 else 1.0
    return float(coef[2]), sd, float(coef[3]) if hill is None else hill


def fit_logistic(x: np.ndarray, y: np.ndarray, guess: float) -> tuple[float, float, float] | None:
    """IC50, the sd of its ln and the Hill slope of a four-parameter logistic through the
    normalised responses ``y`` at doses ``x`` (M, > 0); ``guess``: a starting IC50. Where the
    series does not pin the Hill slope (the fit's outside :data:`PLAUSIBLE_HILL`: a stock that
    reaches little past the IC50 leaves the slope and the bottom trading off), the IC50 of the
    same logistic with the slope at 1 (a reversible single-site inhibitor's); either way half
    the two fits' difference is in the uncertainty."""
    free = _fit(x, y, guess, None)
    one = _fit(x, y, guess, 1.0)
    if one is None:
        return None if free is None else (math.exp(free[0]), free[1], free[2])
    if free is None:
        return math.exp(one[0]), one[1], 1.0
    between = abs(free[0] - one[0]) / 2.0
    if PLAUSIBLE_HILL[0] <= free[2] <= PLAUSIBLE_HILL[1]:
        return math.exp(free[0]), math.hypot(free[1], between), free[2]
    return math.exp(one[0]), math.hypot(one[1], between), 1.0


def dose_response(
    call: Call, p: Pair, inh: Inhibitor, stocks: Mapping[str, str], s: float, *, wells: int
) -> tuple[float, float, float]:
    """The IC50 (M), its standard uncertainty (M) and the Hill slope at substrate ``s`` (M in
    the well), through ``call`` only; ``stocks``: the containers of water, buffer, substrate,
    standard, enzyme and inhibitor."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "inhibitor")
    }
    count = max(FEWEST_DOSES, min(MOST_DOSES, (wells - CONTROL_WELLS) // 2))
    series = doses(p, inh, s, molar["inhibitor"], count)
    names = iter(f"{r}{c}" for c in range(1, 13) for r in ROWS)
    reactions = {next(names): i for i in [0.0, 0.0, *series, *series]}
    blank = next(names)
    no_enzyme = [next(names) for _ in range(2)]
    plan = _enzyme(p, s, molar["enzyme"], len(reactions))
    buffer, substrate = stocks["buffer"], stocks["substrate"]
    s_ul = round(s / molar["substrate"] * WELL_UL, 2)
    enzyme = diluted_stock(call, stocks, plan)
    source = _sources(call, stocks["inhibitor"], buffer, molar["inhibitor"], series)
    i_ul = {i: source[i][1] if i > 0 else 0.0 for i in reactions.values()}

    moves = [
        (buffer, well(w), WELL_UL - s_ul - i_ul[i] - plan.enzyme_ul) for w, i in reactions.items()
    ]
    moves += [(buffer, well(blank), WELL_UL)]
    moves += [(buffer, well(w), WELL_UL - s_ul) for w in no_enzyme]
    transfer(call, [m for m in moves if m[2] >= LEAST_BUFFER_UL], "reuse")
    transfer(call, [(substrate, well(w), s_ul) for w in [*reactions, *no_enzyme]], "reuse")
    by_source: dict[str, list[tuple[str, str, float]]] = {}
    for w, i in reactions.items():
        if i > 0:
            by_source.setdefault(source[i][0], []).append((source[i][0], well(w), source[i][1]))
    for moves in by_source.values():
        transfer(call, moves, "reuse")
    transfer(call, [(enzyme, well(w), plan.enzyme_ul) for w in reactions], "reuse")

    everything = [*reactions, blank, *no_enzyme]
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, reads = kinetic(call, p, everything, plan.read_s, SEGMENTS)
    bands = water_band(call, PLATE, everything)
    call("lh_move_plate", plate=PLATE, destination=home)
    healthy = sound(np.array([bands[w] for w in everything]), everything)

    background = background_slope(
        times, [reads[w] for w in kept([w for w in no_enzyme if w in healthy], no_enzyme, 1)]
    )
    limit = WINDOW_CONVERSION * s * p.od_per_molar
    slope = {w: initial_slope(times, unsaturated(reads[w]), limit) - background for w in reactions}
    controls = [w for w, i in reactions.items() if i == 0.0]
    top = float(
        np.nanmean([slope[w] for w in kept([w for w in controls if w in healthy], controls, 1)])
    )
    if not (math.isfinite(top) and top > 0):
        return math.nan, math.nan, 1.0
    x, y = [], []
    for level in series:
        mine = [w for w, i in reactions.items() if i == level]
        for w in kept([w for w in mine if w in healthy], mine, 1):
            if math.isfinite(slope[w]):
                x.append(level)
                y.append(slope[w] / top)
    x += [series[0] / 1e3] * len(controls) + [series[-1] * 1e3] * len(no_enzyme)
    y += [slope[w] / top for w in controls] + [0.0] * len(no_enzyme)
    xs, ys = np.array(x), np.array(y)
    use = np.isfinite(ys)
    fitted = fit_logistic(xs[use], ys[use], expected_ic50(p, inh, s))
    if fitted is None:
        return math.nan, math.nan, 1.0
    ic50, sd, hill = fitted
    return ic50, ic50 * math.hypot(sd, LABEL_SD, PIPETTING_SD, MODEL_SD), hill


def one_point(call: Call, p: Pair, inh: Inhibitor, stocks: Mapping[str, str], s: float) -> float:
    """The experiment without controls: two wells at ``s``, without and with the expected IC50
    (the package's, :func:`~.ic50_parts.expected_ic50`) of the inhibitor, one kinetic read;
    each initial slope as the expert's, without the 100 % control's background, a blank, a
    replicate or the path check; the IC50 (M) from the one point's inhibition as if the Hill
    slope were 1: I·v/(v₀ − v)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "inhibitor")
    }
    plan = _enzyme(p, s, molar["enzyme"], 2)
    dose = min(expected_ic50(p, inh, s), molar["inhibitor"] * INHIBITOR_MAX_UL / WELL_UL)
    i_ul = max(round(dose / molar["inhibitor"] * WELL_UL, 2), LEAST_UL)
    dose = molar["inhibitor"] * i_ul / WELL_UL
    s_ul = round(s / molar["substrate"] * WELL_UL, 2)
    enzyme = diluted_stock(call, stocks, plan)
    for name, part in (("A1", 0.0), ("A2", i_ul)):
        moves = [(stocks["buffer"], well(name), WELL_UL - s_ul - part - plan.enzyme_ul)]
        moves += [(stocks["substrate"], well(name), s_ul)]
        if part > 0:
            moves += [(stocks["inhibitor"], well(name), part)]
        transfer(call, moves, "new")
    transfer(call, [(enzyme, well(n), plan.enzyme_ul) for n in ("A1", "A2")], "new")
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, reads = kinetic(call, p, ["A1", "A2"], plan.read_s)
    call("lh_move_plate", plate=PLATE, destination=home)
    limit = WINDOW_CONVERSION * s * p.od_per_molar
    v0, v = (initial_slope(times, unsaturated(reads[w]), limit) for w in ("A1", "A2"))
    ratio = v / v0 if v0 > 0 else math.nan
    return dose * ratio / (1.0 - ratio) if 0.0 < ratio < 1.0 else dose
