"""The ``stability`` family's parts: the candidate panels, the levels (the stock's label, the
share a faded stock retains), the lot each candidate comes in, and what the process rubric
checks.

A *panel* is an analyte of :data:`~.parts.ANALYTES` with its nearest look-alikes
(:func:`~.identify_parts.panel`: every two at most :data:`~.mixture.ALIKE_MAX` alike), of 2, 3
or 4 (:data:`SIZES`); a held-out species' (:data:`~.parts.HELD_OUT_SPECIES`) panels drawn from
every analyte, the others' from the analytes that train, so that only ``test-ood`` lists a
held-out species. The hand-written task ``dye_stability``'s three azo dyes are a panel too
(:data:`AZO`, first in the list).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from labtools.session.process import Component, Episode, Rubric, blanks, references, usable_reading
from labtools.session.process import replicates as replicated
from labtools.simulators.families.identify_parts import panel
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import SAMPLE, STANDARDS, WATER, WELL_UL
from labtools.simulators.tasks.dye_stability import MADE_SD, P_DEGRADED, THRESHOLD
from labtools.simulators.tasks.scripting import nominal_path_cm

__all__ = [
    "AZO",
    "CONTENT_SD",
    "LEVEL",
    "MADE_SD",
    "PROCESS_WEIGHT",
    "P_DEGRADED",
    "SIZES",
    "THRESHOLD",
    "StabilityLevel",
    "label_um",
    "rubric",
    "structures",
]

#: candidates per panel [A: two to four, as the hand-written task's three]
SIZES = (2, 3, 4)
#: the hand-written task's panel (``dye_stability``)
AZO = ("tartrazine", "sunset_yellow", "allura_red")
#: the lot's content (1 sd, relative): a candidate's lot absorbs this much more or less per
#: mole as labelled than the library's reference, on top of a food dye's batch spread
#: (``species.toml``) [A: reagent lots are sold by assay, dyes by dye content (food colours
#: from 85 % total colouring matter [L: EU Regulation 231/2012, as species.toml cites]), and
#: salts carry water of hydration; 5 % covers a stock weighed from a lot whose assay is not
#: corrected for]. The deck's standards come from the same lots: a standard read beside the
#: stock calibrates it, the library's ε does not
CONTENT_SD = 0.05
#: the drawn content is kept within this many sd [A, as identify's shift]
CONTENT_TRUNCATE = 2.5
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6


@dataclass(frozen=True)
class StabilityLevel(Level):
    """A level's physics and budget: the shared level's noise and budget; ``label_od`` the
    optical density the stock's label would read neat in a 200 µL well (the panel's geometric
    mean library ε, nominal path), and ``retained`` the share of its label a faded stock keeps
    (uniform within)."""

    label_od: float = 10.0
    retained: tuple[float, float] = (0.45, 0.85)


#: each level [A]: the label from 8 OD neat (one dilution brings it into the reader's 0.1-2.0
#: OD; the three azo dyes' label is then the hand-written task's 500 µM) to 400 OD (two
#: dilution steps, as a concentrated stock of a strong dye); a faded stock keeps the
#: hand-written task's 45-85 % of its label at level 1, up to just short of the threshold at
#: level 5; the shared levels' reader noise and budgets
LEVEL = {
    n: StabilityLevel(
        n,
        SHARED_LEVEL[n].od,
        SHARED_LEVEL[n].interferent_ratio,
        SHARED_LEVEL[n].noise,
        SHARED_LEVEL[n].budget,
        label_od=label_od,
        retained=retained,
    )
    for n, label_od, retained in (
        (1, 8.0, (0.45, 0.85)),
        (2, 20.0, (0.5, 0.87)),
        (3, 60.0, (0.55, 0.88)),
        (4, 150.0, (0.6, 0.885)),
        (5, 400.0, (0.65, 0.89)),
    )
}


def label_um(level: StabilityLevel, candidates: Sequence[str]) -> float:
    """The stock's label (µM): the level's ``label_od`` neat over the candidates' geometric mean
    library ε and the nominal path, to two significant figures (a round figure, as a label)."""
    log_mean = sum(math.log(analyte(k).epsilon) for k in candidates) / len(candidates)
    exact = level.label_od / (math.exp(log_mean) * nominal_path_cm(WELL_UL)) * 1e6
    return float(f"{exact:.2g}")


def _claimed_standard(episode: Episode, stocks: dict[str, str]) -> list[str]:
    key = (episode.submission or {}).get("analyte")
    return [stocks[key]] if key in stocks else []


def rubric(candidates: tuple[str, ...]) -> Rubric:
    """The process rubric of a panel: the hand-written task's components (a blank, the claimed
    candidate's standard read in range, the stock read in range, a replicate), weight
    :data:`PROCESS_WEIGHT`."""
    stocks = dict(zip(candidates, STANDARDS, strict=False))
    return Rubric(
        (
            Component(
                "blank",
                0.2,
                lambda e: blanks(e, [SAMPLE], [WATER]),
                "a water (or empty-well) blank on each plate the stock was read on",
            ),
            Component(
                "standard",
                0.3,
                lambda e: references(e, _claimed_standard(e, stocks), [WATER], accurate=True),
                "the claimed candidate's standard read alone, its peak within 0.1–2.0 OD",
            ),
            Component(
                "linear_range",
                0.3,
                lambda e: usable_reading(e, [SAMPLE]),
                "a reading of the stock (a spectrum by its peak) within 0.1–2.0 OD",
            ),
            Component(
                "replicates",
                0.2,
                lambda e: replicated(e, [SAMPLE], copies=2),
                "the stock in at least two wells of the same condition",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="P(degraded) is scored by a Brier term (proper), so no component rewards it again.",
    )


@functools.cache
def structures() -> list[str]:
    """:data:`AZO`, then every anchor's panel of each of :data:`SIZES` (a held-out anchor's from
    every analyte, the others' from the analytes that train), each once, size by size in
    turn."""
    training = [k for k in ANALYTES if k not in HELD_OUT_SPECIES]
    out = ["+".join(AZO)]
    for anchor in ANALYTES:
        pool = ANALYTES if anchor in HELD_OUT_SPECIES else training
        for size in SIZES:
            found = panel(anchor, size, pool)
            if found is not None:
                out.append("+".join(found))
    return list(dict.fromkeys(out))
