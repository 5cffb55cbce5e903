"""Each task's process rubric: which process components apply, their weights, and how each is
computed from the episode's journal and the lab's end state (:mod:`labtools.session.process`).

A task declares its rubric with ``rubric = RUBRICS["<task id>"]``; the session then reports
``process/<component>`` in ``Reward.components`` and scores
``raw = outcome × (1 − w + w × process)`` (``w`` is the rubric's ``weight``: 0.2, or where a
task has an experiment-without-controls shortcut, the smallest in steps of 0.1 that holds it
to 0.5 normalised, measured). The containers
below are those the task statements name; ``tests/test_process_reward.py`` checks that they
match the task modules' constants (this module imports no task, so that tasks can import it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from labtools.session.process import (
    Component,
    Episode,
    Reading,
    Rubric,
    blanks,
    bracketed,
    controls,
    in_range_share,
    levels,
    references,
    replicates,
    usable_reading,
    verified,
)

__all__ = ["RUBRICS"]

WATER = "reservoir:A1"
SAMPLE = "reservoir:A10"  # the unknown of dye_quantification and standard_curve
DYE_STOCKS = ("reservoir:A2", "reservoir:A3", "reservoir:A4", "reservoir:A5")
TARTRAZINE = "reservoir:A2"  # standard_curve's labelled standard
INDICATOR = "reservoir:A2"
BUFFER, PNPP, PNP, ENZYME, INHIBITOR = (f"reservoir:A{i}" for i in range(2, 7))
#: the accurate range of a kinetic read: its first points start near the plate's own OD
KINETIC_OD = (0.0, 2.0)
#: a Michaelis–Menten design brackets Km: substrate at or below Km/2 and at or above 2·Km
KM_SPAN = 2.0
#: buffers within this many pH units of the pKa see both forms at ≥ 1:100
PKA_WINDOW = 2.0
_PH_LABEL = re.compile(r"^buffer.*pH (\d+(?:\.\d+)?)")

UNCERTAINTY_BY_CRPS = (
    "The stated uncertainty is scored by the outcome itself: CRPS of N(estimate, σ²), a "
    "strictly proper scoring rule, so no process component rewards it again."
)


# -- colour_matching ---------------------------------------------------------------------------
def _submitted(episode: Episode) -> str | None:
    well = (episode.submission or {}).get("well")
    return well if isinstance(well, str) else None


def _stocks_in_mix(episode: Episode) -> list[str]:
    well = _submitted(episode)
    held = episode.contents.get(well, {}) if well else {}
    return [s for s in DYE_STOCKS if held.get(s, 0.0) > 0]


COLOUR_MATCHING = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, DYE_STOCKS, [WATER]),
            "an empty or water-only well read on each plate whose dye wells were read",
        ),
        Component(
            "references",
            0.3,
            lambda e: references(e, _stocks_in_mix(e), [WATER]),
            "share of the stocks in the submitted mix read alone (a dilution in water)",
        ),
        Component(
            "linear_range",
            0.15,
            lambda e: references(e, _stocks_in_mix(e), [WATER], accurate=True),
            "…of those, read with a peak in the reader's accurate range (0.1–2.0 OD)",
        ),
        Component(
            "verified",
            0.35,
            lambda e: verified(e, well) if (well := _submitted(e)) else 0.0,
            "the submitted well was read after its last change",
        ),
    ),
    note="No uncertainty is asked for.",
)

# -- dye_quantification ------------------------------------------------------------------------
DYE_QUANTIFICATION = Rubric(
    (
        Component(
            "blank",
            0.25,
            lambda e: blanks(e, [SAMPLE], [WATER]),
            "a water (or empty-well) blank on each plate the sample was read on",
        ),
        Component(
            "references",
            0.35,
            lambda e: references(e, DYE_STOCKS, [WATER]),
            "share of the four dye standards read alone (the unmixing basis)",
        ),
        Component(
            "linear_range",
            0.2,
            lambda e: usable_reading(e, [SAMPLE]),
            "a reading of the sample (a spectrum by its peak) within 0.1–2.0 OD",
        ),
        Component(
            "replicates",
            0.2,
            lambda e: replicates(e, [SAMPLE], copies=2),
            "the sample in at least two wells of the same condition",
        ),
    ),
    weight=0.6,  # the no-controls shortcut: 0.43 normalised (0.49 at 0.5), seeds 0-19 [C]
    note="No uncertainty is asked for.",
)

# -- standard_curve ----------------------------------------------------------------------------
STANDARD_CURVE = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [SAMPLE], [WATER]),
            "a water (or empty-well) blank on each plate the unknown was read on",
        ),
        Component(
            "replicates",
            0.25,
            lambda e: replicates(e, [SAMPLE], copies=3),
            "the unknown in three wells of one condition (two: half)",
        ),
        Component(
            "levels",
            0.15,
            lambda e: levels(e, TARTRAZINE, count=5, lacks=[SAMPLE]),
            "standard levels read, out of five",
        ),
        Component(
            "linear_range",
            0.2,
            lambda e: usable_reading(e, [SAMPLE]),
            "a reading of the unknown within 0.1–2.0 OD",
        ),
        Component(
            "bracketed",
            0.2,
            lambda e: bracketed(e, [SAMPLE], TARTRAZINE),
            "that reading lies between standards read at the same wavelength",
        ),
    ),
    weight=0.6,  # the no-controls shortcut: 0.42 normalised (0.49 at 0.5), seeds 0-19 [C]
    note=UNCERTAINTY_BY_CRPS,
)


# -- indicator_pka -----------------------------------------------------------------------------
def _buffers(episode: Episode) -> dict[str, float]:
    """The labelled buffers (container → labelled pH), from the world's labels."""
    world = episode.shared.get("world")
    labels: Mapping[str, str] = getattr(world, "labels", {}) or {}
    found = {w: _PH_LABEL.match(text) for w, text in labels.items()}
    return {w: float(m.group(1)) for w, m in found.items() if m is not None}


