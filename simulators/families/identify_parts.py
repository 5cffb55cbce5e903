"""The ``identify`` family's parts: the sample's matrix, the levels, the panels of candidates
and what the process rubric checks.

A *panel* is an analyte of :data:`~.parts.ANALYTES` and, most alike to it first, the analytes
that keep every two of the panel at most :data:`ALIKE_MAX` alike (:func:`panel`): its anchor's
nearest look-alikes. Every anchor's panel of each of :data:`SIZES` is a structure
(:func:`structures`), a held-out species' (:data:`~.parts.HELD_OUT_SPECIES`) drawn from every
analyte, the others' from the analytes that train, so that only ``test-ood`` ever lists a
held-out species.

The *matrix* is a brown river water: its humic matter (``humic_acid`` in ``species.toml``)
absorbs without a band, rising into the UV, in the sample and in its blank alike.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labtools.session.process import Component, Episode, Rubric, usable_reading
from labtools.session.process import replicates as replicated
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.mixture import ALIKE_MAX
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, alike
from labtools.simulators.families.task import SAMPLE, WATER
from labtools.simulators.world.species import Band, Species

__all__ = [
    "ALIKE_MAX",
    "LEVEL",
    "MATRIX",
    "MATRIX_KEY",
    "MATRIX_NM",
    "RUBRIC",
    "SHIFT_TRUNCATE",
    "SIZES",
    "STATED_SHIFT_NM",
    "IdentifyLevel",
    "lot",
    "moved",
    "panel",
    "structures",
]

#: the sample's matrix without the unknown (a blank of it)
MATRIX = "reservoir:A2"
#: the matrix's absorber: river water's humic matter (``species.toml``)
MATRIX_KEY = "humic_acid"
#: the wavelength the matrix's share is set at (nm) [A: a CDOM absorption is quoted at one
#: fixed wavelength, as a(400) or a(440) [L]]
MATRIX_NM = 400.0
#: candidates per panel [A: from a short list to half the analytes]
SIZES = (3, 5, 8, 12)
#: the drawn shift is kept within this many sd [A, as equilibrium's pKa]
SHIFT_TRUNCATE = 2.5
#: how far the statement says a band may move (nm) [C: the widest level's 6 nm × 2.5, the
#: lot's 1 nm beside it]
STATED_SHIFT_NM = 15
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6
#: a spectrum of this many wavelengths or more reads the sample "whole" [A: 330-730 nm every
#: 10 nm is 41; three quarters of it]
WHOLE_SPECTRUM = 31


@dataclass(frozen=True)
class IdentifyLevel(Level):
    """A level's physics and budget: the shared level's, ``interferent_ratio`` being the
    matrix's optical density at :data:`MATRIX_NM` over the unknown's at its peak, and
    ``shift_nm`` the matrix's band shift (1 sd, nm)."""

    shift_nm: float = 0.0


#: each level: the shared optical densities, noise and budget; the matrix's share [A: half to
#: one and a half times the unknown at level 1, up to four times a faint one at 5: at level 1
#: the matrix alone reads up to ~9 OD at 330 nm neat, so the sample must be diluted]; the
#: matrix's band shift [A: dyes' bands move by a few nm to tens of nm between media and on
#: binding (solvatochromism; bromocresol purple's band moves from 584 to 613 nm bound to human
#: serum albumin above pH 6 [V: Eureka Select article 67148, abstract]; bromophenol blue's
#: shifts to the red on albumins [V: Kim, Abdul Kadir & Tayyab 2008, Pak. J. Biol. Sci. 11,
#: 2418, abstract]): 2 nm at level 1 to 6 nm at 5, well within those]
LEVEL = {
    n: IdentifyLevel(
        n,
        SHARED_LEVEL[n].od,
        ratio,
        SHARED_LEVEL[n].noise,
        SHARED_LEVEL[n].budget,
        shift_nm=shift,
    )
    for n, ratio, shift in (
        (1, (0.5, 1.5), 2.0),
        (2, (0.7, 2.0), 3.0),
        (3, (1.0, 2.5), 4.0),
        (4, (1.2, 3.0), 5.0),
        (5, (1.5, 4.0), 6.0),
    )
}


