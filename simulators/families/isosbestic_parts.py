"""The ``isosbestic`` family's parts: the indicators and buffer sets of the ``ph`` family
(:mod:`.ph_parts`, :mod:`.equilibrium_parts`), the stock's certified label, each level's stock
strength at the crossing, the score's scales (from the lot's spread), the structures and which
of them are held out, and the process rubric."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from labtools.session.process import Component, Episode, Rubric, blanks, replicates
from labtools.simulators.families.equilibrium_parts import (
    HELD_OUT_INDICATORS,
    INDICATOR,
    INDICATORS,
    PURE_UNITS,
)
from labtools.simulators.families.parts import HELD_OUT_SPECIES
from labtools.simulators.families.ph_parts import PH_BUFFER_SETS, fits
from labtools.simulators.families.task import WATER, WELL_UL
from labtools.simulators.tasks.scripting import nominal_path_cm
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.hidden_species import isosbestic_nm
from labtools.simulators.world.species import Species

__all__ = [
    "ISO_OD",
    "LOT_ISO_SD_NM",
    "PROCESS_WEIGHT",
    "SCALE_LN_EPSILON",
    "SCALE_NM",
    "SHALLOW",
    "STOCK_TOLERANCE",
    "crossing",
    "held_out",
    "library_crossing",
    "rubric",
    "shallow_slope",
    "stock_label_um",
    "structures",
]

#: the stock's optical density neat in a 200 µL well at the library's isosbestic point (library
#: ε, nominal path), by level: its label is set from it [A: level 1 diluted to read the
#: crossing near 0.2-0.5 OD with the bands on scale; level 5 read with half a well of stock
#: at 0.03-0.05 OD, ten to fifteen times its tripled 0.003 OD noise floor]
ISO_OD = {1: 2.0, 2: 1.2, 3: 0.6, 4: 0.3, 5: 0.12}
#: the indicator stock's certified tolerance (1 sd, relative) [A: as the families' certified
#: standards (task.STANDARD_TOLERANCE): the expanded 2 % (k = 2) of a certificate]
STOCK_TOLERANCE = 0.01
#: the lot's isosbestic point off the library's (nm, 1 sd) [C: the ph family's lot spread
#: (each form's ε ×exp(0.03 N), both bands shifted 1 nm, 1 sd: ph_parts.LOT_EPSILON_SD,
#: LOT_SHIFT_NM_SD) moves the crossing of the six indicators by 1.01-1.33 nm (sd, 400 draws
#: each); the bands' common shift gives 0.94-1.10 nm of it, the forms' ε 0.33-0.69 nm]
LOT_ISO_SD_NM = 1.1
#: the wavelength's scale (nm) [A: half the lot's spread (LOT_ISO_SD_NM): the library's point,
#: stated with the lot's spread, scores 0.31-0.42 on this term (mean over 400 lots per
#: indicator [C]); at 1 nm it would score 0.52-0.60, the library answering the question]
SCALE_NM = 0.5
#: the absorptivity's scale (natural log) [A: 5 %; the certified stock (1 %), the reader's gain
#: (±0.6 %) and the doses let a calibrated reading reach 1-2 %; the lot moves ε at the crossing
#: by 2-3 % (1 sd [C]), an unblanked plate by 5-20 %]
SCALE_LN_EPSILON = 0.05
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: indicators whose forms' spectra cross at a small angle: the difference of their ε changes by
#: under 8 % of ε per nm at the crossing [C: phenol red 6.2 %, cresol red 6.1 %; the others
#: 10-13 %]
SHALLOW = frozenset({"phenol_red", "cresol_red"})


def _spacing(buffers: str) -> str:
    phs = PH_BUFFER_SETS[buffers]
    return "sparse" if phs[1] - phs[0] > 1 else "full"


@functools.cache
def structures() -> tuple[str, ...]:
    """``<indicator>+<buffers>``: buffer set by buffer set (ph's sets that hold both pure
    forms, :func:`~.ph_parts.fits`), indicator by indicator."""
    return tuple(
        f"{key}+{buffers}" for buffers in PH_BUFFER_SETS for key in INDICATORS if fits(key, buffers)
    )


def held_out(structure: str) -> bool:
    """A held-out indicator (:data:`~.equilibrium_parts.HELD_OUT_INDICATORS`,
    :data:`~.parts.HELD_OUT_SPECIES`), or a shallow crossing (:data:`SHALLOW`) read in the
    sparse buffers (two pH units apart): each seen in training, never together [A]."""
    key, buffers = structure.split("+")
    if key in HELD_OUT_INDICATORS | HELD_OUT_SPECIES:
        return True
    return key in SHALLOW and _spacing(buffers) == "sparse"


def crossing(species: Species, near: float | None = None) -> tuple[float, float]:
    """Where ``species``' two forms' spectra cross (nm, refined by the secant method to 1e-6
    nm): between their peaks (:func:`~labtools.simulators.world.hidden_species.isosbestic_nm`)
    or, given ``near``, the crossing nearest it (a lot's, nearest the library's); and their ε
    there (M⁻¹ cm⁻¹)."""
    acid, base = species.forms["acid"], species.forms["base"]

    def gap(x: float) -> float:
        at = np.array([x])
        return float(acid.absorptivity(at)[0] - base.absorptivity(at)[0])

    if near is None:
        rough = isosbestic_nm(species)
        if rough is None:
            raise ValueError(f"{species.key}: its forms' spectra do not cross once")
    else:
        grid = np.arange(near - 15.0, near + 15.05, 0.1)
        d = acid.absorptivity(grid) - base.absorptivity(grid)
        changes = np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))
        if changes.size == 0:
            raise ValueError(f"{species.key}: its forms' spectra do not cross near {near} nm")
        rough = float(grid[changes[np.argmin(np.abs(grid[changes] - near))]])
    x0, x1 = rough - 0.25, rough + 0.25
    for _ in range(50):
        g0, g1 = gap(x0), gap(x1)
        if g1 == g0:
            break
        x0, x1 = x1, x1 - g1 * (x1 - x0) / (g1 - g0)
        if abs(x1 - x0) < 1e-6:
            break
    return x1, float(acid.absorptivity(np.array([x1]))[0])


@functools.cache
def library_crossing(key: str) -> tuple[float, float]:
    """The library's isosbestic point of ``key`` (nm) and ε there: the published figures."""
    return crossing(SpeciesLibrary.default()[key])


