"""T5 — compound screen: does a test compound inhibit alkaline phosphatase, and how?

Hidden truth per seed: with probability :data:`P_INHIBITOR` the test compound (reservoir:A6) is
inhibitor X of ``kinetics.toml`` (a mechanism and Ki drawn by the kinetics engine, as in
``enzyme_inhibition``); otherwise it is a decoy, tartrazine, which does not touch the enzyme but
absorbs at 405 nm (ε ≈ 2.4 × 10⁴ M⁻¹ cm⁻¹ there: E1%1cm 530 at 426 nm [L: EU Regulation
231/2012, via ``species.toml``] on its ~95 nm band). At 250 µM in a well the decoy puts ~3.7 OD of
background (0.62 cm of liquid) under the p-nitrophenolate signal, at the top of the reader's
4.0 OD range: readings pass over range (no number) or are compressed by the stray light
(``plate_reader.toml``). On evaluation seeds 0–29 the naive protocol's raw slope ratio was 0
(every reading over range) on 3 of the 7 decoys and 0.63–1.09 on the others, so it called 6 of
7 inhibitors. A
compound-only control read shows the colour; a p-nitrophenol standard in the compound's
presence shows the compression. The expert's pilot reads, beside its reactions and a blank, a
reaction with the compound and the compound without enzyme at the same share, and calls a
coloured compound a decoy (this world's only coloured compound is the decoy).

Reward. V = 1 − (p − y)² is the Brier score of P(inhibits), y = 1 for a real inhibitor, and
V₀ = 1 − (π − y)² that of the prior π = :data:`P_INHIBITOR`. A verdict earns more than the
prior's score only if the episode read what decides it (:func:`controlled`): on one plate, at one
wavelength, a reaction (enzyme and pNPP) with the compound, the compound without enzyme at the
same share of the well, and a reaction without the compound. The verdict term is

    V* = V                       if V ≤ V₀ (a verdict worse than the prior always costs),
    V* = V₀ + E · (V − V₀)       otherwise, E = 1 with those readings and 0 without.

For a real inhibitor raw = V* · exp(−ln²(K̂i/Ki)/2τ²) · (1 − B/2) (τ = 0.3, B the mechanism's
Brier score, as in ``enzyme_inhibition``); for the decoy raw = V*. The process rubric
(:data:`COMPOUND_SCREEN`) rewards the compound-only control and a blank.

Why the gate. Whether the compound inhibits is a statement about the enzyme's rate with the
compound against its rate without it, and a coloured compound changes the slope a reaction reads
(over range, compressed by stray light) without touching the enzyme: only the compound's own
absorbance read at the reaction's share of it, on the same plate at the same wavelength,
tells inhibition from colour. Without those three readings a verdict holds no information
beyond the prior. The episode's reward is normalised per episode and floored at 0, so a
proper score alone does not make such a verdict worthless: a loss below the floor costs
nothing, and a confident call of the minority case (the decoy, 1 − π of the seeds) collects
that case's full score while losing nothing on the others. Scoring a verdict without the
deciding readings as no better than the prior removes that bet: with E = 0, stating π is the
best report whatever one believes (V* ≤ V₀, reached at p = π), and with E = 1 the term is the
Brier score, strictly proper. V₀ is 0.4375 for the decoy (0.11–0.19 normalised with the
process rubric's 0.8–0.92 for what such an episode reads) and 0.9375 for an inhibitor, where
the Ki and mechanism terms, which no reading-free answer earns, carry the outcome.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated

import numpy as np

from labtools.lab import Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.session.process import Component, Episode, Rubric, analyse, blanks, controls
from labtools.simulators.tasks.enzyme_kinetics import (
    ENZYME,
    INHIBITOR,
    TAU,
    KineticsLimits,
    Mechanism,
    label_centre,
    log_term,
    mechanism_probabilities,
    molar_qty,
    positive_value,
)
from labtools.simulators.tasks.kinetics_expert import inhibition_expert
from labtools.simulators.tasks.kinetics_protocol import WELL_UL, Assay, Progress, Well
from labtools.simulators.tasks.offers import ENDPOINT, KINETIC, LIQUID
from labtools.simulators.world.kinetics import MECHANISMS, KineticsData
from labtools.simulators.world.mixture import Mixture
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude

__all__ = ["COMPOUND_SCREEN", "CompoundScreen", "controlled", "verdict_term"]

COMPOUND = "reservoir:A6"
WATER, BUFFER, PNPP, ENZYME_STOCK = "reservoir:A1", "reservoir:A2", "reservoir:A3", "reservoir:A5"
DECOY = "tartrazine"
#: share of seeds whose compound is the real inhibitor [A: most screening hits are real, a
#: minority are assay artefacts such as coloured compounds]
P_INHIBITOR = 0.75
#: the stock's labelled strength (M) and volume (µL), as in compound_screen_lab.toml
COMPOUND_MOLAR, COMPOUND_UL = 50e-3, 15_000.0
#: a compound-only well (µL of the stock in 200 µL) and the OD above the blank beyond which
#: the expert calls the compound coloured at 405 nm (NaN: above the reader's range)
CONTROL_UL, COLOURED_OD = 20.0, 0.05
#: the expert pilot's test reaction (µL): the compound as in the control, pNPP stock (the
#: pilot's top level), the enzyme stock last
TEST_UL = {"buffer": 60.0, "compound": CONTROL_UL, "pnpp": 100.0, "enzyme": 20.0}
#: the expert's and naive protocol's P(inhibits) for each verdict
SURE = 0.98
NAIVE_SURE, NAIVE_RATIO = 0.9, 0.9
#: the naive protocol dilutes the compound stock this much (250 µM in its well)
NAIVE_DILUTION = 20.0

COMPOUND_SCREEN = Rubric(
    (
        Component(
            "compound_only",
            0.6,
            lambda e: controls(e, holds=[COMPOUND], lacks=[ENZYME_STOCK]),
            "the compound read without enzyme (its own absorbance at the assay's wavelength)",
        ),
        Component(
            "blank",
            0.4,
            lambda e: blanks(e, [PNPP, ENZYME_STOCK], [WATER, BUFFER]),
            "a buffer-only (or empty) well read on each plate with reactions",
        ),
    ),
    note="P(inhibits) and the mechanism's probabilities are scored by Brier terms (proper).",
)


class _Coloured(Exception):
    """The compound-only control absorbs at 405 nm: no kinetics worth running."""


def controlled(episode: Episode, compound: str = COMPOUND, others: Sequence[str] = ()) -> float:
    """1 if one plate was read at one wavelength with a reaction (enzyme and pNPP) holding the
    compound, the compound without enzyme at the same share of the well (2 significant
    figures), and a reaction without the compound (nor any of ``others``, the other compounds
    of a screen); else 0. Only then can a reading tell the compound's effect on the rate from
    its own absorbance."""
    tests: dict[tuple[str, float | None], set[str]] = {}
    alone: dict[tuple[str, float | None], set[str]] = {}
    references: set[tuple[str, float | None]] = set()
    for r in episode.readings:
        key = (r.well.partition(":")[0], r.wavelength_nm)
        share = f"{r.fraction(compound):.2g}"
        reaction = r.holds([ENZYME_STOCK]) and r.holds([PNPP])
        if reaction and not r.holds([compound]):
            if not any(r.holds([o]) for o in others):
                references.add(key)
        elif reaction:
            tests.setdefault(key, set()).add(share)
        elif r.holds([compound]) and not r.holds([ENZYME_STOCK]):
            alone.setdefault(key, set()).add(share)
    return float(
        any(key in references and shares & alone.get(key, set()) for key, shares in tests.items())
    )


def verdict_term(p: float, inhibits: bool, evidence: float, share: float = P_INHIBITOR) -> float:
    """The Brier score V of P(inhibits) = ``p``, counted above the prior's V₀ (the prior
    ``share`` of inhibitors) only in proportion to ``evidence`` (0–1): V if V ≤ V₀, else
    V₀ + evidence × (V − V₀)."""
    y = float(inhibits)
    score, prior = 1.0 - (p - y) ** 2, 1.0 - (share - y) ** 2
    return score if score <= prior else prior + evidence * (score - prior)


class _ScreenAssay(Assay):
    """An :class:`Assay` whose first run also reads a blank, a compound-only well and a
    reaction with the compound at the same share; it raises :class:`_Coloured` after that run
    if the compound-only well reads above the blank."""

    checked = False

    def run(
        self,
        wells: Sequence[Well],
        *,
        read_s: float,
        extra: Sequence[Well] = (),
        preread: bool = False,
    ) -> Progress:
        if self.checked:
            return super().run(wells, read_s=read_s, extra=extra, preread=preread)
        self.checked = True
        buffer, compound = self.stock["buffer"], self.stock["inhibitor"]
        blank, control, place = self.wells(3)
        added = [
            Well(blank, [(buffer, WELL_UL)]),
            Well(control, [(buffer, WELL_UL - CONTROL_UL), (compound, CONTROL_UL)]),
        ]
        test = Well(
            place,
            [
                (buffer, TEST_UL["buffer"]),
                (compound, TEST_UL["compound"]),
                (self.stock["pnpp"], TEST_UL["pnpp"]),
                (self.stock["enzyme"], TEST_UL["enzyme"]),
            ],
        )
        progress = super().run(
            [*wells, test], read_s=read_s, extra=[*extra, *added], preread=preread
        )
        read = np.asarray(progress.series[control], dtype=float)
        if np.isnan(read).all():  # over the reader's range throughout: coloured
            raise _Coloured
        excess = np.nanmean(read) - np.nanmean(progress.series[blank])
        if not (np.isfinite(excess) and excess < COLOURED_OD):
            raise _Coloured
        return progress


class CompoundScreen(Task):
    id = "compound_screen"
    title = "Does a test compound inhibit alkaline phosphatase, and how?"
    config = "labtools.simulators:compound_screen_lab.toml"
    lab_tools = LIQUID | ENDPOINT | KINETIC
    budget = Budget(calls=600, tips=120, reagent_ul=15_000, wells=96, hours=5)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate
    anchors = Anchors(naive=0.2686, expert=0.9845, seeds="1000-1049")
    rubric = COMPOUND_SCREEN
    limits = KineticsLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        world = lab.shared["world"]
        case = world.hidden(
            "compound_screen/case", lambda rng: {"inhibits": rng.random() < P_INHIBITOR}
        )
        world.kinetics.enzyme(ENZYME)
        world.kinetics.inhibition(INHIBITOR)
        if not case["inhibits"]:  # the same stock error as the inhibitor's, the decoy's species
            factor = world.peek(COMPOUND).concentration(INHIBITOR) / COMPOUND_MOLAR
            world.fill(COMPOUND, Mixture.solution(COMPOUND_UL, {DECOY: COMPOUND_MOLAR * factor}))

    def statement(self, lab: Lab) -> str:
        return (
            "Alkaline phosphatase hydrolyses p-nitrophenyl phosphate (pNPP) to p-nitrophenol, "
            "whose anion is yellow (read it at 405 nm; the pH 10 buffer ionises it fully). The "
            "reservoir holds water (A1), the carbonate buffer (A2), pNPP (A3), a p-nitrophenol "
            "standard (A4), the enzyme (A5) and a test compound (A6); their labels "
            "(lh_get_deck) give the concentrations. Plates plate_1 and plate_2 are free. "
            "Decide whether the compound inhibits the enzyme; if it does, whether it is "
            "competitive, noncompetitive (pure) or uncompetitive, and its Ki. Submit once with "
            "submit_compound_screen: P(inhibits), and (used only if it inhibits) Ki and a "
            "probability for each mechanism. Reward: V = 1 − (p − y)² with y = 1 if it "
            "inhibits, counted above the prior's V₀ = 1 − (π − y)² (π = "
            f"{P_INHIBITOR:g}: the share of such compounds that inhibit) only if one plate "
            "was read at one wavelength with a reaction holding the compound, the compound "
            "without enzyme at the same share of the well and a reaction without it; if it "
            "inhibits, that times exp(−ln²(K̂i/Ki)/2τ²) with τ = "
            f"{TAU} times 1 − B/2 (B: the mechanisms' Brier score)."
        )

    @tool(name="submit_compound_screen", destructive=True)
    async def submit(
        self,
        inhibits: Annotated[
            float, Arg("Probability that the compound inhibits the enzyme.", within="probability")
        ],
        ki: Annotated[
            Concentration, Arg("Inhibition constant if it inhibits, > 0.", within="constant")
        ],
        mechanism: Annotated[
            Mechanism,
            Arg("Probability of each mechanism, adding up to 1 (±0.01).", within="probability"),
        ],
    ) -> Submitted:
        """Submit the verdict, Ki and the mechanism's probabilities. Ends the episode."""
        self.submission = {
            "inhibits": float(inhibits),
            "ki_molar": positive_value(magnitude(ki, "molar"), "ki", "M"),
            "mechanism": mechanism_probabilities(mechanism),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        world = lab.shared["world"]
        if self.submission is None:
            return {"raw": 0.0}
        inhibits = world.hidden("compound_screen/case", lambda rng: {})["inhibits"]
        evidence = controlled(analyse(lab.journal.events(), resolve=lab.data))
        verdict = verdict_term(self.submission["inhibits"], inhibits, evidence)
        if not inhibits:
            return {"raw": verdict, "verdict_term": verdict}
        truth = world.kinetics.inhibition(INHIBITOR)
        ki = log_term(self.submission["ki_molar"], truth["ki_molar"])
        brier = sum(
            (p - (m == truth["mechanism"])) ** 2 for m, p in self.submission["mechanism"].items()
        )
        mechanism = 1.0 - brier / 2.0
        return {
            "raw": verdict * ki * mechanism,
            "verdict_term": verdict,
            "ki_term": ki,
            "mechanism_term": mechanism,
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """The inhibition expert (:func:`inhibition_expert`), its pilot read also reading a
        blank, a compound-only well and a reaction with the compound at the same share; a
        compound that absorbs at 405 nm is called a decoy there and then."""
        assay = _ScreenAssay(session)
        try:
            est, probabilities = inhibition_expert(assay)
        except _Coloured:
            self._submit(session, 1.0 - SURE, label_centre(assay, "inhibitor"), None)
            return
        self._submit(session, SURE, est.ki, probabilities)

    def naive(self, session: Session) -> None:
        """Raw OD slopes at 405 nm of two wells (25 mM pNPP, enzyme, with 250 µM compound or
        without), no compound-only control, no standard: inhibits if the slope falls below
        0.9 of the control's, Ki from the ratio as if noncompetitive, mechanisms even."""
        assay = Assay(session)
        compound = assay.dilute(assay.stock["inhibitor"], NAIVE_DILUTION, 40.0)
        stocks = assay.stock
        wells = [
            Well(place, [(stocks["buffer"], 40.0), (stocks["pnpp"], 100.0), (third, 20.0)])
            for place, third in zip(assay.wells(2), (stocks["water"], compound), strict=True)
        ]
        for w in wells:
            w.parts.append((stocks["enzyme"], 20.0))
        progress = assay.run(wells, read_s=600.0)
        slopes = [_raw_slope(progress.times, progress.series[w.well]) for w in wells]
        ratio = slopes[1] / slopes[0] if slopes[0] > 0.0 else 1.0
        level = assay.molar["inhibitor"] / NAIVE_DILUTION * 20.0 / WELL_UL
        ki = level * ratio / (1.0 - ratio) if 0.0 < ratio < 1.0 else level
        p = NAIVE_SURE if ratio < NAIVE_RATIO else 1.0 - NAIVE_SURE
        self._submit(session, p, ki, None)

    def prior(self, session: Session) -> None:
        """No measurement: even odds, Ki at the centre of the levels the label allows."""
        self._submit(session, 0.5, label_centre(Assay(session), "inhibitor"), None)

    def inversion(self, session: Session) -> None:
        """No measurement: the package's odds and the centre of ``kinetics.toml``'s Ki prior."""
        low, high = KineticsData.default().inhibitors[INHIBITOR].ki_mm
        self._submit(session, P_INHIBITOR, math.sqrt(low * high) * 1e-3, None)

    def _submit(
        self, session: Session, p: float, ki: float, mechanism: dict[str, float] | None
    ) -> None:
        given = mechanism or {m: 1.0 / len(MECHANISMS) for m in MECHANISMS}
        session.call_tool(
            f"submit_{self.id}",
            {
                "inhibits": p,
                "ki": molar_qty(ki),
                "mechanism": {m: round(given[m], 6) for m in MECHANISMS},
            },
        ).unwrap()


def _raw_slope(times: np.ndarray, od: np.ndarray) -> float:
    """OD/s of a straight line through a well's finite readings (raw: no blank, no standard)."""
    finite = np.isfinite(od)
    if finite.sum() < 2:
        return 0.0
    return float(np.polyfit(times[finite], od[finite], 1)[0])
