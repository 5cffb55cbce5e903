"""The ``ph`` family's parts: the indicators, buffers and screens of the ``equilibrium`` family
(:mod:`.equilibrium_parts`), the buffer sets that leave a reservoir column for the sample, the
side of the indicator's pKa the sample lies on, each level's distance from it, the indicator
lot's spread, the structures and which of them are held out, and the process rubric."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from labtools.session.process import Component, Episode, Rubric, blanks, replicates
from labtools.simulators.families.equilibrium_parts import (
    BUFFER_COLUMNS,
    BUFFER_SETS,
    HELD_OUT_COMBINATIONS,
    HELD_OUT_INDICATORS,
    INDICATOR,
    INDICATORS,
    PKA_SPREAD,
    PKA_TRUNCATE,
    PURE_UNITS,
    indicator,
    screens_of,
)
from labtools.simulators.families.parts import HELD_OUT_PAIRS, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import SAMPLE, WATER
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "DISTANCE",
    "LOT_EPSILON_SD",
    "LOT_SHIFT_NM_SD",
    "PH_BUFFER_SETS",
    "PROCESS_WEIGHT",
    "SAMPLE_KEY",
    "SCALE",
    "SCREEN_DOSE",
    "SIDES",
    "buffer_containers",
    "fits",
    "held_out",
    "rubric",
    "structures",
]

#: which of the library's pH 2-11 buffers a structure puts on the deck: seven one unit apart
#: (columns A3-A9: A10 holds the sample) or equilibrium's five two units apart [A]
PH_BUFFER_SETS: dict[str, tuple[int, ...]] = {
    "ph2-8": tuple(range(2, 9)),
    "ph3-9": tuple(range(3, 10)),
    "ph4-10": tuple(range(4, 11)),
    "ph5-11": tuple(range(5, 12)),
    "ph2-10by2": BUFFER_SETS["ph2-10by2"],
    "ph3-11by2": BUFFER_SETS["ph3-11by2"],
}
#: the side of the indicator's apparent pKa the sample's pH lies on: the statement says which
#: form the sample turns the indicator mostly into (what one look at its colour tells) [A]
SIDES = ("acid", "base")
#: the sample's pH lies this far from the indicator's apparent pKa (pH units, uniform within),
#: by level [A: level 1 inside the useful range pKa ± 1, where both forms read; level 5 at and
#: past its edge, where the minor form is 6-14 % of the indicator and its band nears the noise]
DISTANCE = {1: (0.0, 0.4), 2: (0.2, 0.6), 3: (0.4, 0.8), 4: (0.6, 1.0), 5: (0.8, 1.2)}
#: the indicator lot's ε, per form (relative, 1 sd), and its bands' shift (nm, 1 sd) [A: as the
#: library's food-dye batches (species.toml: 3 %, 1 nm); unpurified indicator lots carry
#: absorbing impurities that bias the ratio method (m-cresol purple: Liu, Patsavas & Byrne
#: 2011, Environ. Sci. Technol. 45, 4862 [L]), so the forms are drawn each on its own]
LOT_EPSILON_SD = 0.03
LOT_SHIFT_NM_SD = 1.0
#: a screen in the sample absorbs this share of the stock's overlapped form read 1 in 10 (times
#: the level's ``interferent_ratio``) [A: equilibrium's dose]
SCREEN_DOSE = 0.1
#: the sample's buffer in the world's library (its pH drawn per seed)
SAMPLE_KEY = "ph_sample_buffer"
#: the score's scale in pH units [A: equilibrium's 0.05: buffers labelled ±0.02 let the
#: calibrated method reach 0.01-0.03 (the expert's median error is 0.010-0.023 over levels 1-5
#: [M: seeds 0-39]), and the apparent pKa's published spread (PKA_SPREAD, 0.2) then scores
#: near 0]
SCALE = 0.05
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6


def buffer_containers(buffers: str) -> dict[str, int]:
    """Container → labelled pH of the set ``buffers``, most acidic first."""
    return dict(zip(BUFFER_COLUMNS, PH_BUFFER_SETS[buffers], strict=False))


def fits(indicator_key: str, buffers: str) -> bool:
    """Whether ``buffers`` hold a buffer :data:`PURE_UNITS` below and one above every pKa the
    indicator may have (equilibrium's rule, :func:`~.equilibrium_parts.buffers_fit`)."""
    margin = PURE_UNITS + PKA_TRUNCATE * PKA_SPREAD
    pka = indicator(indicator_key).pka
    phs = PH_BUFFER_SETS[buffers]
    return min(phs) <= pka - margin and max(phs) >= pka + margin


def _spacing(buffers: str) -> str:
    phs = PH_BUFFER_SETS[buffers]
    return "sparse" if phs[1] - phs[0] > 1 else "full"


@functools.cache
def structures() -> tuple[str, ...]:
    """``<indicator>[+<screen>]+<buffers>+<side>``: screen by screen (none first), buffer set
    by buffer set, indicator by indicator, side by side."""
    from labtools.simulators.families.parts import ANALYTES

    screens = {key: set(screens_of(key)) for key in INDICATORS}
    out = []
    for screen in (None, *ANALYTES):
        for buffers in PH_BUFFER_SETS:
            for key in INDICATORS:
                if not fits(key, buffers) or (screen is not None and screen not in screens[key]):
                    continue
                middle = key if screen is None else f"{key}+{screen}"
                out += [f"{middle}+{buffers}+{side}" for side in SIDES]
    return tuple(out)


def held_out(structure: str) -> bool:
    """Equilibrium's rule: a held-out species (:data:`~.parts.HELD_OUT_SPECIES`, or
    :data:`~.equilibrium_parts.HELD_OUT_INDICATORS`), a held-out pair of classes, or a screen's
    class with the buffers' spacing never combined in training."""
    keys = structure.split("+")
    species = keys[:-2]
    if (HELD_OUT_SPECIES | HELD_OUT_INDICATORS) & set(species):
        return True
    kinds = {SpeciesLibrary.default()[k].kind for k in species}
    if any(pair <= kinds for pair in HELD_OUT_PAIRS):
        return True
    screen_kind = analyte(keys[1]).kind if len(keys) == 4 else None
    return (screen_kind, _spacing(keys[-2])) in HELD_OUT_COMBINATIONS


# -- the rubric --------------------------------------------------------------------------------
def _apparent_pka(episode: Episode, instance: str) -> float | None:
    hidden = getattr(episode.shared.get("world"), "hidden_truth", None)
    truth = hidden().get(f"task/{instance}") if callable(hidden) else None
    return float(truth["pka"]) if isinstance(truth, Mapping) and "pka" in truth else None


def _pure_forms(episode: Episode, labelled: Mapping[str, float], pka: float) -> float:
    """Half for the indicator read in a buffer at least :data:`PURE_UNITS` below ``pka``, half
    for one that far above."""
    phs = []
    for reading in episode.of([INDICATOR]):
        held = [(reading.contents.get(c, 0.0), c) for c in labelled]
        volume, container = max(held, default=(0.0, ""))
        if volume > 0:
            phs.append(labelled[container])
    return 0.5 * any(p <= pka - PURE_UNITS for p in phs) + 0.5 * any(
        p >= pka + PURE_UNITS for p in phs
    )


def _transition(episode: Episode, labelled: Mapping[str, float], pka: float) -> float:
    """1 if the indicator was read in a buffer within a unit of ``pka`` (both forms there: the
    readings that pin the apparent pKa), else 0."""
    near = [c for c, p in labelled.items() if abs(p - pka) <= 1.0]
    return float(any(r.holds(near) for r in episode.of([INDICATOR])))


def _sample_replicates(episode: Episode) -> float:
    """Wells of the indicator in the sample: (n − 1)/2 for n of them, at most 1."""
    wells = {r.well for r in episode.of([INDICATOR]) if r.holds([SAMPLE])}
    return min(1.0, max(len(wells) - 1, 0) / 2.0)


def rubric(instance: str, labelled: Mapping[str, float]) -> Rubric:
    """The process: a blank (the sample without indicator counts), the indicator's calibration
    in the buffers (both pure forms, the transition), replicates."""

    def calibration(episode: Episode) -> float:
        pka = _apparent_pka(episode, instance)
        if pka is None:
            return 0.0
        return (2.0 * _pure_forms(episode, labelled, pka) + _transition(episode, labelled, pka)) / 3

    solvents = (WATER, SAMPLE, *labelled)
    return Rubric(
        (
            Component(
                "blank",
                0.2,
                lambda e: blanks(e, [INDICATOR], solvents),
                "a water, buffer, sample or empty-well blank on each plate the indicator was "
                "read on",
            ),
            Component(
                "calibration",
                0.4,
                calibration,
                "the indicator read in the lab's buffers: all in its acid form (a buffer ≥ 1.28 "
                "pH units below its pKa), all in its base form (≥ 1.28 above), and in a buffer "
                "within a unit of its pKa: a third each",
            ),
            Component(
                "replicates",
                0.2,
                lambda e: replicates(e, [INDICATOR], copies=3, conditions=3),
                "three indicator-in-buffer conditions in triplicate",
            ),
            Component(
                "sample_replicates",
                0.2,
                _sample_replicates,
                "the indicator in the sample in three wells",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
    )
