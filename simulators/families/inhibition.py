"""The ``inhibition`` family: a reversible inhibitor's mechanism and inhibition constant Ki,
with the enzyme's Km and kcat per labelled active site, from the product the plate reader reads.

The hand-written ``enzyme_inhibition`` generalised: the same question, submission (Km, kcat, Ki
and a probability per mechanism) and reward (:func:`~labtools.simulators.tasks.enzyme_kinetics.
inhibition_score`), over the ``kinetics`` family's enzyme–substrate pairs and coloured
preparations (:mod:`.kinetics_parts`) and the published inhibitors of each enzyme
(:mod:`.inhibition_parts`). Structures: ``<pair>+<inhibitor>`` or
``<pair>+<inhibitor>+<absorber>``; ``alp+inhibitor_x`` asks ``enzyme_inhibition``'s question of
the family's alkaline phosphatase.

Hidden truth per seed: everything the ``kinetics`` family draws (Km and kcat in the pair's
published spans, the lot's activity, the day's factors, the product's absorptivity in the
medium, the buffer's real pH, the stocks' ±1 %, the absorber's amount: :class:`~.kinetics.
KineticsTask`), and the inhibitor's mechanism (:meth:`~.inhibition_parts.Inhibitor.odds`) and
Ki (log-uniform in its published span) with the day's factor on it. Scored is what the wells
run on: Km, kcat × the lot's activity per labelled site, and Ki with the day's factor.

Reward: raw = exp(−ln²(K̂m/Km)/2τ²) · exp(−ln²(k̂cat/kcat)/2τ²) · exp(−ln²(K̂i/Ki)/2τ²) ·
(1 − B/2), τ = 0.3, B the Brier score of the mechanism's probabilities, times the process rubric
(a blank, a product standard curve, a no-enzyme control, replicate reaction wells and the
substrate series at three inhibitor levels), weight :data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, levels, replicates
from labtools.simulators.families.inhibition_parts import (
    LEVEL,
    InhibitionLevel,
    Inhibitor,
    held_out,
    inhibitor,
    inhibitor_labels,
    parse,
    structures,
)
from labtools.simulators.families.kinetics import (
    BUFFER,
    CONTAINERS,
    ENZYME,
    STANDARD,
    SUBSTRATE,
    KineticsTask,
    no_enzyme,
)
from labtools.simulators.families.kinetics_parts import label_text
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import STOCK_UL, WASTE, WATER
from labtools.simulators.families.task import log_uniform as draw_log_uniform
from labtools.simulators.tasks.enzyme_kinetics import (
    MEDIAN_KCAT_PER_S,
    TAU,
    WELL_SPAN,
    Mechanism,
    inhibition_score,
    mechanism_probabilities,
    molar_qty,
    positive_value,
)
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.world.kinetics import MECHANISMS
from labtools.tool import Arg, tool
from labtools.units import Concentration, RateConstant, magnitude, qty

__all__ = ["INHIBITOR", "PROCESS_WEIGHT", "Inhibition", "InhibitionTask"]

#: the reservoir: the ``kinetics`` family's water, buffer, substrate, standard and enzyme, and
#: the inhibitor
INHIBITOR = "reservoir:A6"
STOCKS = {**CONTAINERS, "inhibitor": INHIBITOR}
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6


# -- the rubric --------------------------------------------------------------------------------
def inhibitor_levels(episode: Episode) -> float:
    """Inhibitor levels (none included) at which three or more substrate levels were read over
    time with the enzyme, out of three (as ``enzyme_inhibition``'s)."""
    series: dict[str, set[str]] = {}
    for r in episode.of([ENZYME], "kinetic"):
        if r.holds([SUBSTRATE]):
            key = f"{r.fraction(INHIBITOR):.2g}"
            series.setdefault(key, set()).add(f"{r.fraction(SUBSTRATE):.2g}")
    return min(1.0, sum(len(s) >= 3 for s in series.values()) / 3)


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.15,
            lambda e: blanks(e, [SUBSTRATE, ENZYME], [WATER, BUFFER]),
            "a buffer-only (or empty) well read on each plate with reactions",
        ),
        Component(
            "standards",
            0.25,
            lambda e: levels(e, STANDARD, count=3, lacks=[ENZYME]),
            "the product standard read at three or more levels without enzyme",
        ),
        Component(
            "no_enzyme",
            0.15,
            no_enzyme,
            "the substrate read over time without enzyme (its own hydrolysis, the baseline)",
        ),
        Component(
            "replicates",
            0.2,
            lambda e: replicates(e, [ENZYME], copies=2, conditions=5, mode="kinetic"),
            "five reaction conditions in duplicate or more",
        ),
        Component(
            "inhibitor_levels",
            0.25,
            inhibitor_levels,
            "three inhibitor levels (none included), each with three substrate levels or more",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note=(
        "The mechanism's probabilities are scored by the outcome's Brier term, a strictly "
        "proper score: no process component rewards them again."
    ),
)


