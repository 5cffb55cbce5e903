"""The ``ic50`` family's parts: the ``inhibition`` family's enzyme–substrate pairs, inhibitors
and coloured preparations, the substrate level each structure states, the Cheng–Prusoff
relations and the levels.

A structure is the ``inhibition`` family's (``<pair>+<inhibitor>[+<absorber>]``, held out by
the same rule: :func:`~.inhibition_parts.held_out`). Each states the substrate in the well as a
multiple of the pair's *published* Km (:data:`RATIOS`, by the structure's place:
:func:`substrate_ratio`), so that the same inhibitor is asked at different substrate levels
across structures and a competitive inhibitor's IC50 differs from an uncompetitive one's.

The IC50 of a reversible inhibitor whose initial rates follow the three rate laws the world's
kinetics engine runs (Cheng & Prusoff 1973, Biochem. Pharmacol. 22:3099 [L]): competitive
Ki(1 + S/Km), uncompetitive Ki(1 + Km/S), noncompetitive (pure) Ki; the Hill slope of each is
1 (:func:`cheng_prusoff`). A level (:data:`LEVEL`) is the ``inhibition`` family's enzyme,
colour and noise, how far above the IC50 the library expects the inhibitor stock reaches in a
well (:attr:`IC50Level.reach`), and its own budget; every label follows from the level and the
published figures, never the seed's truth.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from labtools.session import Budget
from labtools.simulators.families.inhibition_parts import (
    INHIBITOR_MAX_UL,
    InhibitionLevel,
    Inhibitor,
    structures,
)
from labtools.simulators.families.inhibition_parts import LEVEL as INHIBITION_LEVEL
from labtools.simulators.families.kinetics_parts import (
    WELL_UL,
    Pair,
    labels,
    molar_label,
    pair,
)
from labtools.simulators.world.kinetics import MECHANISMS

__all__ = [
    "LEVEL",
    "RATIOS",
    "SUBSTRATE_TOP",
    "IC50Level",
    "as_inhibition_level",
    "cheng_prusoff",
    "expected_ic50",
    "expected_ln_spread",
    "ic50_labels",
    "ic50_span",
    "stated_substrate",
    "substrate_ratio",
]

#: the substrate in the well over the pair's published Km, by structure [A: 0.3 × to 5 ×, where
#: a competitive inhibitor's IC50 runs from 1.3 Ki to 6 Ki and an uncompetitive one's from
#: 4.3 Ki to 1.2 Ki: the substrate level decides which mechanism's IC50 is the larger]
RATIOS = (0.3, 1.0, 5.0, 0.6, 2.0)
#: the substrate stock reaches this many times the published Km in a well at
#: :data:`~.kinetics_parts.SUBSTRATE_MAX_UL` [A: above the highest of :data:`RATIOS`]
SUBSTRATE_TOP = 6.0


def cheng_prusoff(mechanism: str, ki: float, km: float, s: float) -> float:
    """The IC50 (same unit as ``ki``) of a reversible inhibitor with ``ki`` at substrate ``s``
    for an enzyme with ``km`` (Cheng & Prusoff 1973 [L]: the initial rate halved)."""
    if mechanism == "competitive":
        return ki * (1.0 + s / km)
    if mechanism == "uncompetitive":
        return ki * (1.0 + km / s)
    if mechanism == "noncompetitive":
        return ki
    raise ValueError(f"no IC50 for a {mechanism!r} inhibitor")


def substrate_ratio(structure: str) -> float:
    """The stated substrate over the published Km for ``structure``: :data:`RATIOS` in turn
    over the plain structures, shifted by one for each coloured preparation's place."""
    keys = structure.split("+")
    plain = [s for s in structures() if s.count("+") == 1]
    index = plain.index("+".join(keys[:2]))
    if len(keys) == 3:
        index += 1 + structures().index(structure) // len(plain)
    return RATIOS[index % len(RATIOS)]


