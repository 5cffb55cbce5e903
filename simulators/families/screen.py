"""The ``screen`` family: which of one to four test compounds inhibit alkaline phosphatase, with
a probability per compound and, for a real inhibitor, its Ki.

It generalises the hand-written ``compound_screen`` task (:mod:`..tasks.compound_screen`,
whose docstring argues the reward): the same lab (``compound_screen_lab.toml``), the same
question asked of each compound, the same verdict term and Ki term, imported from it
(:func:`~..tasks.compound_screen.verdict_term`, :func:`~..tasks.compound_screen.controlled`,
:func:`~..tasks.enzyme_kinetics.log_term`). The mechanism is not asked. ``compound_screen``'s
own case (one compound, tartrazine as the decoy, π = 0.75) is the structure
``1+tartrazine+p75``.

Structures: ``<n>+<decoy>+p<π>``: ``n`` compounds (1-4) at ``reservoir:A6`` onwards, the decoy
species a compound that does not inhibit is (an analyte absorbing at 405 nm,
:func:`~.kinetics_parts.absorbers` of the ``alp`` pair) and the prior share π of inhibitors
(0.5 or 0.75). Inhibitor X of ``kinetics.toml`` is the only inhibitor there, and it applies to
alkaline phosphatase only, so every structure is alkaline phosphatase with pNPP.

Hidden truth per seed and compound: whether it inhibits (probability π); an inhibitor's purity
(its real inhibitor content over its label, :data:`PURITY`); a decoy's optical density at
405 nm at the screening share (the level's range, log-uniform). Shared by the screen's
inhibitors: inhibitor X's mechanism and Ki (drawn by the kinetics engine from ``kinetics.toml``'s
published span, with its day factor), the enzyme's Km, kcat, lot and day factors, the reader.
The Ki scored is the one the wells run on, per *labelled* compound: Ki at work / purity.

Reward. Per compound j: V*ⱼ (:func:`verdict_term` with the structure's π, earned above the
prior's V₀ only with :func:`controlled`'s three readings for that compound), times
exp(−ln²(K̂i/Ki)/2τ²) (τ = 0.3) for a real inhibitor. The outcome is their mean; the process
rubric (every compound read without enzyme, a blank) governs
:data:`~.screen_parts.PROCESS_WEIGHT` of it. The parts, levels and rubric are in
:mod:`.screen_parts`, the protocols in :mod:`.screen_expert`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import numpy as np
from typing_extensions import TypedDict

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.naming import ContainerNames
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import analyse
from labtools.simulators.families.kinetics_parts import label_text
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.screen_parts import (
    COMPOUNDS,
    LEVEL,
    PURITY,
    SCREEN_UL,
    STOCK_UL,
    WELL_UL,
    ScreenLevel,
    held_out,
    names,
    parse,
    rubric,
    stock_molar,
    structures,
)
from labtools.simulators.families.task import FamilyTask, log_uniform
from labtools.simulators.tasks.compound_screen import controlled, verdict_term
from labtools.simulators.tasks.enzyme_kinetics import (
    ENZYME,
    INHIBITOR,
    TAU,
    KineticsLimits,
    log_term,
    positive_value,
)
from labtools.simulators.tasks.offers import ENDPOINT, KINETIC, LIQUID
from labtools.simulators.tasks.scripting import nominal_path_cm
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude

__all__ = ["COMPOUNDS", "LEVEL", "Screen", "ScreenTask"]


# -- the task ----------------------------------------------------------------------------------
class ScreenTask(FamilyTask):
    """One instance: its level's physics and budget, its screen's compounds, decoy and share."""

    lab_tools = LIQUID | ENDPOINT | KINETIC

    config = "labtools.simulators:compound_screen_lab.toml"
    limits = KineticsLimits()
    level: ClassVar[ScreenLevel]  # type: ignore[assignment]
    compounds: ClassVar[tuple[str, ...]]
    decoy: ClassVar[str]
    share: ClassVar[float]

    def drawn(self, lab: Lab) -> dict[str, float]:
        """This seed's draw for every compound place (all four, whatever the size)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        out: dict[str, float] = {}
        for j in range(len(COMPOUNDS)):
            out[f"inhibits_{j}"] = float(rng.random() < self.share)
            out[f"purity_{j}"] = float(rng.uniform(*PURITY))
            out[f"decoy_od_{j}"] = log_uniform(rng, self.level.decoy_od)
        return out

    def truth(self, lab: Lab) -> dict[str, float]:
        """Per compound: 1 if it inhibits, and its Ki per labelled compound (M; NaN for a
        decoy), with what this seed drew (trainers and scoring only)."""
        world = lab.shared["world"]
        drawn = self.drawn(lab)
        ki = float(world.kinetics.inhibition_at_work(INHIBITOR)["ki_molar"])
        out = dict(drawn)
        for j in range(len(self.compounds)):
            inhibits = drawn[f"inhibits_{j}"] > 0.5
            out[f"ki_{j}"] = ki / drawn[f"purity_{j}"] if inhibits else math.nan
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The enzyme's and inhibitor X's truth drawn; each compound's stock filled (inhibitor X
        at its purity, or the decoy at its OD; the lab holds only A6, the rest are free), its
        label on the deck."""
        world = lab.shared["world"]
        world.kinetics.enzyme(ENZYME)
        world.kinetics.inhibition(INHIBITOR)
        drawn = self.drawn(lab)
        labelled = stock_molar(self.level)
        epsilon = float(SpeciesLibrary.default()[self.decoy].absorptivity(405.0))
        shown = self.stock_labels()
        for j, container in enumerate(self.compounds):
            if drawn[f"inhibits_{j}"] > 0.5:
                content = {INHIBITOR: labelled * drawn[f"purity_{j}"]}
            else:
                share = SCREEN_UL / WELL_UL
                od = drawn[f"decoy_od_{j}"]
                content = {self.decoy: od / (epsilon * nominal_path_cm(WELL_UL) * share)}
            world.fill(container, Mixture.solution(STOCK_UL, content), shown[container])
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(shown)
        names = ContainerNames(handler.plr.deck)  # the deck's belief of the stocks' volumes
        for container in self.compounds:
            names.resolve(container)[0].tracker.set_volume(STOCK_UL)

    def stock_labels(self) -> dict[str, str]:
        """The compounds' labels: the level's strength, never the seed's content."""
        text = label_text(stock_molar(self.level))
        return {
            c: f"test compound {j + 1}: {text} in water, as weighed (purity not stated)"
            for j, c in enumerate(self.compounds)
        }

    def statement(self, lab: Lab) -> str:
        n = len(self.compounds)
        places = ", ".join(c.partition(":")[2] for c in self.compounds)
        which = "a test compound" if n == 1 else f"{n} test compounds"
        return (
            "Alkaline phosphatase hydrolyses p-nitrophenyl phosphate (pNPP) to p-nitrophenol, "
            "whose anion is yellow (read it at 405 nm; the pH 10 buffer ionises it fully). The "
            "reservoir holds water (A1), the carbonate buffer (A2), pNPP (A3), a p-nitrophenol "
            f"standard (A4), the enzyme (A5) and {which} ({places}); their labels "
            "(lh_get_deck) give the concentrations. Plates plate_1 and plate_2 are free. "
            "Decide for each compound whether it inhibits the enzyme and, if it does, its "
            "inhibition constant Ki (per the compound's labelled concentration). A compound "
            "that does not inhibit is a coloured look-alike: "
            f"{analyte(self.decoy).name}, which absorbs at 405 nm. Submit once with "
            "submit_screen: for each compound (compound_1 is A6, compound_2 A7, …) P(inhibits) "
            "and a Ki "
            "(used only if it inhibits). Reward: the mean over the compounds of V = 1 − (p − y)² "
            "(y = 1 if it inhibits), counted above the prior's V₀ = 1 − (π − y)² (π = "
            f"{self.share:g}: the share of such compounds that inhibit) only if one plate was "
            "read at one wavelength with a reaction holding the compound, the compound without "
            "enzyme at the same share of the well and a reaction without any compound; if it "
            f"inhibits, that times exp(−ln²(K̂i/Ki)/2τ²) with τ = {TAU}. The mean is weighed by "
            "how sound the experiment was (each compound read without enzyme, a blank)."
        )

    async def take(self, inhibits: Mapping[str, Any], ki: Mapping[str, Any]) -> Submitted:
        """Check and keep a submission: per compound place a probability and a Ki > 0."""
        from labtools.errors import OutOfRange

        probabilities, constants = {}, {}
        for place in self.places():
            p = float(inhibits[place])
            if not (math.isfinite(p) and 0.0 <= p <= 1.0):
                raise OutOfRange(
                    f"the probability for {place} must be within 0–1, not {p:g}",
                    field=f"/inhibits/{place}",
                    hint="give each compound a probability from 0 to 1",
                )
            probabilities[place] = p
            constants[place] = positive_value(magnitude(ki[place], "molar"), f"ki/{place}", "M")
        self.submission = {"inhibits": probabilities, "ki_molar": constants}
        return {"received": True}

    def places(self) -> tuple[str, ...]:
        """The compounds as the submission names them (``compound_1`` …)."""
        return names(len(self.compounds))

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        episode = analyse(lab.journal.events(), resolve=lab.data)
        terms, verdicts, kis = [], [], []
        for j, (container, place) in enumerate(zip(self.compounds, self.places(), strict=True)):
            inhibits = truth[f"inhibits_{j}"] > 0.5
            others = [c for c in self.compounds if c != container]
            evidence = controlled(episode, compound=container, others=others)
            verdict = verdict_term(
                self.submission["inhibits"][place], inhibits, evidence, self.share
            )
            verdicts.append(verdict)
            term = verdict
            if inhibits:
                ki = log_term(self.submission["ki_molar"][place], truth[f"ki_{j}"])
                kis.append(ki)
                term *= ki
            terms.append(term)
        out = {"raw": float(np.mean(terms)), "verdict_term": float(np.mean(verdicts))}
        if kis:
            out["ki_term"] = float(np.mean(kis))
        return out

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.screen_expert.expert`: a pilot, then one plate with a blank, each compound
        without enzyme, references and each compound's reactions at two pNPP levels."""
        from labtools.simulators.families.screen_expert import expert

        self._submit(session, *expert(session, self.compounds))

    def naive(self, session: Session) -> None:
        """:func:`~.screen_expert.naive`: raw OD slopes of one reaction per compound and one
        without, at the label's top pNPP; no blank, no control."""
        from labtools.simulators.families.screen_expert import naive

        self._submit(session, *naive(session, self.compounds))

    def no_controls(self, session: Session) -> None:
        """:func:`~.screen_expert.uncontrolled`: the expert's screen without its pilot, blank,
        compound-only wells or replicates, designed from the package's Km and kcat."""
        from labtools.simulators.families.screen_expert import uncontrolled

        self._submit(session, *uncontrolled(session, self.compounds))

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; even odds, Ki the screening level in the well."""
        level = self.level.screen_molar
        self._submit(session, [0.5] * len(self.compounds), [level] * len(self.compounds))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the stated share π, Ki the centre of ``kinetics.toml``'s span."""
        from labtools.simulators.world.kinetics import KineticsData

        low, high = KineticsData.default().inhibitors[INHIBITOR].ki_mm
        ki = math.sqrt(low * high) * 1e-3
        self._submit(session, [self.share] * len(self.compounds), [ki] * len(self.compounds))

    def _submit(self, session: Session, p: list[float], ki: list[float]) -> None:
        safe = [k if math.isfinite(k) and k > 0 else self.level.screen_molar for k in ki]
        session.call_tool(
            "submit_screen",
            {
                "inhibits": {
                    place: round(float(x), 6) for place, x in zip(self.places(), p, strict=True)
                },
                "ki": {
                    place: {"value": float(f"{min(k, 100.0) * 1e3:.6g}"), "unit": "millimolar"}
                    for place, k in zip(self.places(), safe, strict=True)
                },
            },
        ).unwrap()


def _submit_tool(places: tuple[str, ...]) -> Any:
    """``submit_screen`` for a screen's places: one probability and one Ki per compound."""

    async def submit(self: ScreenTask, inhibits: Any, ki: Any) -> Submitted:
        """Submit each compound's P(inhibits) and Ki. Ends the episode."""
        return await self.take(inhibits, ki)

    odds = TypedDict(  # type: ignore[misc]  # the functional form, keys known at run time
        "PerCompoundProbability", {k: float for k in places}
    )
    constants = TypedDict(  # type: ignore[misc]
        "PerCompoundKi", {k: Concentration for k in places}
    )
    submit.__annotations__ = {
        "inhibits": Annotated[
            odds,
            Arg("Each compound's probability that it inhibits, by name.", within="probability"),
        ],
        "ki": Annotated[
            constants,
            Arg("Each compound's Ki if it inhibits (> 0), by name.", within="constant"),
        ],
        "return": Submitted,
    }
    return tool(name="submit_screen", destructive=True)(submit)


class Screen(LevelledFamily):
    """Which test compounds inhibit alkaline phosphatase, and their Ki (:mod:`.screen`)."""

    id = "screen"
    title = "Which test compounds inhibit an enzyme, with a probability each and their Ki"
    members = ("compound_screen",)
    task = ScreenTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        size, decoy, share = parse(structure)
        compounds = COMPOUNDS[:size]
        return {
            "title": f"Which of {size} compounds inhibit alkaline phosphatase "
            f"(decoy {analyte(decoy).name}, π = {share:g})",
            "rubric": rubric(compounds),
            "compounds": compounds,
            "decoy": decoy,
            "share": share,
            "submit": _submit_tool(names(size)),
        }
