"""The parts families are made of: analytes from the species library, and which of them (and
which combinations) the out-of-distribution split keeps.

An *analyte* here is a species read by its absorbance in water whatever the pH (one form),
with a band the plate reader resolves in a 96-well plate: its peak between
:data:`PEAK_NM` and ε at the peak of at least :data:`EPSILON_MIN`. Its *class* (``dye``,
``cofactor``, ``fluorophore``, ...) is the library's ``kind``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "ANALYTES",
    "EPSILON_MIN",
    "HELD_OUT_PAIRS",
    "HELD_OUT_SPECIES",
    "PEAK_NM",
    "Analyte",
    "alike",
    "analyte",
    "overlap",
]

#: the analytes, in a fixed order (instance names depend on it) [A: every one-form species of
#: the library that the criteria below admit]
ANALYTES = (
    "tartrazine",
    "sunset_yellow",
    "allura_red",
    "brilliant_blue",
    "nadh",
    "fluorescein",
    "erythrosine",
    "ponceau_4r",
    "carmoisine",
    "indigo_carmine",
    "patent_blue_v",
    "quinoline_yellow",
    "nadph",
    "fmn",
    "p_nitroaniline",
    "tnb",
    "rhodamine_b",
    "rhodamine_6g",
    "eosin_y",
    "sulforhodamine_b",
    "methylene_blue",
    "crystal_violet",
    "malachite_green",
    "quinine_sulfate",
)
#: a band the plate reader resolves above the plastic's own absorption (polystyrene absorbs
#: below ~320 nm [L]) and within its range (nm)
PEAK_NM = (330.0, 750.0)
#: at least this ε at the peak (M⁻¹ cm⁻¹): 1 µM reads 0.003 OD over 0.6 cm, three times the
#: reader's 0.001 OD noise floor [C]
EPSILON_MIN = 5000.0
#: species only the ``test-ood`` split contains [A: a sixth of the analytes, one of each
#: class with more than one member]
HELD_OUT_SPECIES = frozenset({"allura_red", "eosin_y", "fmn", "tnb"})
#: classes never paired in training, paired only in ``test-ood`` (compositional: each class
#: is seen, the combination is not) [A]
HELD_OUT_PAIRS = frozenset({frozenset({"cofactor", "fluorophore"})})


@dataclass(frozen=True)
class Analyte:
    """What the package says of an analyte: the library's (a published reference), not a
    lot's."""

    key: str
    name: str
    kind: str
    peak_nm: float
    epsilon: float  # at the peak, M⁻¹ cm⁻¹


@functools.cache
def analyte(key: str) -> Analyte:
    """The library's figures of ``key`` (checked against the analyte criteria)."""
    species = SpeciesLibrary.default()[key]
    if set(species.forms) != {"default"}:
        raise ValueError(f"{key} has a pH-dependent form: not an analyte read in water")
    form = species.forms["default"]
    grid = np.arange(PEAK_NM[0], PEAK_NM[1] + 0.5, 1.0)
    spectrum = form.absorptivity(grid)
    peak = float(grid[int(np.argmax(spectrum))])
    epsilon = float(spectrum.max())
    if not PEAK_NM[0] < peak < PEAK_NM[1] or epsilon < EPSILON_MIN:
        raise ValueError(f"{key}: peak {peak:g} nm, ε {epsilon:.0f}: not an analyte")
    return Analyte(key, species.name, species.kind, peak, epsilon)


def alike(key: str, other: str) -> float:
    """How alike two analytes' spectra are over :data:`PEAK_NM` (the cosine of the angle
    between them, 0-1): near 1, no spectrum tells one from the other (NADH and NADPH)."""
    library = SpeciesLibrary.default()
    grid = np.arange(PEAK_NM[0], PEAK_NM[1] + 0.5, 2.0)
    a, b = (np.asarray(library[k].absorptivity(grid), dtype=float) for k in (key, other))
    return float(a @ b / math.sqrt(float(a @ a) * float(b @ b)))


def overlap(key: str, other: str) -> float:
    """``other``'s absorbance at ``key``'s peak, relative to its own peak: how much it
    interferes with a reading of ``key`` at its peak (0-1)."""
    a, b = analyte(key), analyte(other)
    species = SpeciesLibrary.default()[other]
    return float(species.absorptivity(a.peak_nm)) / b.epsilon
