"""The ``stability`` family: has an old stock faded, how much of its label is left, and which
of a panel of candidates does it hold? The hand-written task ``dye_stability`` generalised:
its question, submission and outcome (:func:`~labtools.simulators.tasks.dye_stability.outcome`)
over panels of 2-4 analytes.

Structures: panels of 2, 3 or 4 candidates over :data:`~.parts.ANALYTES` (``a+b+c``, in
``ANALYTES`` order), each an analyte with its nearest look-alikes (every two at most 0.95
alike), and the hand-written task's three azo dyes (:mod:`.stability_parts`). Levels
(:data:`~.stability_parts.LEVEL`) set the stock's label (8 to 400 OD neat: one to three dilution
steps), how near the threshold a faded stock's share lies, the reader's noise and the budget.
At level 1 the azo panel is the hand-written task (a 500 µM label, 45-85 % retained).

Hidden truth per seed: which candidate the stock holds (uniform); its preparation error
(N(1, 2 %²), as the hand-written task's); whether it faded (probability 0.6) and the share of
it left (uniform in the level's range); each candidate's lot content (N(1, 5 %²), truncated at
2.5 sd: ε per mole as labelled, on top of a food dye's batch, ``species.toml``), shared by the
stock and the candidate's certified standard (its label ±1 %). Fading products absorb nothing
in the reader's range: an azo dye's cleavage products are colourless aromatic amines [L:
Pandey, Singh & Iyengar 2007, Int. Biodeterior. Biodegrad. 59:73-84, as dye_stability's];
NADH and NADPH oxidise to NAD(P)⁺, which absorbs at 260 nm but not at 340 nm [L: the NADH
340 nm assay, Bergmeyer]; for the other classes (xanthenes, rhodamines, triarylmethanes,
thiazines, flavins, nitroanilines) the photobleached products are taken as colourless [A]. So
a faded stock reads as a weaker one: only a concentration calibrated against the standard,
set against the label, gives the verdict; the library's ε over the nominal path
(:meth:`StabilityTask.no_controls`) misses by the lot's content.

Reward: the dye_stability outcome (the right candidate × (1 − (p − y)²) × exp(−|ln(ĉ/c)|/0.1),
y = 1 when less than 90 % of the label is left) times the process rubric
(:func:`~.stability_parts.rubric`: a blank, the claimed candidate's standard read in range,
the stock read in range, a replicate), weight 0.6.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.simulators.families.identify_parts import lot
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import HELD_OUT_PAIRS, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.stability_parts import (
    CONTENT_SD,
    CONTENT_TRUNCATE,
    LEVEL,
    MADE_SD,
    P_DEGRADED,
    THRESHOLD,
    StabilityLevel,
    label_um,
    rubric,
    structures,
)
from labtools.simulators.families.task import (
    SAMPLE,
    STANDARDS,
    STOCK_UL,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    standard,
)
from labtools.simulators.tasks.dye_quantification import DyeLimits
from labtools.simulators.tasks.dye_stability import NAIVE_PATH_CM, SURE, TAU, outcome, p_degraded
from labtools.simulators.tasks.scripting import batch, caller, nm, nominal_path_cm
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude, qty

__all__ = ["Stability", "StabilityTask"]

#: the sd of the experiment without controls' verdict: the library's batch spread, as the
#: hand-written task's [A]
NO_CONTROLS_SD = 0.03


class StabilityTask(FamilyTask):
    """One instance of :class:`Stability` (its class attributes set by
    :meth:`Stability.build`)."""

    limits = DyeLimits()
    level: ClassVar[StabilityLevel]
    candidates: ClassVar[tuple[str, ...]]
    label_um: ClassVar[float]

    @property
    def stocks(self) -> dict[str, str]:
        """Each candidate's standard container."""
        return dict(zip(self.candidates, STANDARDS, strict=False))

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, Any]:
        """The stock's candidate, preparation error, retained share and concentration (µM),
        and each candidate's lot content (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, Any]:
        key = self.candidates[int(rng.integers(len(self.candidates)))]
        made = float(rng.normal(1.0, MADE_SD))
        faded = bool(rng.random() < P_DEGRADED)
        retained = float(rng.uniform(*self.level.retained)) if faded else 1.0
        content = {}
        for k in self.candidates:
            z = float(rng.standard_normal())
            while abs(z) > CONTENT_TRUNCATE:
                z = float(rng.standard_normal())
            content[k] = 1.0 + CONTENT_SD * z
        return {
            "candidate": key,
            "made": made,
            "retained": retained,
            "micromolar": self.label_um * made * retained,
            "content": content,
        }

    def prepare(self, lab: Lab, seed: int) -> None:
        """Each candidate's lot (its batch's ε times its content) into the world's library, the
        certified standards and the stock into the reservoir, their labels on the deck."""
        world = lab.shared["world"]
        truth = self.truth(lab)
        library, hidden = SpeciesLibrary.default(), world.hidden_truth()
        for key in self.candidates:
            factor, shift = lot(hidden, key)
            world.species.put(library[key].batch_of(factor * truth["content"][key], shift))
        for key, container in self.stocks.items():
            world.fill_stock(standard(container, key))
        label = f"stock, made up at {self.label_um:g} µM"
        world.fill(
            SAMPLE,
            Mixture.solution(STOCK_UL, {truth["candidate"]: truth["micromolar"] * 1e-6}),
            label,
        )
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update({c: world.labels[c] for c in (*self.stocks.values(), SAMPLE)})

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        names = "; ".join(f"{analyte(k).name} ({k})" for k in self.candidates)
        standards = "; ".join(f"{c}: '{labels[c]}'" for c in self.stocks.values())
        return (
            f"The container {SAMPLE} holds an aqueous stock of one of these "
            f"{len(self.candidates)}: {names}; its label (lh_get_deck shows it) gives the "
            "concentration it was made up at some weeks ago, and it was kept in the light. "
            "A faded stock's products absorb nothing in the plate reader's range. Certified "
            f"standards of every candidate, from the stock's lots, are in the reservoir "
            f"({standards}); water at {WATER}, a waste trough at {WASTE}. lh_get_deck shows the "
            "deck: two 96-well plates, tip racks, the plate reader and a spectrometer. Find "
            "which candidate the stock holds, its concentration now, and whether it has "
            f"degraded (less than {THRESHOLD:.0%} of its label left). Submit once with "
            "submit_stability: the candidate's key, its concentration and P(degraded). Reward: "
            f"the right candidate × V × exp(−|ln(ĉ/c)|/{TAU}), with V = 1 − (p − y)², y = 1 if "
            "it has degraded, times how sound the experiment was (a blank, the claimed "
            "candidate's standard read within 0.1-2.0 OD, the stock read within 0.1-2.0 OD, "
            "the stock in replicate)."
        )

    async def take(self, key: str, concentration: Any, degraded: float) -> Submitted:
        """What every instance's ``submit_stability`` does (the schema checks the key is a
        candidate, the concentration 0-10 M and the probability 0-1)."""
        self.submission = {
            "analyte": key,
            "micromolar": magnitude(concentration, "micromolar"),
            "degraded": float(degraded),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0, "identity": 0.0, "verdict_term": 0.0, "accuracy": 0.0}
        truth = self.truth(lab)
        given = {
            "dye": self.submission["analyte"],
            "micromolar": self.submission["micromolar"],
            "degraded": self.submission["degraded"],
        }
        return outcome(given, truth["candidate"], truth["micromolar"], self.label_um)

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.stability_expert.stability` (survey, calibration against the standard)."""
        from labtools.simulators.families.stability_expert import stability

        key, found_um, sd = stability(
            caller(session), self.stocks, sample=SAMPLE, water=WATER, label_um=self.label_um
        )
        self._submit(session, key, found_um, p_degraded(found_um / self.label_um, sd))

    def naive(self, session: Session) -> None:
        """The hand-written task's: the stock read neat at each candidate's library peak, the
        candidate whose reading is largest per library ε named, its concentration from that OD
        over the well's geometric path, the verdict certain."""
        call = caller(session)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", WELL_UL)], "new", channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        od = {}
        for key in self.candidates:
            value = call(
                "reader_read_absorbance",
                plate="plate_1",
                wavelength=nm(analyte(key).peak_nm),
                wells=["A1"],
            )["values"].get("A1")  # absent when over-range
            od[key] = 4.0 if value is None else max(float(value), 0.0)
        key = max(self.candidates, key=lambda k: od[k] / analyte(k).epsilon)
        found_um = od[key] / (analyte(key).epsilon * NAIVE_PATH_CM) * 1e6
        sure = SURE if found_um < THRESHOLD * self.label_um else 1 - SURE
        self._submit(session, key, found_um, sure)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the first candidate, at its label, even odds of fading."""
        self._submit(session, self.candidates[0], self.label_um, 0.5)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the first candidate at the prior's mean share of its label, and
        the prior's P(degraded). No package data tells the stock's candidate or its fading."""
        low, high = self.level.retained
        mean = (1 - P_DEGRADED) + P_DEGRADED * (low + high) / 2
        self._submit(session, self.candidates[0], self.label_um * mean, P_DEGRADED)

    def no_controls(self, session: Session) -> None:
        """Shortcut: the stock diluted (in 1 in 10 steps, by the label) to read about 1 OD
        and its spectrum read once, the nominal plate's OD taken off, fit by each candidate's
        library spectrum over the nominal path (with a constant): the best fit names it, its
        scale the concentration; the verdict with the library's batch spread (3 %) for its sd.
        No standard, blank or replicate."""
        from labtools.simulators.families.protocol import ACCURATE_OD, GRID_NM, PLATE, read
        from labtools.simulators.families.stability_expert import dilution, fill
        from labtools.simulators.tasks.scripting import nominal_plate_od, site_of

        call = caller(session)
        home = site_of(call("lh_get_deck"), PLATE)
        library, path = SpeciesLibrary.default(), nominal_path_cm(WELL_UL)
        strongest = max(analyte(k).epsilon for k in self.candidates)
        neat = self.label_um * 1e-6 * strongest * path
        spares = ["plate_1:A2", "plate_1:A3", "plate_1:A4"]
        stages, factor = dilution(SAMPLE, WATER, neat, "plate_1:A1", spares)
        fill(call, stages)
        spectrum = read(call, home, ["A1"])["A1"] - nominal_plate_od()
        fits = {}
        for key in self.candidates:
            per_um = np.asarray(library[key].absorptivity(GRID_NM), dtype=float) * path * 1e-6
            used = np.isfinite(spectrum) & (spectrum < ACCURATE_OD)
            design = np.column_stack([per_um, np.ones_like(per_um)])[used]
            coef, *_ = np.linalg.lstsq(design, spectrum[used], rcond=None)
            residual = spectrum[used] - design @ coef
            fits[key] = (float(residual @ residual), float(coef[0]))
        key = min(fits, key=lambda k: fits[k][0])
        found_um = fits[key][1] * factor
        self._submit(session, key, found_um, p_degraded(found_um / self.label_um, NO_CONTROLS_SD))

    @staticmethod
    def _submit(session: Session, key: str, micromolar: float, p: float) -> None:
        caller(session)(
            "submit_stability",
            analyte=key,
            concentration=qty(max(micromolar, 0.0), "micromolar", decimals=4),
            degraded=round(min(max(p, 0.0), 1.0), 4),
        )


