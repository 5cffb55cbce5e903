"""The ``fluorimetry`` family's parts: the fluorophores, the coloured matrices that filter their
light, the levels, the fluorophore's lot and what the process rubric checks.

A *fluorophore* is an analyte of :data:`~.parts.ANALYTES` the species library gives an emission
for, of the classes ``fluorophore`` and ``cofactor`` (fluorescein, the rhodamines, eosin Y,
sulforhodamine B, quinine sulfate; NADH, NADPH and FMN): erythrosine and methylene blue, dyes
whose yields are a few per cent, are left out. A *matrix* is an analyte with no emission in the
library that absorbs at the fluorophore's excitation or emission wavelength at least
:data:`MATRIX_MIN` of its own peak (:func:`filters`): in the sample it is an inner filter, the
same in a spike of standard added to the sample and absent from a standard in water.

The *nominal* signal (:func:`nominal_rfu_per_um`) is what the package says a micromolar of the
fluorophore reads neat in a 200 µL Corning 96 flat well at the reader's own gain and read
height: the library's ε at the excitation, quantum yield and emission, the published reader's
fluorescein calibration and focal geometry, no inner filter and no background.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from labtools.session import Budget
from labtools.session.process import Component, Episode, Rubric, blanks
from labtools.session.process import replicates as replicated
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import ANALYTES, analyte
from labtools.simulators.families.task import SAMPLE, STANDARDS, WATER
from labtools.simulators.plate_reading.fluorescence import (
    FLUORESCEIN_REFERENCE,
    collected_cm,
    reference_collected_cm,
)
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.species import Species

__all__ = [
    "DEFAULT_FOCAL_MM",
    "FLUOROPHORES",
    "LEVEL",
    "LOT",
    "MATRICES",
    "MATRIX_MIN",
    "PROCESS_WEIGHT",
    "RUBRIC",
    "STANDARD",
    "FluorimetryLevel",
    "Lot",
    "filters",
    "matrix_od",
    "nominal_rfu_per_um",
    "of_lot",
    "optics",
    "structures",
]

STANDARD = STANDARDS[0]
#: the classes whose emitting analytes are fluorophores here [A: the dyes with an emission in the
#: library, erythrosine (Φ 0.08) and methylene blue (0.04), are used as dyes, not as labels]
CLASSES = ("fluorophore", "cofactor")
#: a matrix absorbs at the fluorophore's excitation or emission at least this share of its own
#: peak [A: so that an inner filter of a few tenths of an OD takes a matrix of comparable OD]
MATRIX_MIN = 0.3
#: the reader's own read height (mm above the plate's underside), where the nominal signal is
#: taken [V: the simulated reader's DEFAULT_FOCAL_HEIGHT_MM]
DEFAULT_FOCAL_MM = 8.5
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6

FLUOROPHORES = tuple(
    k
    for k in ANALYTES
    if SpeciesLibrary.default()[k].fluorescence is not None and analyte(k).kind in CLASSES
)
MATRICES = tuple(k for k in ANALYTES if SpeciesLibrary.default()[k].fluorescence is None)


def optics(key: str) -> tuple[int, int]:
    """The excitation and emission wavelengths (nm, whole) a reading of ``key`` uses: the
    library's maxima."""
    fluorescence = SpeciesLibrary.default()[key].fluorescence
    if fluorescence is None:
        raise ValueError(f"{key} has no emission in the species library")
    return round(fluorescence.excitation_nm), round(fluorescence.emission_nm)


def matrix_od(key: str, matrix: str) -> float:
    """The matrix's optical density per molar over 1 cm at the fluorophore's excitation plus
    at its emission (M⁻¹ cm⁻¹): what filters its light."""
    ex, em = optics(key)
    species = SpeciesLibrary.default()[matrix]
    return float(species.absorptivity(float(ex))) + float(species.absorptivity(float(em)))


def filters(key: str, matrix: str) -> bool:
    """Whether ``matrix`` absorbs at ``key``'s excitation or emission at least
    :data:`MATRIX_MIN` of its own peak."""
    ex, em = optics(key)
    species = SpeciesLibrary.default()[matrix]
    peak = analyte(matrix).epsilon
    return max(float(species.absorptivity(float(w))) for w in (ex, em)) >= MATRIX_MIN * peak


@functools.cache
def structures() -> list[str]:
    """Every fluorophore with every matrix that filters it, fluorophore by fluorophore."""
    return [f"{k}+{m}" for k in FLUOROPHORES for m in MATRICES if filters(k, m)]


@functools.cache
def nominal_rfu_per_um(key: str) -> float:
    """RFU per µM of ``key`` neat in a 200 µL well at the reader's own gain and read height, as
    the package gives it (library ε, Φ and emission, published reader constants and geometry;
    no inner filter, no background)."""
    from labtools.simulators.tasks.scripting import nominal_layout

    species = SpeciesLibrary.default()[key]
    fluorescence = species.fluorescence
    if fluorescence is None:
        raise ValueError(f"{key!r} has no fluorescence in the species library")
    ex, em = optics(key)
    k = ReaderConstants()
    layout = nominal_layout()
    column = layout.column_mm(np.array([200.0]))
    focus = np.array([DEFAULT_FOCAL_MM - layout.bottom_mm])
    path = float(collected_cm(np.array([0.0]), column, focus, k.focal_half_width_mm)[0])
    epsilon, quantum_yield = FLUORESCEIN_REFERENCE
    per_unit = k.rfu_per_nm_fluorescein / (epsilon * 1e-9 * quantum_yield)
    per_unit /= reference_collected_cm(k)
    brightness = float(species.absorptivity(float(ex))) * fluorescence.quantum_yield
    return per_unit * brightness * fluorescence.emission(float(em)) * path * 1e-6