def stated_substrate(structure: str) -> float:
    """The substrate in the well (M) the statement fixes: the ratio × the published Km, to two
    significant figures."""
    p = pair(structure.split("+")[0])
    return molar_label(substrate_ratio(structure) * p.km_centre)


def ic50_span(p: Pair, inh: Inhibitor, s: float) -> tuple[float, float]:
    """The IC50s (M) the package allows at substrate ``s``: over every mechanism and the ends
    of the published Ki span, at the published Km."""
    values = [cheng_prusoff(m, k, p.km_centre, s) for m in MECHANISMS for k in inh.ki]
    return min(values), max(values)


def expected_ic50(p: Pair, inh: Inhibitor, s: float) -> float:
    """The package's expected IC50 (M): the geometric mean over its odds of each mechanism at
    the published Ki centre and Km (:meth:`~.inhibition_parts.Inhibitor.odds`)."""
    odds = inh.odds()
    log = sum(
        odds[m] * math.log(cheng_prusoff(m, inh.ki_centre, p.km_centre, s)) for m in MECHANISMS
    )
    return math.exp(log)


def expected_ln_spread(p: Pair, inh: Inhibitor, s: float) -> float:
    """The package's spread (sd of ln) of the IC50: the Ki span's and the mechanism's."""
    odds = inh.odds()
    centre = math.log(expected_ic50(p, inh, s))
    between = sum(
        odds[m] * (math.log(cheng_prusoff(m, inh.ki_centre, p.km_centre, s)) - centre) ** 2
        for m in MECHANISMS
    )
    return math.sqrt(inh.ln_spread**2 + between)


@dataclass(frozen=True)
class IC50Level(InhibitionLevel):
    """One level's physics and budget: the ``inhibition`` level's fields, :attr:`reach` over the
    expected IC50 rather than the Ki centre."""


def _level(number: int, reach: float, budget: Budget) -> IC50Level:
    base = INHIBITION_LEVEL[number]
    return IC50Level(
        number,
        base.activity,
        SUBSTRATE_TOP,
        base.absorber_od,
        base.noise,
        budget,
        reach=reach,
    )


#: each level [A]: the ``inhibition`` family's enzyme, colour and noise; the inhibitor stock
#: reaching 30 × the expected IC50 in a well at level 1, 3 × at level 5 (an IC50 at the top
#: of what the package allows is then not bracketed: the series' top is the stock's); the wells
#: for twelve doses in duplicate with seven control and dilution wells from level 4 up
#: (12 × 2 + 9 ≤ 33), eight doses at level 5 (25)
LEVEL = {
    1: _level(1, 30.0, Budget(150, 96, 15_000, 96, 4.0)),
    2: _level(2, 15.0, Budget(120, 64, 12_000, 64, 4.0)),
    3: _level(3, 8.0, Budget(100, 48, 11_000, 44, 3.0)),
    4: _level(4, 5.0, Budget(80, 32, 9000, 34, 3.0)),
    5: _level(5, 3.0, Budget(60, 24, 8000, 26, 3.0)),
}


def ic50_labels(p: Pair, inh: Inhibitor, level: IC50Level, s: float) -> dict[str, float]:
    """The stocks' labelled concentrations (M): the ``kinetics`` family's at ``level`` and the
    inhibitor's, :data:`~.inhibition_parts.INHIBITOR_MAX_UL` of it reaching
    :attr:`~.inhibition_parts.InhibitionLevel.reach` × the expected IC50 at ``s``."""
    out = labels(p, level)
    top = level.reach * expected_ic50(p, inh, s)
    out["inhibitor"] = molar_label(top * WELL_UL / INHIBITOR_MAX_UL)
    return out


def as_inhibition_level(level: IC50Level, p: Pair, inh: Inhibitor, s: float) -> IC50Level:
    """``level`` with its reach over the published Ki centre, as the ``inhibition`` family's
    stock label (:func:`~.inhibition_parts.inhibitor_labels`) takes it."""
    reach = level.reach * expected_ic50(p, inh, s) / inh.ki_centre
    return dataclasses.replace(level, reach=reach)
