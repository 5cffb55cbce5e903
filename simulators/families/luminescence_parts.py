"""The ``luminescence`` family's parts: the plate's layout, the structures, the levels, the
glow reagent's lot and what the process rubric checks.

A *structure* is ``n<samples>+<hot>+dec<span>``: how many samples sit on the plate (3-6, in
row C, every other column: C2, C4, ...), where the bright positive control sits against the
first of them (:data:`HOT_WELL`: ``edge``, the well above it; ``diagonal``, the well above
and to its left; ``none``, the plate's far corner, next to no sample), and over how many
decades the samples' light spreads (1-3, log-uniform from the level's floor up).

Light: the reader counts ``η · Y · pmol`` photons a second from a well (``glow_luciferase``
in ``species.toml``: Y = 2e5 photons s⁻¹ pmol⁻¹ [A]; η = 0.5 counts per photon, the published
profile's [A]), so the package's *nominal* yield is :data:`NOMINAL_CPS_PER_PMOL`; the reagent
lot's yield and this reader's detection efficiency differ from it (:data:`LOT`), the same for
every well of the plate, so that an ATP standard read in the plate calibrates both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from labtools.session import Budget
from labtools.session.process import Component, Episode, Rubric, levels

__all__ = [
    "COUNTS",
    "DECADES",
    "HOT_WELL",
    "LEVEL",
    "LOT",
    "NOMINAL_CPS_PER_PMOL",
    "PLATE_ROWS",
    "PROCESS_WEIGHT",
    "SAMPLE_UL",
    "SPECIES",
    "Lot",
    "LuminescenceLevel",
    "Structure",
    "held_out",
    "neighbours",
    "parse",
    "rubric",
    "sample_wells",
    "structures",
]

#: the species the reader counts: ATP in the glow reagent (per pmol of ATP)
SPECIES = "glow_luciferase"
#: counts per second per pmol the package states: the library's 2e5 photons s⁻¹ pmol⁻¹ times
#: the published detection efficiency 0.5 [C]
NOMINAL_CPS_PER_PMOL = 1e5
#: each sample well's volume: the sample mixed 1:1 with the glow reagent (µL) [A: the usual
#: 100 µL + 100 µL of a glow ATP assay in a 96-well plate]
SAMPLE_UL = 200.0
#: how many samples a structure holds [A]
COUNTS = (3, 4, 5, 6)
#: where the positive control sits [A]: against sample_1 (C2) at an edge, at a diagonal, or
#: in the far corner (H12), next to nothing read
HOT_WELL = {"edge": "B2", "diagonal": "B1", "none": "H12"}
#: decades the samples' light spreads over [A]
DECADES = (1, 2, 3)
PLATE_ROWS = "ABCDEFGH"
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6


@dataclass(frozen=True)
class Structure:
    """One structure's parts."""

    samples: int
    hot: str
    decades: int

    @property
    def name(self) -> str:
        return f"n{self.samples}+{self.hot}+dec{self.decades}"


def structures() -> list[Structure]:
    """Every structure, in a fixed order."""
    return [Structure(n, h, d) for n in COUNTS for h in HOT_WELL for d in DECADES]


def parse(structure: str) -> Structure:
    """The parts of ``structure`` (``n4+edge+dec2``)."""
    try:
        count, hot, span = structure.split("+")
        parts = Structure(int(count.removeprefix("n")), hot, int(span.removeprefix("dec")))
    except ValueError as exc:
        raise ValueError(f"{structure!r} is not a luminescence structure") from exc
    if parts.samples not in COUNTS or parts.hot not in HOT_WELL or parts.decades not in DECADES:
        raise ValueError(f"{structure!r} is not a luminescence structure")
    return parts


def held_out(structure: str) -> bool:
    """The out-of-distribution split's rule [A, compositional]: a control at a *diagonal*
    with samples spread over *three* decades. Each part is seen in training (diagonal controls
    over one and two decades, three decades beside an edge control or none); the combination
    is not."""
    parts = parse(structure)
    return parts.hot == "diagonal" and parts.decades == 3


def sample_wells(count: int) -> list[str]:
    """The samples' wells of plate_1, in order: C2, C4, ... (never neighbours of each other)."""
    return [f"C{2 * (i + 1)}" for i in range(count)]


def neighbours(well: str) -> tuple[list[str], list[str]]:
    """``well``'s edge and diagonal neighbours on a 96-well plate."""
    row, col = PLATE_ROWS.index(well[0]), int(well[1:])

    def name(r: int, c: int) -> str | None:
        return f"{PLATE_ROWS[r]}{c}" if 0 <= r < 8 and 1 <= c <= 12 else None

    edges = [name(row + dr, col + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))]
    corners = [name(row + dr, col + dc) for dr in (-1, 1) for dc in (-1, 1)]
    return [w for w in edges if w], [w for w in corners if w]