def stock_label_um(key: str, level: int) -> float:
    """The stock's labelled concentration (µM): :data:`ISO_OD` at the library's crossing in a
    200 µL well, two significant figures."""
    exact = ISO_OD[level] / (library_crossing(key)[1] * nominal_path_cm(WELL_UL)) * 1e6
    return float(f"{exact:.2g}")


# -- the rubric --------------------------------------------------------------------------------
def _apparent_pka(episode: Episode, instance: str) -> float | None:
    hidden = getattr(episode.shared.get("world"), "hidden_truth", None)
    truth = hidden().get(f"task/{instance}") if callable(hidden) else None
    return float(truth["pka"]) if isinstance(truth, Mapping) and "pka" in truth else None


def _pure_forms(episode: Episode, labelled: Mapping[str, float], pka: float) -> float:
    """Half for the indicator read in a buffer at least :data:`PURE_UNITS` below ``pka``, half
    for one that far above: the pair whose spectra cross at the widest angle."""
    phs = []
    for reading in episode.of([INDICATOR]):
        held = [(reading.contents.get(c, 0.0), c) for c in labelled]
        volume, container = max(held, default=(0.0, ""))
        if volume > 0:
            phs.append(labelled[container])
    return 0.5 * any(p <= pka - PURE_UNITS for p in phs) + 0.5 * any(
        p >= pka + PURE_UNITS for p in phs
    )


def rubric(instance: str, labelled: Mapping[str, float]) -> Rubric:
    """The process: a blank, the indicator read in both pure forms, replicates."""

    def forms(episode: Episode) -> float:
        pka = _apparent_pka(episode, instance)
        return 0.0 if pka is None else _pure_forms(episode, labelled, pka)

    return Rubric(
        (
            Component(
                "blank",
                0.3,
                lambda e: blanks(e, [INDICATOR], (WATER, *labelled)),
                "a water, buffer or empty-well blank on each plate the indicator was read on",
            ),
            Component(
                "pure_forms",
                0.4,
                forms,
                "the indicator read in a buffer where it is all in its acid form (≥ 1.28 pH "
                "units below its pKa) and in one where it is all in its base form: half each",
            ),
            Component(
                "replicates",
                0.3,
                lambda e: replicates(e, [INDICATOR], copies=3, conditions=2),
                "two indicator-in-buffer conditions in triplicate",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainties are scored by the outcome itself (CRPS, strictly proper).",
    )


def shallow_slope(key: str) -> float:
    """How fast the forms' ε difference changes at the library's crossing, relative to ε there
    (per nm) [C]: what :data:`SHALLOW` is chosen by."""
    species = SpeciesLibrary.default()[key]
    at, eps = library_crossing(key)
    x = np.array([at - 0.5, at + 0.5])
    d = species.forms["acid"].absorptivity(x) - species.forms["base"].absorptivity(x)
    return abs(float(d[1] - d[0])) / eps if math.isfinite(eps) and eps > 0 else math.inf
