"""The ``inhibition`` family's parts: the ``kinetics`` family's enzyme–substrate pairs and
coloured preparations, the reversible inhibitors of each enzyme, and the levels.

An *inhibitor* (:func:`inhibitor`, ``kinetics.toml``'s ``[inhibitor.*]``) binds one enzyme
reversibly; the file states the mechanism(s) the literature reports and the span its Ki is
drawn from. A seed's mechanism is the published one with probability :data:`PUBLISHED_SHARE`
and one of the others otherwise (:meth:`Inhibitor.odds`), so that it stays something only a
measurement tells; ``inhibitor_x`` (the hand-written ``enzyme_inhibition``'s), published as
any of the three, is drawn uniformly. A level (:data:`LEVEL`) is the ``kinetics`` family's
physics with a weaker enzyme where the inhibitor slows it, how far above the published Ki the
inhibitor stock reaches in a well (:attr:`InhibitionLevel.reach`) and its own budget; every
figure on a label follows from the level and the *published* figures, never from the seed's
truth.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from labtools.session import Budget
from labtools.simulators.families.kinetics_parts import LEVEL as KINETICS_LEVEL
from labtools.simulators.families.kinetics_parts import (
    PAIRS,
    WELL_UL,
    KineticsLevel,
    Pair,
    absorbers,
    labels,
    molar_label,
    pair,
)
from labtools.simulators.families.kinetics_parts import held_out as kinetics_held_out
from labtools.simulators.families.parts import ANALYTES
from labtools.simulators.world import SpeciesLibrary
from labtools.simulators.world.kinetics import MECHANISMS, KineticsData

__all__ = [
    "HELD_OUT_COMBINATIONS",
    "INHIBITOR_MAX_UL",
    "LEVEL",
    "PUBLISHED_SHARE",
    "InhibitionLevel",
    "Inhibitor",
    "held_out",
    "inhibitor",
    "inhibitor_labels",
    "inhibitors",
    "parse",
    "structures",
]

#: the most of the inhibitor stock a reaction well holds (µL) [A: a fifth of the well, so that
#: the substrate's half, the enzyme's quarter and the inhibitor's fifth leave buffer in it]
INHIBITOR_MAX_UL = 40.0
#: a seed's mechanism is the published one with this probability, one of the others otherwise
#: [A: a half: the literature's mechanism depends on the isozyme, the substrate and the
#: conditions (indole is noncompetitive with an ester substrate of chymotrypsin, competitive
#: with an anilide; tacrine is mixed), so the package's mechanism is a prior, not the answer]
PUBLISHED_SHARE = 0.5
#: (inhibitor, absorber) never combined in training, only in ``test-ood`` [A: each is seen in
#: training, the combination is not]
HELD_OUT_COMBINATIONS = frozenset({("l_phenylalanine", "tartrazine"), ("iptg", "sunset_yellow")})


@dataclass(frozen=True)
class Inhibitor:
    """A reversible inhibitor as ``kinetics.toml`` states it (Ki span in M)."""

    key: str
    enzyme: str
    published: tuple[str, ...]
    ki: tuple[float, float]

    @property
    def ki_centre(self) -> float:
        """The published Ki span's geometric centre (M)."""
        return math.sqrt(self.ki[0] * self.ki[1])

    @property
    def name(self) -> str:
        return SpeciesLibrary.default()[self.key].name.split(" (")[0]

    def odds(self) -> dict[str, float]:
        """Each mechanism's probability as the family draws it: :data:`PUBLISHED_SHARE` over the
        published ones, the rest over the others (uniform where all three are published)."""
        others = [m for m in MECHANISMS if m not in self.published]
        if not others:
            return {m: 1.0 / len(MECHANISMS) for m in MECHANISMS}
        return {
            m: PUBLISHED_SHARE / len(self.published)
            if m in self.published
            else (1.0 - PUBLISHED_SHARE) / len(others)
            for m in MECHANISMS
        }

    @property
    def ln_spread(self) -> float:
        """The package's spread (sd of ln) of Ki: the span's (log-uniform: width/√12)."""
        return math.log(self.ki[1] / self.ki[0]) / math.sqrt(12.0)


@functools.cache
def inhibitor(key: str) -> Inhibitor:
    """``[inhibitor.<key>]`` of ``kinetics.toml``."""
    prior = KineticsData.default().inhibitors[key]
    low, high = prior.ki_mm
    return Inhibitor(key, prior.enzyme, prior.mechanisms, (low * 1e-3, high * 1e-3))