@dataclass(frozen=True)
class LuminescenceLevel:
    """One level's physics and budget."""

    number: int
    #: the faintest a sample may be: its nominal counts per second (log-uniform from here up
    #: over the structure's decades)
    floor_cps: float
    #: the positive control's nominal counts per second (log-uniform within)
    hot_cps: tuple[float, float]
    #: the reader's dark rate: the published prior's bounds times this
    dark: float
    budget: Budget
    #: the reader's absorbance noise factor (the families' shared lab raises it; nothing here
    #: reads absorbance) [A]
    noise: float = 1.0


#: [A] level 1's faintest sample reads 30 times the highest published dark rate (50 s⁻¹) and
#: its control leaks at most a tenth of it (cross-talk 1e-4); level 5's reads 30 s⁻¹ above a
#: dark rate of 30-150 s⁻¹, and its control leaks up to a hundred times that into its neighbour
#: (a few times at the published median 1e-5): only repeated reads and a measured leak get it
LEVEL = {
    1: LuminescenceLevel(
        1, 3000.0, (1e6, 3e6), 1.0, Budget(calls=150, tips=96, reagent_ul=10_000, wells=96)
    ),
    2: LuminescenceLevel(
        2, 1000.0, (2e6, 6e6), 1.0, Budget(calls=120, tips=64, reagent_ul=9000, wells=72)
    ),
    3: LuminescenceLevel(
        3, 300.0, (3e6, 1e7), 1.5, Budget(calls=100, tips=48, reagent_ul=8000, wells=48)
    ),
    4: LuminescenceLevel(
        4, 100.0, (5e6, 1.5e7), 2.0, Budget(calls=80, tips=32, reagent_ul=7000, wells=32)
    ),
    5: LuminescenceLevel(
        5, 30.0, (1e7, 3e7), 3.0, Budget(calls=60, tips=24, reagent_ul=7000, wells=24)
    ),
}


@dataclass(frozen=True)
class Lot:
    """The glow reagent lot's light yield and the reader's detection efficiency against the
    package's nominal figures: log-normal factors about 1."""

    #: [A] commercial glow luciferase reagents' light output differs from lot to lot and with
    #: storage by tens of per cent (the reason their makers ask for an ATP standard curve with
    #: every run); 0.25 in ln, a factor 0.6-1.6 at 2 sd
    yield_sd: float = 0.25
    #: [A] luminometers' photon detection efficiency differs instrument to instrument (PMT
    #: quantum efficiency, optics): 0.15 in ln
    efficiency_sd: float = 0.15

    def draw(self, rng: np.random.Generator) -> tuple[float, float]:
        """A lot's yield factor and a reader's efficiency factor."""
        return (
            float(math.exp(rng.normal(0.0, self.yield_sd))),
            float(math.exp(rng.normal(0.0, self.efficiency_sd))),
        )


LOT = Lot()


# -- the rubric --------------------------------------------------------------------------------
def _lum(episode: Episode) -> list:
    return [r for r in episode.readings if r.mode == "luminescence"]


def blank(water: str) -> Component:
    return Component(
        "blank",
        1.0,
        lambda e: float(any(r.only([water]) for r in _lum(e))),
        "a well of the ATP-free diluent read (the dark counts)",
    )


def standard_levels(standard: str) -> Component:
    return Component(
        "standards",
        1.0,
        lambda e: levels(e, standard, count=3, mode="luminescence"),
        "ATP standard levels read in the plate, out of three",
    )


def repeats(samples: Iterable[str]) -> Component:
    wells = tuple(samples)

    def measure(episode: Episode) -> float:
        counted = [sum(1 for r in _lum(episode) if r.well == w) for w in wells]
        return min(1.0, (min(counted) - 1) / 2.0) if counted else 0.0

    return Component(
        "counting", 1.0, measure, "every sample counted in at least three reads (two: half)"
    )


def leak(hot: str, water: str, samples: Iterable[str]) -> Component:
    taken = {f"plate_1:{w}" for w in samples}
    edges, corners = neighbours(hot.partition(":")[2])
    around = {f"plate_1:{w}" for w in edges + corners} - taken

    def measure(episode: Episode) -> float:
        return float(any(r.well in around and (r.empty or r.only([water])) for r in _lum(episode)))

    return Component(
        "leak",
        1.0,
        measure,
        "a well beside the positive control with no ATP read (its cross-talk)",
    )


def rubric(structure: Structure, standard: str, water: str, hot: str) -> Rubric:
    """The structure's process rubric: a blank, standard levels, repeated counts and, where
    the control is a sample's neighbour, its leak measured."""
    samples = [f"plate_1:{w}" for w in sample_wells(structure.samples)]
    parts = [blank(water), standard_levels(standard), repeats(samples)]
    if structure.hot != "none":
        parts.append(leak(hot, water, sample_wells(structure.samples)))
    return Rubric(
        tuple(parts),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainties are scored by the outcome itself (CRPS, strictly proper).",
    )