def _ph_of(reading: Reading, buffers: Mapping[str, float]) -> float | None:
    """The labelled pH of the buffer that makes up most of the well, if any does."""
    held = [(reading.contents.get(b, 0.0), b) for b in buffers]
    volume, buffer = max(held, default=(0.0, ""))
    return buffers[buffer] if volume > 0 else None


def _pka_bracketed(episode: Episode) -> float:
    """Half for indicator read in a buffer below the true pKa, half for one above, each
    within :data:`PKA_WINDOW` of it (where both forms are seen)."""
    indicator = episode.shared.get("indicator")
    truth = getattr(indicator, "truth", None)
    if not isinstance(truth, Mapping) or "pka" not in truth:
        return 0.0
    pka = float(truth["pka"])
    buffers = _buffers(episode)
    phs = [p for r in episode.of([INDICATOR]) if (p := _ph_of(r, buffers)) is not None]
    below = any(pka - PKA_WINDOW <= p <= pka for p in phs)
    above = any(pka <= p <= pka + PKA_WINDOW for p in phs)
    return 0.5 * below + 0.5 * above


INDICATOR_PKA = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [INDICATOR], [WATER, *_buffers(e)]),
            "each plate read with the indicator also read empty or with buffer alone",
        ),
        Component(
            "replicates",
            0.3,
            lambda e: replicates(e, [INDICATOR], copies=3, conditions=5),
            "five indicator-in-buffer conditions in triplicate",
        ),
        Component(
            "bracketed",
            0.3,
            _pka_bracketed,
            "buffers on both sides of the true pKa, within 2 pH units of it",
        ),
        Component(
            "linear_range",
            0.2,
            lambda e: in_range_share(e, [INDICATOR], modes=("absorbance", "spectrum")),
            "share of indicator wells read with a peak within 0.1–2.0 OD",
        ),
    ),
    note=UNCERTAINTY_BY_CRPS,
)