@functools.cache
def inhibitors(pair_key: str) -> tuple[str, ...]:
    """The inhibitors of ``pair_key``'s enzyme, in ``kinetics.toml``'s order."""
    enzyme = pair(pair_key).enzyme
    library = SpeciesLibrary.default()
    return tuple(
        k
        for k, prior in KineticsData.default().inhibitors.items()
        if prior.enzyme == enzyme and k in library
    )


def parse(structure: str) -> tuple[Pair, Inhibitor, str | None]:
    """``<pair>+<inhibitor>[+<absorber>]``: the pair, the inhibitor and the absorber colouring
    the enzyme's preparation, if any; ``ValueError`` for parts that do not go together."""
    keys = structure.split("+")
    if len(keys) not in (2, 3):
        raise ValueError(f"{structure!r} is not pair+inhibitor[+absorber]")
    p = pair(keys[0])
    if keys[1] not in inhibitors(p.key):
        raise ValueError(f"{keys[1]} is no inhibitor of {p.enzyme}")
    absorber = keys[2] if len(keys) == 3 else None
    if absorber is not None and absorber not in absorbers(p.key):
        raise ValueError(f"{absorber} does not absorb at {p.key}'s read wavelength")
    return p, inhibitor(keys[1]), absorber


def held_out(structure: str) -> bool:
    """Whether ``structure`` (``pair+inhibitor[+absorber]``) is for ``test-ood`` only: its pair
    with its absorber is held out by the ``kinetics`` family's rule (a held-out product or
    absorber, or a held-out pair–absorber combination), or it combines an inhibitor and an
    absorber of :data:`HELD_OUT_COMBINATIONS`."""
    keys = structure.split("+")
    if kinetics_held_out("+".join([keys[0], *keys[2:]])):
        return True
    return len(keys) == 3 and (keys[1], keys[2]) in HELD_OUT_COMBINATIONS


@functools.cache
def structures() -> tuple[str, ...]:
    """Every pair with each of its inhibitors, then each of those with each absorber (absorber
    by absorber, so that consecutive training structures span the pairs and inhibitors)."""
    plain = [f"{p}+{i}" for p in PAIRS for i in inhibitors(p)]
    out = list(plain)
    for absorber in ANALYTES:
        out += [
            s for s in (f"{x}+{absorber}" for x in plain) if absorber in absorbers(s.split("+")[0])
        ]
    return tuple(out)


@dataclass(frozen=True)
class InhibitionLevel(KineticsLevel):
    """One level's physics and budget: the ``kinetics`` level's fields, and how far above the
    published Ki centre the inhibitor stock reaches in a well (:data:`INHIBITOR_MAX_UL` of it)."""

    reach: float = 1.0


def _level(number: int, activity: float, reach: float, budget: Budget) -> InhibitionLevel:
    base = KINETICS_LEVEL[number]
    return InhibitionLevel(
        number, activity, base.top, base.absorber_od, base.noise, budget, reach=reach
    )


#: each level [A]: the ``kinetics`` family's substrate reach, colour and noise; the enzyme at
#: more activity than there (inhibited wells run slower: level 5's stock gives 0.02 OD/min at
#: Vmax, 0.8 OD over the 40-minute read uninhibited); the inhibitor stock reaching 12 × the
#: published Ki centre in a well at level 1, 2.5 × at level 5 (a Ki at the top of its span is
#: then barely reached); the wells for six substrate levels at three inhibitor levels in
#: duplicate with ten control wells from level 3 down (46), only the uninhibited series in
#: duplicate at levels 4 and 5 (34)
LEVEL = {
    1: _level(1, 0.4, 12.0, Budget(150, 96, 15_000, 96, 4.0)),
    2: _level(2, 0.2, 8.0, Budget(120, 64, 12_000, 72, 4.0)),
    3: _level(3, 0.1, 5.0, Budget(100, 48, 11_000, 56, 3.0)),
    4: _level(4, 0.04, 3.5, Budget(80, 32, 9000, 44, 3.0)),
    5: _level(5, 0.02, 2.5, Budget(60, 24, 8000, 36, 3.0)),
}


def inhibitor_labels(p: Pair, inh: Inhibitor, level: InhibitionLevel) -> dict[str, float]:
    """The stocks' labelled concentrations (M) at ``level``: the ``kinetics`` family's
    (:func:`~.kinetics_parts.labels`) and the inhibitor's (:data:`INHIBITOR_MAX_UL` of it
    reaching :attr:`~InhibitionLevel.reach` × the published Ki centre in a well)."""
    out = labels(p, level)
    out["inhibitor"] = molar_label(level.reach * inh.ki_centre * WELL_UL / INHIBITOR_MAX_UL)
    return out