# -- the fluorophore's lot ----------------------------------------------------------------------
@dataclass(frozen=True)
class Lot:
    """How a lot of a fluorophore differs from the library's entry (1 sd, relative, log-normal):
    its ε (the dye content and form of the lot) and its quantum yield."""

    #: [L: published ε of one fluorophore scatter by 5-20 % between sources: rhodamine 6G
    #: 116,000 and 94,000, eosin Y 91,500 and 86,500, FMN/riboflavin 12,200-12,500 (the
    #: records in species.toml); commercial lots are sold by dye content, ≥ 90-95 % (not
    #: re-checked)]
    epsilon_sd: float = 0.05
    #: [L: published yields of one fluorophore scatter: quinine sulfate 0.51-0.58 in sulfuric
    #: acid, fluorescein 0.79-0.95 in base, rhodamine B 0.31 in water against 0.7 in ethanol
    #: (not re-checked); the library's yield is one source's]
    yield_sd: float = 0.05

    def draw(self, rng: np.random.Generator) -> tuple[float, float]:
        """A lot's ε factor and quantum-yield factor."""
        return (
            math.exp(self.epsilon_sd * float(rng.standard_normal())),
            math.exp(self.yield_sd * float(rng.standard_normal())),
        )


LOT = Lot()


def of_lot(species: Species, epsilon_factor: float, yield_factor: float) -> Species:
    """``species`` as one lot: every form's ε × ``epsilon_factor`` and its quantum yield ×
    ``yield_factor`` (at most 1)."""
    fluorescence = species.fluorescence
    if fluorescence is None:
        raise ValueError(f"{species.key!r} has no fluorescence in the species library")
    varied = dataclasses.replace(
        fluorescence, quantum_yield=min(1.0, fluorescence.quantum_yield * yield_factor)
    )
    return dataclasses.replace(species.batch_of(epsilon_factor, 0.0), fluorescence=varied)


# -- levels -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FluorimetryLevel(Level):
    """A level's physics and budget: ``od`` unused; ``signal`` the sample's nominal signal neat
    (RFU, :func:`nominal_rfu_per_um`), ``interferent_ratio`` unused, ``filter_od`` the
    matrix's optical density neat in a 200 µL well at the excitation plus at the emission
    (log-uniform within both); ``noise`` the factor on the reader's fluorescence noise floor."""

    signal: tuple[float, float] = (1.0, 1.0)
    filter_od: tuple[float, float] = (0.0, 0.0)


#: each level [A]: the sample's nominal signal neat, from past the detector's ceiling (1e6 RFU
#: at the reader's own gain: the sample must be diluted, and its own inner filter bends its
#: reading) to a few times the plate's autofluorescence floor (10-30 RFU: its limit of
#: detection); the matrix's inner filter neat, from a few per cent of the light (standards in
#: water serve) to most of it; the reader's noise floor as the shared levels'; the budget a
#: little above the shared levels' wells (a survey, standard additions, blanks)
LEVEL = {
    n: FluorimetryLevel(
        n,
        (0.0, 0.0),
        (0.0, 0.0),
        SHARED_LEVEL[n].noise,
        budget,
        signal=signal,
        filter_od=filter_od,
    )
    for n, signal, filter_od, budget in (
        (1, (2e5, 2e6), (0.01, 0.05), Budget(calls=150, tips=96, reagent_ul=10_000, wells=96)),
        (2, (1e4, 1e5), (0.05, 0.2), Budget(calls=120, tips=64, reagent_ul=9000, wells=72)),
        (3, (1e3, 1e4), (0.2, 0.6), Budget(calls=100, tips=48, reagent_ul=8000, wells=48)),
        (4, (200.0, 1500.0), (0.4, 1.0), Budget(calls=80, tips=40, reagent_ul=7000, wells=40)),
        (5, (50.0, 300.0), (0.6, 1.5), Budget(calls=60, tips=32, reagent_ul=7000, wells=32)),
    )
}


# -- the process rubric -------------------------------------------------------------------------
def _additions(episode: Episode) -> float:
    """Standard additions: distinct shares of the standard among fluorescence readings of
    wells that hold the sample (no standard counts as one), out of four."""
    shares = {
        f"{r.fraction(STANDARD):.2g}"
        for r in episode.of([SAMPLE], "fluorescence")
        if r.contents.get(SAMPLE, 0.0) > 0.0
    }
    return min(1.0, len(shares) / 4.0) if len(shares) > 1 else 0.0


def _read_alone(episode: Episode) -> float:
    """1 if the standard was read by fluorescence alone (in water), else 0."""
    return float(
        any(
            r.holds([STANDARD]) and r.only([STANDARD, WATER])
            for r in episode.readings
            if r.mode == "fluorescence"
        )
    )


#: the process rubric [A: the weights: the additions, the control the outcome hangs on from
#: level 3, most]
RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [SAMPLE], [WATER]),
            "a water (or empty-well) blank on each plate the sample was read on",
        ),
        Component(
            "additions",
            0.4,
            _additions,
            "the standard added to the sample itself at distinct levels (no addition counts "
            "as one), out of four",
        ),
        Component(
            "replicates",
            0.25,
            lambda e: replicated(e, [SAMPLE], copies=3, mode="fluorescence"),
            "the sample in three wells of one condition (two: half)",
        ),
        Component(
            "reference",
            0.15,
            _read_alone,
            "the standard read alone (diluted in water)",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)