class Stability(LevelledFamily):
    """Has a stock faded, how much is left, and which candidate is it (:mod:`.stability`)."""

    id = "stability"
    title = "Which candidate an old stock holds, how much of its label is left, and has it faded"
    members = ("dye_stability",)
    task = StabilityTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        if HELD_OUT_SPECIES & set(keys):
            return True
        kinds = {analyte(k).kind for k in keys}
        return any(pair <= kinds for pair in HELD_OUT_PAIRS)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = tuple(structure.split("+"))
        return {
            "title": f"Which of {len(keys)} candidates an old stock holds, and has it faded",
            "rubric": rubric(keys),
            "candidates": keys,
            "label_um": label_um(LEVEL[level], keys),
            "submit": _submit_tool(keys),
        }


def _submit_tool(keys: tuple[str, ...]) -> Any:
    """The ``submit_stability`` tool of a panel: the candidate among ``keys``."""

    async def submit(
        self: StabilityTask, analyte: str, concentration: Any, degraded: float
    ) -> Submitted:
        """Submit the stock's candidate, its concentration now and P(degraded). Ends the
        episode."""
        return await self.take(analyte, concentration, degraded)

    which = Literal.__getitem__(keys)  # the panel's keys
    submit.__annotations__ = {
        "analyte": Annotated[which, Arg("Which candidate the stock holds (its key).")],
        "concentration": Annotated[
            Concentration, Arg("Its concentration in the stock now.", within="concentration")
        ],
        "degraded": Annotated[
            float, Arg("Probability that the stock has degraded.", within="probability")
        ],
        "return": Submitted,
    }
    return tool(name="submit_stability", destructive=True)(submit)