# -- the task ----------------------------------------------------------------------------------
class InhibitionTask(KineticsTask):
    """One instance of :class:`Inhibition` (its class attributes set by
    :meth:`Inhibition.build`): a :class:`~.kinetics.KineticsTask` with an inhibitor."""

    rubric = RUBRIC
    level: ClassVar[InhibitionLevel]
    inhibitor_key: ClassVar[str]

    @property
    def inhibitor(self) -> Inhibitor:
        return inhibitor(self.inhibitor_key)

    # -- the hidden world ----------------------------------------------------------------------
    def _draw_inhibitor(self, rng: np.random.Generator) -> dict[str, Any]:
        """The inhibitor's reference mechanism and Ki (M), as the engine keeps them."""
        inh = self.inhibitor
        odds = inh.odds()
        mechanism = MECHANISMS[int(rng.choice(len(MECHANISMS), p=[odds[m] for m in MECHANISMS]))]
        return {"mechanism": mechanism, "ki_molar": draw_log_uniform(rng, inh.ki)}

    def _install(self, world: Any) -> None:
        """The ``kinetics`` family's truth, and the inhibitor's, into the engine's hidden keys
        before it draws its own."""
        super()._install(world)
        world.hidden(f"kinetics/{self.inhibitor_key}", self._draw_inhibitor)

    def truth(self, lab: Lab) -> dict[str, Any]:
        """Km (M), kcat per labelled site (s⁻¹) and Ki (M) the wells run on, the mechanism, and
        what this seed drew (trainers and scoring only)."""
        out: dict[str, Any] = dict(super().truth(lab))
        work = lab.shared["world"].kinetics.inhibition_at_work(self.inhibitor_key)
        out["ki_molar"] = float(work["ki_molar"])
        out["mechanism"] = str(work["mechanism"])
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The ``kinetics`` family's stocks and truth, and the inhibitor's stock."""
        super().prepare(lab, seed)
        world = lab.shared["world"]
        molar = inhibitor_labels(self.pair, self.inhibitor, self.level)["inhibitor"]
        shown = self.stock_labels()[INHIBITOR]
        world.fill_stock(
            {
                "well": INHIBITOR,
                "species": self.inhibitor_key,
                "concentration_uM": molar * 1e6,
                "volume_ul": STOCK_UL,
                "tolerance": 0.01,
                "label": shown,
            }
        )
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels[INHIBITOR] = shown

    def stock_labels(self) -> dict[str, str]:
        """The ``kinetics`` family's labels and the inhibitor's (the level's figures and the
        published ones: never this seed's)."""
        out = super().stock_labels()
        molar = inhibitor_labels(self.pair, self.inhibitor, self.level)["inhibitor"]
        out[INHIBITOR] = f"{self.inhibitor.name} {label_text(molar)} ±1 % in water"
        return out

    def statement(self, lab: Lab) -> str:
        p, inh = self.pair, self.inhibitor
        coloured = ""
        if self.absorber_key is not None:
            coloured = (
                f" The enzyme preparation is coloured: it also holds "
                f"{analyte(self.absorber_key).name}, which absorbs at {p.read_nm:g} nm."
            )
        ellman = ""
        if p.product == "tnb":
            ellman = " Each thiocholine released reduces the buffer's DTNB to one TNB at once."
        return (
            f"{inh.name} is a reversible inhibitor of {p.name(p.enzyme)}. With "
            f"{p.name(p.substrate)} as the substrate, in the assay buffer at 25 °C (the room's), "
            "find whether it is competitive, noncompetitive (pure: one Ki for free enzyme and "
            "enzyme–substrate complex alike) or uncompetitive, its inhibition constant Ki, and "
            "the enzyme's Michaelis constant Km and turnover number kcat per labelled active "
            "site (Vmax over the enzyme concentration its label states; the lot's real "
            "activity is not stated). The enzyme turns the colourless substrate into "
            f"{p.name(p.product)}, read at {p.read_nm:g} nm.{ellman}{coloured} The reservoir "
            f"holds water ({WATER}), the assay buffer ({BUFFER}), the substrate ({SUBSTRATE}), "
            f"a standard of the product ({STANDARD}), the enzyme ({ENZYME}) and the inhibitor "
            f"({INHIBITOR}), a waste trough at {WASTE}; their labels (lh_get_deck) give the "
            "concentrations, the ± of the buffer's pH one standard deviation. lh_get_deck "
            "shows the deck: two 96-well plates, tip racks, the plate reader and a "
            "spectrometer. Reactions run while time passes: reader_read_absorbance_kinetic "
            "reads wells repeatedly. Submit once with submit_inhibition: Km, kcat, Ki and a "
            "probability for each mechanism (adding up to 1). Reward: the product of "
            f"exp(−ln²(estimate/truth)/2τ²) with τ = {TAU} for Km, kcat and Ki, and 1 − B/2 "
            "with B the Brier score of the probabilities (Σ (p − 1[true])²), times how sound "
            "the experiment was (a blank, a product standard curve, a no-enzyme control, "
            "replicate reaction wells, the substrate series at three inhibitor levels)."
        )

    @tool(name="submit_inhibition", destructive=True)
    async def submit(  # type: ignore[override]
        self,
        km: Annotated[Concentration, Arg("The Michaelis constant Km, > 0.", within="constant")],
        kcat: Annotated[
            RateConstant,
            Arg("The turnover number per labelled active site, > 0.", within="turnover"),
        ],
        ki: Annotated[
            Concentration, Arg("The inhibitor's inhibition constant Ki, > 0.", within="constant")
        ],
        mechanism: Annotated[
            Mechanism,
            Arg(
                "Probability of each mechanism, each 0–1, adding up to 1 (±0.01).",
                within="probability",
            ),
        ],
    ) -> Submitted:
        """Submit Km, kcat, Ki and the mechanism's probabilities. Ends the episode."""
        values: dict[str, Any] = {
            "km_molar": positive_value(magnitude(km, "molar"), "km", "M"),
            "kcat_per_s": positive_value(magnitude(kcat, "1 / second"), "kcat", "1/s"),
            "ki_molar": positive_value(magnitude(ki, "molar"), "ki", "M"),
        }
        values["mechanism"] = mechanism_probabilities(mechanism)
        self.submission = values
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        out = inhibition_score(
            self.submission,
            truth["km_molar"],
            truth["kcat_per_s"],
            truth["ki_molar"],
            truth["mechanism"],
        )
        for name, key in (("km", "km_molar"), ("kcat", "kcat_per_s"), ("ki", "ki_molar")):
            out[f"{name}_ratio"] = self.submission[key] / truth[key]
        return out

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.inhibition_expert.constants`: six substrate levels at three inhibitor levels
        (none, and up to four times the published Ki) with a blank, product standards,
        no-enzyme and enzyme-only wells, pre-reads, kinetic reads and a path check; the three
        mechanisms' rate laws fitted, the probabilities from their fits."""
        from labtools.simulators.families.inhibition_expert import constants

        km, kcat, ki, odds = constants(
            caller(session), self.pair, self.inhibitor, STOCKS, wells=self.budget.wells
        )
        self._submit_inhibition(session, km, kcat, ki, odds)

    def naive(self, session: Session) -> None:
        """The ``enzyme_inhibition`` naive protocol: two wells at the top substrate level with a
        tenth of the enzyme stock, one of them with a tenth of the inhibitor stock; endpoints
        after 10 minutes, unblanked, over the library's ε at the product's peak and 1 cm, the
        enzyme taken as saturated; Ki as if noncompetitive from their ratio, Km the published
        value, the mechanisms equally likely."""
        from labtools.simulators.families.inhibition_expert import endpoints

        kcat, ki = endpoints(caller(session), self.pair, STOCKS)
        uniform = {m: 1.0 / len(MECHANISMS) for m in MECHANISMS}
        self._submit_inhibition(session, self.pair.km_centre, kcat, ki, uniform)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; Km and Ki at the centres of the levels the substrate's and the
        inhibitor's labels allow in a well, kcat the median enzyme's, the mechanisms equally
        likely."""
        from labtools.demo.labels import label_micromolar

        shown = caller(session)("lh_get_deck")["labels"]
        centre = math.sqrt(WELL_SPAN[0] * WELL_SPAN[1])
        km = label_micromolar(shown[SUBSTRATE]) * 1e-6 * centre
        ki = label_micromolar(shown[INHIBITOR]) * 1e-6 * centre
        uniform = {m: 1.0 / len(MECHANISMS) for m in MECHANISMS}
        self._submit_inhibition(session, km, MEDIAN_KCAT_PER_S, ki, uniform)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the package's published figures (the spans' centres) and its
        odds of each mechanism."""
        p, inh = self.pair, self.inhibitor
        self._submit_inhibition(session, p.km_centre, p.kcat_centre, inh.ki_centre, inh.odds())

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.inhibition_expert.uncontrolled`: one reaction at the top substrate
        level without and one with the inhibitor, no blank, standard, pre-read or replicate,
        converted with the library's ε over the nominal path; kcat through the published Km, Ki
        as if noncompetitive, the package's odds of each mechanism."""
        from labtools.simulators.families.inhibition_expert import uncontrolled

        km, kcat, ki = uncontrolled(caller(session), self.pair, self.inhibitor, STOCKS)
        self._submit_inhibition(session, km, kcat, ki, self.inhibitor.odds())

    @staticmethod
    def _submit_inhibition(
        session: Session, km: float, kcat: float, ki: float, odds: Mapping[str, float]
    ) -> None:
        km = km if math.isfinite(km) and km > 0 else 1e-3
        kcat = kcat if math.isfinite(kcat) and kcat > 0 else MEDIAN_KCAT_PER_S
        ki = ki if math.isfinite(ki) and ki > 0 else 1e-3
        caller(session)(
            "submit_inhibition",
            km=molar_qty(min(km, 100.0)),
            kcat=qty(float(f"{min(kcat, 1e8):.6g}"), "1 / second"),
            ki=molar_qty(min(ki, 100.0)),
            mechanism={m: round(float(odds[m]), 6) for m in MECHANISMS},
        )


class Inhibition(LevelledFamily):
    """A reversible inhibitor's mechanism and Ki with the enzyme's Km and kcat
    (:mod:`.inhibition`)."""

    id = "inhibition"
    title = "Find a reversible inhibitor's mechanism and Ki, with the enzyme's Km and kcat"
    members = ("enzyme_inhibition",)
    task = InhibitionTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        p, inh, absorber = parse(structure)
        title = f"{inh.name} with {p.name(p.enzyme)}: mechanism, Ki, Km and kcat"
        if absorber is not None:
            title += f", the preparation coloured with {analyte(absorber).name}"
        return {
            "title": title,
            "pair_key": p.key,
            "absorber_key": absorber,
            "inhibitor_key": inh.key,
        }