# -- enzyme_kinetics and enzyme_inhibition -----------------------------------------------------
def _reactions(episode: Episode) -> list[Reading]:
    """Kinetic readings of wells holding both the enzyme and pNPP."""
    return [r for r in episode.of([ENZYME], "kinetic") if r.holds([PNPP])]


def _km_bracketed(episode: Episode) -> float:
    """Half for a reaction at or below Km/2, half for one at or above 2·Km (the true Km; pNPP
    as the stock really holds it)."""
    world = episode.shared.get("world")
    if world is None:
        return 0.0
    km = float(world.kinetics.enzyme("alkaline_phosphatase")["km_molar"])
    stock = world.peek(PNPP).concentration("pnpp")
    substrate = [r.fraction(PNPP) * stock for r in _reactions(episode)]
    return 0.5 * any(s <= km / KM_SPAN for s in substrate) + 0.5 * any(
        s >= km * KM_SPAN for s in substrate
    )


def _inhibitor_levels(episode: Episode) -> float:
    """Inhibitor levels (none included) at which three or more substrate levels were read,
    out of three."""
    series: dict[str, set[str]] = {}
    for r in _reactions(episode):
        series.setdefault(f"{r.fraction(INHIBITOR):.2g}", set()).add(f"{r.fraction(PNPP):.2g}")
    return min(1.0, sum(len(s) >= 3 for s in series.values()) / 3)


def _kinetics(*, inhibition: bool) -> tuple[Component, ...]:
    scale = 0.75 if inhibition else 1.0  # the inhibition series takes a quarter
    common = (
        Component(
            "blank",
            0.1 * scale,
            lambda e: blanks(e, [PNPP, ENZYME], [WATER, BUFFER]),
            "a buffer-only (or empty) well read on each plate with reactions",
        ),
        Component(
            "no_enzyme",
            0.15 * scale,
            lambda e: controls(e, holds=[PNPP], lacks=[ENZYME]),
            "pNPP read without enzyme (spontaneous hydrolysis, baseline; a pre-read counts)",
        ),
        Component(
            "standards",
            0.15 * scale,
            lambda e: levels(e, PNP, count=2, lacks=[ENZYME]),
            "p-nitrophenol standards at two or more levels read (OD per M in the well)",
        ),
        Component(
            "replicates",
            0.2 * scale,
            lambda e: replicates(e, [ENZYME], copies=2, conditions=5, mode="kinetic"),
            "five reaction conditions in duplicate or more",
        ),
        Component(
            "linear_range",
            0.2 * scale,
            lambda e: in_range_share(e, [ENZYME], KINETIC_OD, points=3, modes=("kinetic",)),
            "share of reaction wells with three or more readings within 0–2 OD",
        ),
        Component(
            "km_bracketed",
            0.2 * scale,
            _km_bracketed,
            "substrate levels at or below Km/2 and at or above 2·Km",
        ),
    )
    if not inhibition:
        return common
    extra = Component(
        "inhibitor_levels",
        0.25,
        _inhibitor_levels,
        "three inhibitor levels (none included), each with three substrate levels or more",
    )
    return (*common, extra)


ENZYME_KINETICS = Rubric(_kinetics(inhibition=False), note="No uncertainty is asked for.")
ENZYME_INHIBITION = Rubric(
    _kinetics(inhibition=True),
    note=(
        "The mechanism's probabilities are scored by the outcome's Brier term, a strictly "
        "proper score: no process component rewards them again."
    ),
)

#: each task's rubric, by task id
RUBRICS: dict[str, Rubric] = {
    "colour_matching": COLOUR_MATCHING,
    "dye_quantification": DYE_QUANTIFICATION,
    "standard_curve": STANDARD_CURVE,
    "indicator_pka": INDICATOR_PKA,
    "enzyme_kinetics": ENZYME_KINETICS,
    "enzyme_inhibition": ENZYME_INHIBITION,
}
