"""Claims about a sample's analytes, in a checkable grammar, and how probable the prior makes
them.

A claim is one line (case and spacing free; analytes by their keys)::

    <analyte> present              the sample holds it
    <analyte> absent               it does not
    <analyte> above <quantity>     its concentration is above a value ("5 µM", "0.2 mM")
    <analyte> below <quantity>     ... below a value (an absent analyte's is 0)
    <analyte> above <other>        its concentration is above another candidate's
    at least <n> present           how many of the candidates the sample holds
    at most <n> present

:func:`prior_probability` is the claim's probability before any measurement: its share of
the family's own draws of the hidden world (:data:`PRIOR_DRAWS` of them, from a fixed stream
that is not an episode's).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from labtools.errors import InvalidArguments
from labtools.units import CONCENTRATION, magnitude

__all__ = [
    "GRAMMAR",
    "PRIOR_DRAWS",
    "Claim",
    "World",
    "parse_claim",
    "prior_draws",
    "prior_probability",
]

#: the grammar, as a tool's hint says it
GRAMMAR = (
    "'<analyte> present', '<analyte> absent', '<analyte> above <quantity>' (e.g. 'tartrazine "
    "above 12 µM'), '<analyte> below <quantity>', '<analyte> above <other analyte>', "
    "'at least <n> present', 'at most <n> present'"
)
#: draws of the hidden world a claim's prior probability is the share of: its standard error
#: is at most 0.5/√4000 = 0.008 [A]
PRIOR_DRAWS = 4000
#: the fixed stream of those draws (any constant: no episode's world comes from it) [A]
PRIOR_STREAM = 20_261_207
LONGEST_CLAIM = 200

Kind = Literal["present", "absent", "above", "below", "exceeds", "at_least", "at_most"]
World = Mapping[str, float]  # each present analyte's concentration, µM


@dataclass(frozen=True)
class Claim:
    """One claim of the grammar, parsed."""

    kind: Kind
    analyte: str = ""
    other: str = ""
    micromolar: float = 0.0
    count: int = 0

    def holds(self, world: World) -> bool:
        """Whether the claim is true of ``world``."""
        level = world.get(self.analyte, 0.0)
        match self.kind:
            case "present":
                return self.analyte in world
            case "absent":
                return self.analyte not in world
            case "above":
                return level > self.micromolar
            case "below":
                return level < self.micromolar
            case "exceeds":
                return level > world.get(self.other, 0.0)
            case "at_least":
                return len(world) >= self.count
            case "at_most":
                return len(world) <= self.count

    def __str__(self) -> str:
        match self.kind:
            case "present" | "absent":
                return f"{self.analyte} {self.kind}"
            case "above" | "below":
                return f"{self.analyte} {self.kind} {self.micromolar:.4g} µM"
            case "exceeds":
                return f"{self.analyte} above {self.other}"
            case _:
                return f"at {self.kind.partition('_')[2]} {self.count} present"


_ANALYTE = re.compile(
    r"^(?P<key>[a-z0-9_]+) (?P<verb>present|absent|above|below)(?: (?P<rest>.+))?$", re.I
)
_VERBS: dict[str, Kind] = {
    "present": "present",
    "absent": "absent",
    "above": "above",
    "below": "below",
}
_COUNT = re.compile(r"^at (?P<bound>least|most) (?P<n>\d{1,2}) present$", re.I)


def parse_claim(text: object, candidates: Sequence[str]) -> Claim:
    """``text`` as a :class:`Claim` about ``candidates``; :class:`InvalidArguments` (field
    ``claim``, the grammar as its hint) for anything else."""

    def refuse(message: str) -> InvalidArguments:
        return InvalidArguments(message, field="claim", hint=f"a claim is one of {GRAMMAR}")

    if not isinstance(text, str):
        raise refuse(f"a claim is a line of text, not {type(text).__name__}")
    if len(text) > LONGEST_CLAIM:
        raise refuse(f"a claim is at most {LONGEST_CLAIM} characters, not {len(text)}")
    line = " ".join(text.split())  # case is kept for the units: "µM", not "µm"
    if counted := _COUNT.match(line):
        n = int(counted["n"])
        if not 0 <= n <= len(candidates):
            raise refuse(f"the sample holds 0 to {len(candidates)} of the candidates, not {n}")
        return Claim("at_least" if counted["bound"].lower() == "least" else "at_most", count=n)
    parsed = _ANALYTE.match(line)
    if parsed is None:
        raise refuse(f"{line[:60]!r} is not a claim of the grammar")
    key, rest = parsed["key"].lower(), parsed["rest"]
    verb: Kind = _VERBS[parsed["verb"].lower()]
    if key not in candidates:
        raise refuse(f"{key!r} is not a candidate here: {', '.join(candidates)}")
    if verb in ("present", "absent"):
        if rest:
            raise refuse(f"'{key} {verb}' takes nothing after it, not {rest[:40]!r}")
        return Claim(verb, analyte=key)
    if not rest:
        raise refuse(f"'{key} {verb}' needs a concentration or another candidate after it")
    if (other := rest.lower()) in candidates:
        if other == key:
            raise refuse(f"{key} cannot be compared with itself")
        return (
            Claim("exceeds", analyte=key, other=other)
            if verb == "above"
            else Claim("exceeds", analyte=other, other=key)
        )
    value = CONCENTRATION.normalize(rest, "claim")
    micromolar = magnitude(CONCENTRATION.from_json(value["value"], value["unit"]), "micromolar")
    if not (math.isfinite(micromolar) and 0.0 < micromolar <= 1e7):
        raise refuse(f"a claim's concentration is above 0 and at most 10 M, not {rest[:40]!r}")
    return Claim(verb, analyte=key, micromolar=micromolar)


def prior_draws(draw: Callable[[np.random.Generator], World]) -> list[World]:
    """:data:`PRIOR_DRAWS` worlds from ``draw`` (an instance's hidden-world generator)."""
    rng = np.random.default_rng(PRIOR_STREAM)
    return [draw(rng) for _ in range(PRIOR_DRAWS)]


def prior_probability(claim: Claim, draws: Sequence[World]) -> float:
    """The share of ``draws`` of which ``claim`` holds."""
    return sum(claim.holds(world) for world in draws) / len(draws)
