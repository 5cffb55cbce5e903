"""The ``wide_range`` family's parts: the cofactors, how many samples and how their
concentrations spread over the decades, the matrix, the levels, the cofactor's lot and the
process rubric.

A *cofactor* here is a reduced cofactor (or flavin) of :data:`~.parts.ANALYTES` that both
absorbs (its band peak, ε at least :data:`~.parts.EPSILON_MIN`) and fluoresces (the species
library gives an emission): NADH and NADPH (340 nm, ε 6220 [L: Horecker & Kornberg 1948];
emission 460 nm, Φ ~0.02) and FMN (445 nm, emission 530 nm). Its samples span several decades,
so that no one read mode covers them all: absorbance at the band's peak is accurate from about
0.1 OD (the reader's 0.1-2.0 OD window over its ~0.001 OD floor) and must be diluted past
2 OD; fluorescence reaches a thousand times lower but bends under the cofactor's own inner
filter well below the absorbance window, and its scale is the reader's (hidden) and the lot's.

A *matrix* is what else the samples hold: water alone, or NAD+ (the oxidised cofactor, read
by nothing at 340 nm or above [V: species.toml]): a harmless decoy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from labtools.session import Budget
from labtools.session.process import Component, Episode, Rubric, blanks, levels
from labtools.session.process import replicates as replicated
from labtools.simulators.families.fluorimetry_parts import Lot
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import STANDARDS, WATER

__all__ = [
    "COFACTORS",
    "COUNTS",
    "LEVEL",
    "LOT",
    "MATRICES",
    "MATRIX_UM",
    "PROCESS_WEIGHT",
    "SAMPLE_SLOTS",
    "SPREADS",
    "STANDARD",
    "WideRangeLevel",
    "held_out",
    "parse",
    "rubric",
    "structures",
]

STANDARD = STANDARDS[0]
#: the containers the samples are in, in order (``sample_1`` is the first) [A: the reservoir's
#: columns after the standard's]
SAMPLE_SLOTS = tuple(f"reservoir:A{i}" for i in range(3, 9))
#: the cofactors [A: the analytes of class ``cofactor`` with an emission in the library]
COFACTORS = ("nadh", "nadph", "fmn")
#: how many samples a structure has [A: four or six, each read by the mode that suits it]
COUNTS = (4, 6)
#: how the samples spread over the level's span [A]: ``even``, one in each of as many equal
#: steps of the logarithm; ``ends``, half in its bottom decade and half in its top one
SPREADS = ("even", "ends")
#: the matrix: water alone, or NAD+ as well (invisible at 340 nm and above: a decoy) [A]
MATRICES = ("water", "nad")
#: NAD+ in a sample (µM, log-uniform) [A: a dehydrogenase assay's NAD+ pool, 0.1-1 mM]
MATRIX_UM = (100.0, 1000.0)
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6

#: the cofactor's lot against the library's entry (1 sd, relative, log-normal) [L: published ε
#: of NADH at 340 nm run 6220 (Horecker & Kornberg 1948) to ~6300 (later tables, with the
#: temperature and buffer), and FMN's 12,200-12,500; the lot's impurities that absorb at the
#: band add to it (not re-checked): 3 %. Φ of free NADH in water is ~0.02 and moves with
#: temperature, viscosity and buffer by tens of per cent [L, not re-checked]: 10 %]
LOT = Lot(epsilon_sd=0.03, yield_sd=0.10)


@dataclass(frozen=True)
class WideRangeLevel(Level):
    """A level's physics and budget: ``od`` the span of the samples' optical densities neat
    at the cofactor's peak in a 200 µL well (library ε, nominal path), within which they
    spread as the structure says; ``interferent_ratio`` unused; ``noise`` the factor on the
    reader's absorbance and fluorescence noise floors."""


#: each level [A]: the span's bottom from ~10 µM-equivalents of fluorescence above the plate's
#: autofluorescence down to a fifth of it (NADH 0.85 µM to 0.05 µM: three to 0.2 times the
#: 0.001 OD floor's worth), its top from inside the 0.1-2.0 OD window neat to past it (up to
#: 850 µM NADH: a dilution needed); the reader's noise as the shared levels'; the budget a
#: survey, two calibration series, blanks and duplicates of six samples at level 5, every well
#: 200 µL (the reagent budget counts the water)
LEVEL = {
    n: WideRangeLevel(n, span, (0.0, 0.0), SHARED_LEVEL[n].noise, budget)
    for n, span, budget in (
        (1, (3e-3, 1.2), Budget(calls=150, tips=96, reagent_ul=20_000, wells=96)),
        (2, (1.5e-3, 1.8), Budget(calls=120, tips=72, reagent_ul=15_000, wells=72)),
        (3, (8e-4, 2.4), Budget(calls=100, tips=60, reagent_ul=13_000, wells=60)),
        (4, (4e-4, 2.8), Budget(calls=80, tips=50, reagent_ul=11_000, wells=50)),
        (5, (1.8e-4, 3.0), Budget(calls=60, tips=44, reagent_ul=10_000, wells=44)),
    )
}


@functools.cache
def structures() -> list[str]:
    """``<cofactor>+<n>+<spread>+<matrix>``, every combination, cofactor by cofactor."""
    for key in COFACTORS:
        analyte(key)  # each meets the analyte criteria
    return [
        f"{key}+{n}+{spread}+{matrix}"
        for key in COFACTORS
        for n in COUNTS
        for spread in SPREADS
        for matrix in MATRICES
    ]


def parse(structure: str) -> tuple[str, int, str, str]:
    """The cofactor, the sample count, the spread and the matrix of ``structure``."""
    key, n, spread, matrix = structure.split("+")
    return key, int(n), spread, matrix


def held_out(structure: str) -> bool:
    """Whether ``structure`` is kept for ``test-ood``: its cofactor is one of the shared
    :data:`~.parts.HELD_OUT_SPECIES` (FMN: a flavin read at 445/530 nm, which no other split
    has)."""
    return parse(structure)[0] in HELD_OUT_SPECIES


# -- the process rubric -------------------------------------------------------------------------
def _replicates(samples: tuple[str, ...]) -> Component:
    def score(episode: Episode) -> float:
        return sum(replicated(episode, [s], copies=2) for s in samples) / len(samples)

    return Component(
        "replicates", 0.2, score, "each sample in two wells of one condition (its mean share)"
    )


@functools.cache
def rubric(count: int) -> Rubric:
    """The process rubric of a structure with ``count`` samples [A: the weights; the two
    calibrations, the controls the outcome hangs on, most]."""
    samples = SAMPLE_SLOTS[:count]
    return Rubric(
        (
            Component(
                "blank",
                0.2,
                lambda e: blanks(e, samples, [WATER]),
                "a water (or empty-well) blank on each plate the samples were read on",
            ),
            Component(
                "absorbance_levels",
                0.3,
                lambda e: levels(e, STANDARD, count=4, lacks=samples, mode="absorbance"),
                "standard levels read by absorbance, out of four",
            ),
            Component(
                "fluorescence_levels",
                0.3,
                lambda e: levels(e, STANDARD, count=4, lacks=samples, mode="fluorescence"),
                "standard levels read by fluorescence, out of four",
            ),
            _replicates(samples),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainties are scored by the outcome itself (CRPS, strictly proper).",
    )
