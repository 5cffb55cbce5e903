"""The ``inhibition`` family's protocols on a plate: the expert's design, controls, kinetic
reads and fits; the naive endpoints; the experiment without controls.

The expert (:func:`constants`) is the ``kinetics`` family's (:mod:`.kinetics_expert`) with an
inhibitor:

1. **Design** from the labels and the published constants only: the ``kinetics`` expert's six
   substrate levels and enzyme (:func:`~.kinetics_expert.design`), at three inhibitor levels:
   none, :data:`REACH` × the published Ki centre (or the most a well holds, if less) and a
   :data:`STEP`-th of that, the inhibitor pipetted from its stock. Every level in duplicate where
   the wells budget holds it, else the uninhibited series alone.
2. **Controls**, **reads** and **rates** as the ``kinetics`` expert's: a buffer blank, the
   product standard at three levels, two no-enzyme wells at the top substrate level, two
   enzyme-only wells; each well read four times before the enzyme goes in, three kinetic reads
   back to back, the standards once more, water's band in every well (defect wells out); each
   rate from its early progress curve paired with the substrate left, less the substrate's own
   hydrolysis where the no-enzyme wells show it.
3. **Fit**: the three mechanisms' rate laws by weighted least squares over every well, a defect
   well left out where it stands out (:func:`~labtools.simulators.tasks.kinetics_fit.
   fit_inhibition_robust`, ``enzyme_inhibition``'s); each mechanism's probability from the
   fits' residuals (:func:`~labtools.simulators.tasks.kinetics_fit.mechanism_probabilities`);
   Km, kcat and Ki from the best.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.inhibition_parts import INHIBITOR_MAX_UL, Inhibitor
from labtools.simulators.families.kinetics_expert import (
    BASELINE_READS,
    ENZYME_ONLY,
    KEPT_LEFT,
    NAIVE_S,
    NO_ENZYME,
    ROWS,
    Design,
    design,
    diluted_stock,
    enzyme_source,
    kinetic,
    on_dilution,
    run_plate,
    unsaturated,
)
from labtools.simulators.families.kinetics_parts import (
    STANDARD_UL,
    SUBSTRATE_MAX_UL,
    WELL_UL,
    Pair,
)
from labtools.simulators.families.protocol import PLATE, kept, transfer, well
from labtools.simulators.tasks.kinetics_fit import (
    Rate,
    fit_inhibition_robust,
    mechanism_probabilities,
    rate_from_progress,
)
from labtools.simulators.tasks.scripting import Call, site_of
from labtools.simulators.world import SpeciesLibrary

__all__ = ["BASELINE_READS", "constants", "endpoints", "inhibitor_levels", "uncontrolled"]

#: the top inhibitor level over the published Ki centre [A: at 4 × Ki a competitive inhibitor
#: raises the apparent Km fivefold; a Ki at either end of a tenfold span still sees I/Ki from
#: 1.3 to 13 there], and the middle level's fraction of it [A: a quarter]
REACH, STEP = 4.0, 4.0
#: control wells beside the reactions: a blank, the standards, the no-enzyme and enzyme-only
#: wells, and two enzyme dilutions
CONTROLS = 1 + len(STANDARD_UL) + NO_ENZYME + ENZYME_ONLY + 2
#: the naive protocol's inhibitor: this share of its well from the stock [A: a tenth]
NAIVE_INHIBITOR_UL = 20.0


def inhibitor_levels(inh: Inhibitor, stock: float) -> list[float]:
    """The inhibitor in a well (M) at each level: none, a :data:`STEP`-th of the top, the top
    (:data:`REACH` × the published Ki centre, at most what :data:`~.inhibition_parts.
    INHIBITOR_MAX_UL` of the ``stock`` (M) gives)."""
    top = min(REACH * inh.ki_centre, stock * INHIBITOR_MAX_UL / WELL_UL)
    return [0.0, top / STEP, top]


def _enzyme_plan(plan: Design, label: float, started: int) -> Design:
    """``plan``'s enzyme for ``started`` wells: from the stock where a well takes at least
    :data:`~.kinetics_expert.LEAST_ENZYME_UL` of it, else from dilutions (as the ``kinetics``
    expert's, the volume shared out over more wells)."""
    enzyme_ul, dilutions, e_well = enzyme_source(label, plan.e_well, on_dilution(started))
    return dataclasses.replace(plan, e_well=e_well, enzyme_ul=enzyme_ul, dilutions=dilutions)


def constants(
    call: Call, p: Pair, inh: Inhibitor, stocks: Mapping[str, str], *, wells: int
) -> tuple[float, float, float, dict[str, float]]:
    """Km (M), kcat per labelled site (s⁻¹), Ki (M) and each mechanism's probability, through
    ``call`` only; ``stocks``: the containers of water, buffer, substrate, standard, enzyme and
    inhibitor."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "standard", "inhibitor")
    }
    plan = design(p, molar, wells=wells, controls=False)
    levels = inhibitor_levels(inh, molar["inhibitor"])
    n = len(plan.levels)
    copies = [2, 2, 2] if n * 6 + CONTROLS <= wells else [2, 1, 1]
    conditions = [
        (s, i) for i, c in zip(levels, copies, strict=True) for _ in range(c) for s in plan.levels
    ]
    plan = _enzyme_plan(plan, molar["enzyme"], len(conditions) + ENZYME_ONLY)
    names = iter(f"{r}{c}" for c in range(1, 13) for r in ROWS)
    reactions = {next(names): c for c in conditions}
    blank = next(names)
    enzyme_only = [next(names) for _ in range(ENZYME_ONLY)]
    no_enzyme = [next(names) for _ in range(NO_ENZYME)]
    std = {next(names): molar["standard"] * v / WELL_UL for v in STANDARD_UL}
    buffer, substrate, standard = stocks["buffer"], stocks["substrate"], stocks["standard"]
    s_ul = {s: round(s / molar["substrate"] * WELL_UL, 2) for s in plan.levels}
    i_ul = {i: round(i / molar["inhibitor"] * WELL_UL, 2) for i in levels}
    enzyme = diluted_stock(call, stocks, plan)

    moves = [
        (buffer, well(w), WELL_UL - s_ul[s] - i_ul[i] - plan.enzyme_ul)
        for w, (s, i) in reactions.items()
    ]
    moves += [(buffer, well(blank), WELL_UL)]
    moves += [(buffer, well(w), WELL_UL - plan.enzyme_ul) for w in enzyme_only]
    moves += [(buffer, well(w), WELL_UL - SUBSTRATE_MAX_UL) for w in no_enzyme]
    moves += [(buffer, well(w), WELL_UL - v) for w, v in zip(std, STANDARD_UL, strict=True)]
    transfer(call, moves, "reuse")
    moves = [(substrate, well(w), s_ul[s]) for w, (s, _) in reactions.items()]
    moves += [(substrate, well(w), SUBSTRATE_MAX_UL) for w in no_enzyme]
    transfer(call, moves, "reuse")
    moves = [(stocks["inhibitor"], well(w), i_ul[i]) for w, (_, i) in reactions.items() if i > 0]
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

    rates: list[tuple[Rate, float]] = []
    for condition in dict.fromkeys(conditions):
        level = condition[0]
        mine = [w for w, c in reactions.items() if c == condition]
        for w in kept([w for w in mine if w in healthy], mine, 1):
            rate = rate_from_progress(
                times, unsaturated(series[w]), before[w] + colour, slope, level
            )
            if rate is not None and rate.s > KEPT_LEFT * level:
                rates.append((Rate(rate.s, rate.v - hydrolysis * rate.s, rate.se), condition[1]))
    if len(rates) < 5:
        nan = math.nan
        return (
            nan,
            nan,
            nan,
            {m: 1.0 / 3.0 for m in ("competitive", "noncompetitive", "uncompetitive")},
        )
    s = np.array([r.s for r, _ in rates])
    v = np.array([r.v for r, _ in rates]) / plan.e_well
    se = np.array([r.se for r, _ in rates]) / plan.e_well
    i = np.array([level for _, level in rates])
    fits, used = fit_inhibition_robust(s, i, v, se)
    odds = mechanism_probabilities(fits, int(used.sum()))
    best = min(fits, key=lambda f: f.rss)
    return best.km, best.vmax, best.ki, odds


# -- the shortcuts -----------------------------------------------------------------------------
def _pair_of_wells(
    call: Call, stocks: Mapping[str, str], enzyme: str, enzyme_ul: float, inhibitor_ul: float
) -> None:
    """Wells A1 (no inhibitor) and A2 (``inhibitor_ul`` of the stock), each half the well of
    the substrate stock and ``enzyme_ul`` of ``enzyme`` (added last), new tips each."""
    for name, part in (("A1", 0.0), ("A2", inhibitor_ul)):
        moves = [(stocks["buffer"], well(name), WELL_UL - SUBSTRATE_MAX_UL - part - enzyme_ul)]
        moves += [(stocks["substrate"], well(name), SUBSTRATE_MAX_UL)]
        if part > 0:
            moves += [(stocks["inhibitor"], well(name), part)]
        transfer(call, moves, "new")
    transfer(call, [(enzyme, well(n), enzyme_ul) for n in ("A1", "A2")], "new")


def endpoints(call: Call, p: Pair, stocks: Mapping[str, str]) -> tuple[float, float]:
    """The naive protocol: the top substrate level with a tenth of the enzyme stock, without
    and with :data:`NAIVE_INHIBITOR_UL` of the inhibitor stock, read over :data:`~.
    kinetics_expert.NAIVE_S`; kcat from the first well's last reading, unblanked, over the
    library's ε at the product's peak and 1 cm, the enzyme taken as saturated; Ki from the two
    endpoints as if noncompetitive."""
    deck = call("lh_get_deck")
    e_well = label_micromolar(deck["labels"][stocks["enzyme"]]) * 1e-6 * 0.1
    i_well = label_micromolar(deck["labels"][stocks["inhibitor"]]) * 1e-6 * 0.1
    _pair_of_wells(call, stocks, stocks["enzyme"], 20.0, NAIVE_INHIBITOR_UL)
    call("lh_move_plate", plate=PLATE, destination="reader")
    _, series = kinetic(call, p, ["A1", "A2"], NAIVE_S)
    ends = [float(series[w][-1]) for w in ("A1", "A2")]
    ends = [e if math.isfinite(e) else 4.0 for e in ends]
    peak = SpeciesLibrary.default()[p.product].epsilon_max
    kcat = max(ends[0], 1e-3) / peak / NAIVE_S / e_well
    return kcat, _noncompetitive_ki(i_well, ends[1] / max(ends[0], 1e-3))


def uncontrolled(
    call: Call, p: Pair, inh: Inhibitor, stocks: Mapping[str, str]
) -> tuple[float, float, float]:
    """The experiment without controls: the expert's top substrate level and enzyme in two
    wells, without and with the expert's top inhibitor level; one kinetic read; each rate from
    its progress curve with its first reading as baseline, converted with the library's ε (at
    the labelled pH) over the nominal path; kcat through the published Km, Ki from the two rates
    as if noncompetitive. Km (M), kcat (s⁻¹), Ki (M)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    molar = {
        k: label_micromolar(deck["labels"][stocks[k]]) * 1e-6
        for k in ("substrate", "enzyme", "inhibitor")
    }
    plan = _enzyme_plan(design(p, molar, wells=96, controls=False), molar["enzyme"], 2)
    i_well = inhibitor_levels(inh, molar["inhibitor"])[-1]
    enzyme = diluted_stock(call, stocks, plan)
    _pair_of_wells(
        call, stocks, enzyme, plan.enzyme_ul, round(i_well / molar["inhibitor"] * WELL_UL, 2)
    )
    call("lh_move_plate", plate=PLATE, destination="reader")
    times, series = kinetic(call, p, ["A1", "A2"], plan.read_s)
    call("lh_move_plate", plate=PLATE, destination=home)
    top = plan.levels[0]
    v = []
    for w in ("A1", "A2"):
        od = unsaturated(series[w])
        first = od[np.isfinite(od)]
        rate = None
        if first.size:
            rate = rate_from_progress(times, od, float(first[0]), p.od_per_molar, top)
        v.append(rate.v if rate is not None else math.nan)
    km = p.km_centre
    kcat = v[0] * (km + top) / (plan.e_well * top)
    ratio = v[1] / v[0] if v[0] > 0 else math.nan
    return km, kcat, _noncompetitive_ki(i_well, ratio)


def _noncompetitive_ki(i_well: float, ratio: float) -> float:
    """Ki (M) from the rate with ``i_well`` of inhibitor over the rate without, as if
    noncompetitive (``ratio = 1/(1 + I/Ki)``); ``i_well`` itself where the ratio says nothing."""
    return i_well * ratio / (1.0 - ratio) if 0.0 < ratio < 1.0 else i_well