def _matrix_blanks(episode: Episode) -> float:
    """The share of plates with readings of the sample on which the matrix was read alone (with
    water, but without the sample)."""
    plates = {r.well.partition(":")[0] for r in episode.of([SAMPLE])}
    if not plates:
        return 0.0
    blanked = {
        r.well.partition(":")[0]
        for r in episode.readings
        if r.holds([MATRIX]) and r.only([MATRIX, WATER])
    }
    return len(plates & blanked) / len(plates)


def _whole(episode: Episode) -> float:
    """1 if the sample was read as a spectrum of :data:`WHOLE_SPECTRUM` wavelengths or more."""
    return float(
        any(r.mode == "spectrum" and len(r.values) >= WHOLE_SPECTRUM for r in episode.of([SAMPLE]))
    )


#: the process rubric [A: the weights: the matrix blank, the control the outcome hangs on, most]
RUBRIC = Rubric(
    (
        Component(
            "matrix_blank",
            0.3,
            _matrix_blanks,
            "the matrix (river water without the unknown) read alone on each plate the sample "
            "was read on",
        ),
        Component("spectrum", 0.2, _whole, "the sample's spectrum read whole (31 wavelengths)"),
        Component(
            "replicates",
            0.25,
            lambda e: replicated(e, [SAMPLE], copies=3),
            "the sample in three wells of one condition (two: half)",
        ),
        Component(
            "linear_range",
            0.25,
            lambda e: usable_reading(e, [SAMPLE]),
            "a reading of the sample (a spectrum by its peak) within 0.1–2.0 OD",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The probabilities are scored by the outcome itself (the log score, floored at 0).",
)


def lot(hidden: Mapping[str, Any], key: str) -> tuple[float, float]:
    """The ε factor and band shift (nm) of ``key``'s lot in a world's hidden truth (the
    library's own, 1 and 0, for a species not drawn in lots)."""
    drawn = hidden.get(f"batch/{key}")
    return (float(drawn[0]), float(drawn[1])) if drawn is not None else (1.0, 0.0)


def moved(species: Species, factor: float, shift_nm: float) -> Species:
    """``species`` with ε × ``factor`` and every band moved ``shift_nm`` to the red, each band
    keeping its height and its width in wavenumber."""
    forms = {
        name: dataclasses.replace(
            form,
            lambda_max_nm=form.lambda_max_nm + shift_nm,
            epsilon=form.epsilon * factor,
            bands=tuple(Band(b.center_nm + shift_nm, b.fwhm_cm1, b.weight) for b in form.bands),
        )
        for name, form in species.forms.items()
    }
    return dataclasses.replace(species, forms=forms)


def panel(anchor: str, size: int, pool: Sequence[str]) -> tuple[str, ...] | None:
    """``anchor`` and, most alike to it first (ties in :data:`~.parts.ANALYTES` order), the
    analytes of ``pool`` at most :data:`ALIKE_MAX` alike to every one taken: ``size`` of them
    in ``ANALYTES`` order, or ``None`` if the pool holds too few."""
    chosen = [anchor]
    ranked = sorted((k for k in pool if k != anchor), key=lambda k: -alike(anchor, k))
    for key in ranked:
        if len(chosen) == size:
            break
        if all(alike(key, other) <= ALIKE_MAX for other in chosen):
            chosen.append(key)
    if len(chosen) < size:
        return None
    return tuple(sorted(chosen, key=ANALYTES.index))


@functools.cache
def structures() -> list[str]:
    """Every anchor's panel of every size (a held-out anchor's from every analyte, the others'
    from the analytes that train), each once; size by size in turn, so that any stretch of the
    list spans the sizes."""
    training = [k for k in ANALYTES if k not in HELD_OUT_SPECIES]
    by_size: dict[int, list[str]] = {}
    for size in SIZES:
        seen: list[str] = []
        for anchor in ANALYTES:
            pool = ANALYTES if anchor in HELD_OUT_SPECIES else training
            found = panel(anchor, size, pool)
            name = None if found is None else "+".join(found)
            if name is not None and name not in seen:
                seen.append(name)
        by_size[size] = seen
    out: list[str] = []
    for i in range(max(len(v) for v in by_size.values())):
        for j, size in enumerate(SIZES):
            names = by_size[size]
            if i < len(names):
                out.append(names[(i + 5 * j) % len(names)])
    return list(dict.fromkeys(out))
