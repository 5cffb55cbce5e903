"""The ``hypothesis`` family: the agent states a claim about a sample, tests it, and says how
probable it is.

The world is the ``mixture`` family's (:class:`~.mixture.MixtureTask`): a sample holding one
to three of a set of candidate analytes, certified standards of every one. Before any
measurement the agent states a claim in the grammar of :mod:`.claims` (``state_hypothesis``;
it may restate until it measures: the last claim stated before the first reading counts,
and the tool answers the claim's prior probability and worth); then it designs and runs the
test and submits its probability that the claim holds (``submit_hypothesis``).

Reward: ``worth × (1 − (p − y)²) × process``: ``y`` 1 if the claim holds of the hidden
sample, ``p`` the submitted probability (the Brier score, proper: a calibrated probability
earns most), ``worth = 4·p0·(1 − p0)`` with ``p0`` the claim's prior probability (1 for a
claim the prior leaves open at 50/50, 0 for one it settles), and the process rubric of the
mixture family (a blank, the candidates' standards, replicates, a reading in range). A claim
stated after a measurement earns nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Annotated, Any, ClassVar

from typing_extensions import TypedDict

from labtools.errors import PreconditionFailed
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.simulators.families import mixture
from labtools.simulators.families.claims import (
    GRAMMAR,
    Claim,
    World,
    parse_claim,
    prior_draws,
    prior_probability,
)
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import SAMPLE, WASTE, WATER, WELL_UL
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["Hypothesis", "HypothesisTask"]

#: tools whose successful call is a measurement: a claim stated after one earns nothing
MEASURING = ("reader_read_", "spec_acquire_", "spec_measure_", "spec_get_data")
#: the expert's relative error of a present analyte's concentration, per level (1 sd of
#: ln(ĉ/c)) [M: rms 0.015, 0.017, 0.016, 0.025 and 0.13 at levels 1-5 over six training
#: structures × seeds 0-4 of the mixture family's expert; rounded up]
SPREAD = {1: 0.02, 2: 0.02, 3: 0.02, 4: 0.03, 5: 0.15}
#: the probability the expert gives a claim about an analyte it found absent being present
#: (and the reverse) [M: the same runs' presence calls missed 5 of 700]
DOUBT = 0.02


class Stated(TypedDict):
    """What stating a claim answers."""

    claim: str
    prior_probability: float
    worth: float


@dataclass(frozen=True)
class HypothesisLimits(mixture.MixtureLimits):
    """Sane bounds of a verdict."""

    probability: Range = Range(0.0, 1.0)


class HypothesisTask(mixture.MixtureTask):
    """One instance of :class:`Hypothesis` (its class attributes set by its ``build``)."""

    limits = HypothesisLimits()
    hypothesis: Claim | None = None
    drawn: ClassVar[list[World]]
    _lab: Lab | None = None

    def draws(self) -> list[World]:
        """The prior's draws of this instance's hidden world (:func:`~.claims.prior_draws`),
        made once per instance class."""
        cls = type(self)
        if "drawn" not in vars(cls):
            cls.drawn = prior_draws(self._draw)
        return cls.drawn

    def prior_of(self, claim: Claim) -> float:
        """``claim``'s prior probability."""
        return prior_probability(claim, self.draws())

    # -- the episode ---------------------------------------------------------------------------
    def prepare(self, lab: Lab, seed: int) -> None:
        super().prepare(lab, seed)
        self._lab = lab

    def restore(self, snapshot: Any) -> None:
        super().restore(snapshot)
        self.hypothesis = None

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "hypothesis": None if self.hypothesis is None else str(self.hypothesis),
        }

    def _measured(self) -> bool:
        """Whether this episode has made a measurement yet."""
        if self._lab is None:
            return False
        events = self._lab.journal.events()
        starts = [i for i, e in enumerate(events) if e.get("event") == "reset"]
        return any(
            e.get("ok") is True and str(e.get("tool", "")).startswith(MEASURING)
            for e in events[starts[-1] + 1 if starts else 0 :]
        )

    @tool(name="state_hypothesis")
    async def state_hypothesis(
        self,
        claim: Annotated[str, Arg(f"The claim to test, one of: {GRAMMAR}.")],
    ) -> Stated:
        """State the hypothesis to test, before any measurement (restating replaces it until
        the first reading). Answers its prior probability and its worth, 4·p0·(1 − p0)."""
        parsed = parse_claim(claim, self.candidates)
        if self._measured():
            raise PreconditionFailed(
                "a hypothesis is stated before any measurement",
                hint=f"the claim stated before the first reading stands: {self.hypothesis}",
            )
        self.hypothesis = parsed
        p0 = self.prior_of(parsed)
        return {"claim": str(parsed), "prior_probability": p0, "worth": 4.0 * p0 * (1.0 - p0)}

    @tool(name="submit_hypothesis", destructive=True)
    async def submit(
        self,
        probability: Annotated[
            float, Arg("Probability that the stated claim holds.", within="probability")
        ],
    ) -> Submitted:
        """Submit the probability that the stated hypothesis holds. Ends the episode."""
        if self.hypothesis is None:
            raise PreconditionFailed(
                "no hypothesis was stated",
                hint="state one with state_hypothesis before any measurement",
            )
        self.submission = {"probability": float(probability), "claim": str(self.hypothesis)}
        return {"received": True}

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        names = ", ".join(f"{analyte(k).name} ({k})" for k in self.candidates)
        standards = "; ".join(f"{c}: '{labels[c]}'" for c in self.stocks.values())
        low, high = self.level.od
        return (
            f"The container {SAMPLE} ('sample') holds, in water, one to "
            f"{min(mixture.MOST_PRESENT, len(self.candidates))} of these analytes (each number "
            f"equally likely, then each choice): {names}. A present one reads between {low:g} "
            f"and {high:g} OD at its peak neat in a 200 µL well (log-uniform). Certified "
            f"standards of every one are in the reservoir ({standards}); water at {WATER}, a "
            f"waste trough at {WASTE}. lh_get_deck shows the deck: two 96-well plates, tip "
            "racks, the plate reader and a spectrometer. Before any measurement, state a "
            f"hypothesis about the sample with state_hypothesis, one of: {GRAMMAR}; it answers "
            "the claim's prior probability p0 and its worth 4·p0·(1 − p0) (you may restate "
            "until your first reading). Then test it, and submit once with submit_hypothesis the "
            "probability that it holds. Reward: worth × (1 − (p − y)²), y = 1 if the claim "
            "holds, times how sound the experiment was (a blank, every standard read alone, "
            "sample replicates, a sample reading in range)."
        )

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None or self.hypothesis is None:
            return {"raw": 0.0}
        p0 = self.prior_of(self.hypothesis)
        worth = 4.0 * p0 * (1.0 - p0)
        y = float(self.hypothesis.holds(self.truth(lab)))
        verdict = 1.0 - (self.submission["probability"] - y) ** 2
        return {"raw": worth * verdict, "worth": worth, "verdict": verdict, "holds": y}

    # -- scripted protocols --------------------------------------------------------------------
    def worthiest(self) -> Claim:
        """The claim the expert tests: of each candidate's presence and its concentration
        above its prior median (where it is present more often than not), the one the prior
        leaves most open (worth nearest 1), the first in candidate order on a tie."""
        claims = []
        for key in self.candidates:
            claims.append(Claim("present", analyte=key))
            levels = sorted(world.get(key, 0.0) for world in self.draws())
            median = float(f"{levels[len(levels) // 2]:.3g}")
            if median > 0:
                claims.append(Claim("above", analyte=key, micromolar=median))
        worth = {
            claim: 4.0 * self.prior_of(claim) * (1.0 - self.prior_of(claim)) for claim in claims
        }
        return max(claims, key=lambda claim: (round(worth[claim], 9), -claims.index(claim)))

    def belief(self, claim: Claim, found: dict[str, float]) -> float:
        """The probability that ``claim`` holds given each candidate's estimated
        concentration (µM; 0 where found absent), known to :data:`SPREAD` (log; one error
        shared by all, on 64 quantiles of the normal), and never surer than :data:`DOUBT`."""
        spread = SPREAD[self.level.number]
        normal = NormalDist()
        scales = [math.exp(spread * normal.inv_cdf((i + 0.5) / 64)) for i in range(64)]
        draws = [{k: um * f for k, um in found.items() if um > 0} for f in scales]
        share = sum(claim.holds(world) for world in draws) / len(draws)
        return min(max(share, DOUBT), 1.0 - DOUBT)

    def _test(self, session: Session, claim: Claim, *, invert: bool = False) -> None:
        """State ``claim``, run the mixture expert's experiment, submit the belief (or its
        complement)."""
        from labtools.simulators.families.mixture_expert import composition

        call = caller(session)
        call("state_hypothesis", claim=str(claim))
        found = composition(call, self.stocks, sample=SAMPLE, water=WATER, wells=self.budget.wells)
        p = self.belief(claim, found)
        call("submit_hypothesis", probability=round(1.0 - p if invert else p, 4))

    def expert(self, session: Session) -> None:
        """The worthiest claim (:meth:`worthiest`), tested by the mixture expert's experiment;
        the probability from its estimates and their spread (:meth:`belief`)."""
        self._test(session, self.worthiest())

    def trivial(self, session: Session) -> None:
        """Shortcut: a claim the prior settles ('at least 1 present'), tested as well as the
        expert tests any: worth 0."""
        self._test(session, Claim("at_least", count=1))

    def wrong_verdict(self, session: Session) -> None:
        """The expert's claim and experiment, the verdict turned round."""
        self._test(session, self.worthiest(), invert=True)

    def naive(self, session: Session) -> None:
        """The first candidate claimed present; the sample read neat at its library peak,
        unblanked: present (0.9) if it reads above the presence threshold."""
        from labtools.simulators.tasks.scripting import nm

        key = self.candidates[0]
        call = caller(session)
        call("state_hypothesis", claim=f"{key} present")
        call = self._read_neat(session)
        read = call(
            "reader_read_absorbance",
            plate="plate_1",
            wavelength=nm(analyte(key).peak_nm),
            wells=["A1"],
        )["values"].get("A1")
        present = read is None or float(read) > mixture.PRESENT_OD
        call("submit_hypothesis", probability=0.9 if present else 0.1)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the worthiest claim at its prior probability."""
        claim = self.worthiest()
        call = caller(session)
        call("state_hypothesis", claim=str(claim))
        call("submit_hypothesis", probability=round(self.prior_of(claim), 4))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the worthiest claim judged on every candidate present at the
        log-centre of the level's optical densities (library ε, nominal path)."""
        claim = self.worthiest()
        centre = math.sqrt(self.level.od[0] * self.level.od[1])
        path = nominal_path_cm(WELL_UL)
        guess = {k: centre / (analyte(k).epsilon * path) * 1e6 for k in self.candidates}
        call = caller(session)
        call("state_hypothesis", claim=str(claim))
        call("submit_hypothesis", probability=0.9 if claim.holds(guess) else 0.1)

    def no_controls(self, session: Session) -> None:
        """Shortcut: the worthiest claim judged on the mixture's one uncalibrated reading
        (:meth:`~.mixture.MixtureTask.uncalibrated`), with the expert's spread."""
        claim = self.worthiest()
        caller(session)("state_hypothesis", claim=str(claim))
        p = self.belief(claim, self.uncalibrated(session))
        caller(session)("submit_hypothesis", probability=round(p, 4))


class Hypothesis(mixture.Mixture):
    """A claim about a sample the agent states, tests and gives a probability
    (:mod:`.hypothesis`)."""

    id = "hypothesis"
    title = "State a hypothesis about a sample's analytes, test it, and say how probable it is"
    members: ClassVar[tuple[str, ...]] = ()  # mixture's world, another question

    task = HypothesisTask

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = tuple(structure.split("+"))
        return {
            "title": f"A hypothesis about which of {len(keys)} analytes a sample holds",
            "rubric": mixture.rubric(keys),
            "candidates": keys,
        }
