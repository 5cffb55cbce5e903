"""The ``screen`` family's parts: the compounds' places, the sizes, decoys and prior shares of a
screen (its structures and which the out-of-distribution split keeps), the levels and the
process rubric (:mod:`.screen` builds the task from them)."""

from __future__ import annotations

from dataclasses import dataclass

from labtools.session import Budget
from labtools.session.process import Component, Episode, Rubric, blanks, controls
from labtools.simulators.families.kinetics_parts import absorbers, two_figures
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.parts import HELD_OUT_SPECIES

__all__ = [
    "COMPOUNDS",
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "PROCESS_WEIGHT",
    "PURITY",
    "SCREEN_UL",
    "SHARES",
    "SIZES",
    "STOCK_UL",
    "WELL_UL",
    "ScreenLevel",
    "held_out",
    "names",
    "parse",
    "rubric",
    "stock_molar",
    "structures",
]

WATER, BUFFER, PNPP, STANDARD, ENZYME_STOCK = (f"reservoir:A{i}" for i in range(1, 6))
#: the compounds' containers, in order (a screen of n uses the first n)
COMPOUNDS = tuple(f"reservoir:A{i}" for i in range(6, 10))
#: compounds per screen [A: one (compound_screen's) to four, a row of a screening plate's
#: worth for one enzyme]
SIZES = (1, 2, 3, 4)
#: the prior share of inhibitors [A: compound_screen's 0.75, and even odds; a share below a
#: half would let the prior's Brier score on the decoys, 1 − π², stand in for a verdict]
SHARES = (0.5, 0.75)
#: a screen's compound in a 200 µL well: µL of its stock (the share the labels are set for)
SCREEN_UL, WELL_UL = 40.0, 200.0
#: an inhibitor lot's real content over its label, uniform within [A: screening compounds are
#: sold at ≥ 85-95 % purity by LC-MS or NMR; what is not the compound does not inhibit]
PURITY = (0.85, 1.0)
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: (decoy, size) never combined in training, only in ``test-ood`` [A: both are seen in
#: training, the combination is not]
HELD_OUT_COMBINATIONS = frozenset({("quinoline_yellow", 4)})
#: a stock of this volume (µL), as the lab's
STOCK_UL = 15_000.0


@dataclass(frozen=True)
class ScreenLevel:
    """One level's physics and budget (the shared levels' ``noise``)."""

    number: int
    #: a compound in the well at :data:`SCREEN_UL` of its stock (M, its label's): against
    #: inhibitor X's published Ki span (0.05-2 mM), how weak the weakest inhibitor looks
    screen_molar: float
    #: a decoy's OD at 405 nm in a well at the screening share (log-uniform within)
    decoy_od: tuple[float, float]
    noise: float
    budget: Budget


#: each level [A]: level 1 screens at 2 mM in the well (I/Ki 1-40 over the published span) with
#: decoys reading 0.2-0.5 OD at 405 nm; level 5 at 0.12 mM (I/Ki 0.06-2.4: the weakest
#: inhibitor slows the enzyme by a few %) with decoys reading 2.5-4.5 OD, at and over the
#: reader's 4 OD range. The budgets hold the expert's pilot and a four-compound screen (at most
#: 65 tips, 50 wells and 7.7 mL measured on seeds 0-3) with a margin that shrinks by level
LEVEL = {
    1: ScreenLevel(1, 2e-3, (0.2, 0.5), SHARED_LEVEL[1].noise, Budget(250, 160, 14_000, 96, 4.0)),
    2: ScreenLevel(2, 1e-3, (0.4, 1.0), SHARED_LEVEL[2].noise, Budget(220, 140, 13_000, 88, 4.0)),
    3: ScreenLevel(3, 5e-4, (0.8, 2.0), SHARED_LEVEL[3].noise, Budget(200, 120, 12_000, 80, 3.0)),
    4: ScreenLevel(4, 2.5e-4, (1.5, 3.0), SHARED_LEVEL[4].noise, Budget(180, 100, 11_000, 72, 3.0)),
    5: ScreenLevel(5, 1.2e-4, (2.5, 4.5), SHARED_LEVEL[5].noise, Budget(150, 90, 10_000, 64, 2.0)),
}


def names(size: int) -> tuple[str, ...]:
    """The compounds of a screen of ``size`` as the submission names them."""
    return tuple(f"compound_{j + 1}" for j in range(size))


def stock_molar(level: ScreenLevel) -> float:
    """A compound stock's labelled strength (M) at ``level``."""
    return two_figures(level.screen_molar * WELL_UL / SCREEN_UL)


# -- structures --------------------------------------------------------------------------------
def structures() -> tuple[str, ...]:
    """Every size with every decoy at each share (decoy by decoy, so that consecutive training
    structures span the sizes)."""
    return tuple(
        f"{n}+{decoy}+p{round(share * 100)}"
        for share in SHARES
        for decoy in absorbers("alp")
        for n in SIZES
    )


def parse(structure: str) -> tuple[int, str, float]:
    """(size, decoy, share) of ``structure``."""
    size, decoy, share = structure.split("+")
    return int(size), decoy, int(share[1:]) / 100.0


def held_out(structure: str) -> bool:
    """For ``test-ood`` only: a decoy of :data:`~.parts.HELD_OUT_SPECIES`, or a (decoy, size)
    of :data:`HELD_OUT_COMBINATIONS`."""
    size, decoy, _ = parse(structure)
    return decoy in HELD_OUT_SPECIES or (decoy, size) in HELD_OUT_COMBINATIONS


# -- the rubric --------------------------------------------------------------------------------
def rubric(compounds: tuple[str, ...]) -> Rubric:
    """Every compound read without enzyme (the share of compounds that were), and a blank."""

    def alone(e: Episode) -> float:
        return sum(controls(e, holds=[c], lacks=[ENZYME_STOCK]) for c in compounds) / len(compounds)

    return Rubric(
        (
            Component(
                "compound_only",
                0.6,
                alone,
                "each compound read without enzyme (its own absorbance at the assay's wavelength)",
            ),
            Component(
                "blank",
                0.4,
                lambda e: blanks(e, [PNPP, ENZYME_STOCK], [WATER, BUFFER]),
                "a buffer-only (or empty) well read on each plate with reactions",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="each P(inhibits) is scored by a Brier term (proper), gated on the deciding reads.",
    )
