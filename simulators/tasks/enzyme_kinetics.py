"""T4 — enzyme kinetics: Km and kcat of alkaline phosphatase with pNPP; the inhibition variant.

Hidden truth per seed (the world's kinetics engine, ``simulators/data/kinetics.toml``): Km
(log-uniform 0.05–5 mM), kcat (log-uniform 10–1000 s⁻¹ per active site) and a slow loss of
activity (half-life 20–200 h); for ``enzyme_inhibition`` also the inhibitor's mechanism
(competitive, noncompetitive or uncompetitive, uniform) and Ki (log-uniform 0.05–2 mM). Those
are the reference constants scored against; the wells run on them times the enzyme lot's
activity (kcat, 10 %, 1 sd) and the day's factors (Km 8 %, kcat 6 %, Ki 6 %), which no
measurement in one episode separates from them. The stocks' real concentrations differ from
their labels by a hidden 1 % (1 sd). A sound protocol thus lands within ~8 % of Km and Ki and
~13 % of kcat (rms), as real determinations do (inter-assay CV 10–20 %), not the 2 % the
simulator's noise alone would allow.

Reward: raw = exp(−ln²(K̂m/Km)/2τ²) · exp(−ln²(k̂cat/kcat)/2τ²) with τ = 0.3: an estimate off
by 10 % keeps 0.95 of its term, one off by 20 % 0.82, one off by a factor e^0.3 (≈ 35 %)
e^−½ ≈ 0.61. τ is about twice the upper end of the inter-assay spread real labs report
(10–20 %, see ``kinetics.toml``), so that a determination as good as the bench allows keeps
most of the reward and a pass (pass^k) does not hang on the day's draw, while a guess within
the 100-fold prior (the prior and inversion shortcuts) keeps a few per cent. The variant
multiplies a Ki term of the same form and the mechanism's Brier term 1 − BS/2, with
BS = Σ (p_m − 1[m is true])² ∈ [0, 2]: a strictly proper score, 1 for certainty on the truth,
2/3 for a uniform answer, 0 for certainty on a wrong mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from typing_extensions import TypedDict

from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.simulators.tasks.kinetics_expert import inhibition_expert, kinetics_expert
from labtools.simulators.tasks.kinetics_protocol import PNP_EPSILON_405, Assay, Well
from labtools.simulators.tasks.offers import ENDPOINT, KINETIC, LIQUID
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.world.kinetics import MECHANISMS, KineticsData
from labtools.tool import Arg, tool
from labtools.units import Concentration, QuantityJSON, Range, RateConstant, magnitude, qty

__all__ = ["TAU", "EnzymeInhibition", "EnzymeKinetics", "inhibition_score", "log_term"]

ENZYME = "alkaline_phosphatase"
INHIBITOR = "inhibitor_x"
#: the score's tolerance in ln units (see the module docstring)
TAU = 0.3
#: the probabilities of a submitted mechanism must add up to 1 within this
PROBABILITY_SLACK = 0.01
#: Km a chemist looks up for the naive protocol: mammalian ALP with pNPP at pH 10 [L]
LITERATURE_KM_M = 0.5e-3
#: kcat of the median enzyme, the prior shortcut's guess: of order 10 s⁻¹ [L: Bar-Even et al.
#: 2011, "The moderately efficient enzyme", Biochemistry 50:4402]
MEDIAN_KCAT_PER_S = 10.0
#: the span of a stock's concentrations a 200 µL well can hold, as fractions of the stock: half
#: (100 µL of it) down to a thousandth; the prior shortcut takes Km and Ki at its geometric centre
WELL_SPAN = (1e-3, 0.5)


@dataclass(frozen=True)
class KineticsLimits:
    """Sane bounds of a submission, far outside any enzyme's: Km and Ki up to 1000 M (water
    itself is 55 M; the naive Ki from two endpoints grows without bound as their ratio nears
    1), kcat up to 10⁹ s⁻¹ (a hundred times the diffusion limit); probabilities 0–1."""

    constant: Range = Range(0.0, 1000.0, "molar")
    turnover: Range = Range(0.0, 1e9, "1 / second")
    probability: Range = Range(0.0, 1.0)


class Mechanism(TypedDict):
    competitive: float
    noncompetitive: float
    uncompetitive: float


def log_term(estimate: float, truth: float, tau: float = TAU) -> float:
    """exp(−ln²(estimate/truth) / 2τ²); 0 for an estimate that is not positive and finite.

    ln(estimate) − ln(truth), not ln(estimate/truth): the ratio of a 5e-324 estimate to a
    truth above 1 underflows to 0 before the log.
    """
    error = _log_ratio(estimate, truth)
    return math.exp(-(error**2) / (2.0 * tau * tau)) if math.isfinite(error) else 0.0


def _log_ratio(estimate: float, truth: float) -> float:
    """ln(estimate/truth) without forming the ratio (finite for any positive finite pair);
    −inf for an estimate that is not positive, +inf for one that is not finite."""
    if not estimate > 0.0:
        return -math.inf
    if not math.isfinite(estimate):
        return math.inf
    return math.log(estimate) - math.log(truth)


def positive_value(value: float, name: str, unit: str) -> float:
    if not (math.isfinite(value) and value > 0.0):
        raise OutOfRange(
            f"the {name} must be a finite number > 0, not {value:g} {unit}",
            field=f"/{name}",
            hint=f"give a positive {name}",
        )
    return value


#: what both enzyme tasks tell the agent about the assay (their own goal and submission follow)
ASSAY = (
    "Alkaline phosphatase hydrolyses p-nitrophenyl phosphate (pNPP) to p-nitrophenol, whose "
    "anion is yellow (read it at 405 nm; at pH 10 it is fully ionised). Measure the enzyme's "
    "Michaelis constant Km for pNPP and its turnover number kcat (per active site) in the pH 10 "
    "carbonate buffer. The reservoir holds water (A1), the buffer (A2), pNPP (A3), a "
    "p-nitrophenol standard (A4) and the enzyme (A5); their labels (lh_get_deck) give the "
    "concentrations, the enzyme's as active sites. Plates plate_1 and plate_2 (Corning 96 flat) "
    "are free. Reactions run while time passes: reader_read_absorbance_kinetic reads wells "
    "repeatedly."
)


class EnzymeKinetics(Task):
    id = "enzyme_kinetics"
    title = "Measure Km and kcat of alkaline phosphatase with pNPP"
    config = "labtools.simulators:enzyme_lab.toml"
    lab_tools = LIQUID | ENDPOINT | KINETIC
    budget = Budget(calls=400, tips=80, reagent_ul=12_000, wells=96, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0296, expert=0.8568, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["enzyme_kinetics"]
    limits = KineticsLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        lab.shared["world"].kinetics.enzyme(ENZYME)  # draw this seed's truth

    def statement(self, lab: Lab) -> str:
        return (
            f"{ASSAY} Submit once with submit_{self.id}. Reward: "
            f"exp(−ln²(K̂m/Km)/2τ²)·exp(−ln²(k̂cat/kcat)/2τ²) with τ = {TAU}."
        )

    @tool(name="submit_enzyme_kinetics", destructive=True)
    async def submit(
        self,
        km: Annotated[Concentration, Arg("Michaelis constant for pNPP, > 0.", within="constant")],
        kcat: Annotated[
            RateConstant, Arg("Turnover number per active site, > 0.", within="turnover")
        ],
    ) -> Submitted:
        """Submit Km and kcat. Ends the episode."""
        self.submission = _constants(km, kcat)
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        truth = lab.shared["world"].kinetics.enzyme(ENZYME)
        if self.submission is None:
            return {"raw": 0.0}
        km = log_term(self.submission["km_molar"], truth["km_molar"])
        kcat = log_term(self.submission["kcat_per_s"], truth["kcat_per_s"])
        return {
            "raw": km * kcat,
            "km_term": km,
            "kcat_term": kcat,
            "km_ratio": self.submission["km_molar"] / truth["km_molar"],
            "kcat_ratio": self.submission["kcat_per_s"] / truth["kcat_per_s"],
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """Pilot scan, refined design around it (serial dilutions), standards, pre-read, one
        kinetic read of all wells, weighted Michaelis–Menten fit, pipetted in batches over
        all channels (:mod:`labtools.simulators.tasks.kinetics_expert`)."""
        assay = Assay(session)
        est = kinetics_expert(assay)
        assay.call(f"submit_{self.id}", km=molar_qty(est.km), kcat=_per_s(est.kcat))

    def naive(self, session: Session) -> None:
        """One well at 25 mM pNPP with the enzyme stock, an endpoint after 10 min converted
        with ε and an assumed 1 cm path, the enzyme taken as saturated; Km from the
        literature."""
        kcat = _naive_kcat(Assay(session), inhibitor=False)
        session.call_tool(
            f"submit_{self.id}", {"km": molar_qty(LITERATURE_KM_M), "kcat": _per_s(kcat)}
        ).unwrap()

    def prior(self, session: Session) -> None:
        """No measurement: Km at the centre of the substrate levels the pNPP label allows in
        a well, kcat the median enzyme's."""
        km = label_centre(Assay(session), "pnpp")
        session.call_tool(
            f"submit_{self.id}", {"km": molar_qty(km), "kcat": _per_s(MEDIAN_KCAT_PER_S)}
        ).unwrap()

    def inversion(self, session: Session) -> None:
        """No measurement: the package's values (the centres of ``kinetics.toml``'s priors,
        the literature Km)."""
        km, kcat, _ = _package_constants()
        session.call_tool(f"submit_{self.id}", {"km": molar_qty(km), "kcat": _per_s(kcat)}).unwrap()


class EnzymeInhibition(Task):
    id = "enzyme_inhibition"
    title = "Find an inhibitor's mechanism and Ki, with the enzyme's Km and kcat"
    config = "labtools.simulators:enzyme_inhibition_lab.toml"
    lab_tools = LIQUID | ENDPOINT | KINETIC
    budget = Budget(calls=600, tips=120, reagent_ul=15_000, wells=96, hours=5)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0078, expert=0.8227, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["enzyme_inhibition"]
    limits = KineticsLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        kinetics = lab.shared["world"].kinetics
        kinetics.enzyme(ENZYME)
        kinetics.inhibition(INHIBITOR)

    def statement(self, lab: Lab) -> str:
        return (
            f"{ASSAY} The reservoir also holds inhibitor X (A6), a reversible inhibitor of the "
            "enzyme: find whether it is competitive, noncompetitive (pure: one Ki for free "
            "enzyme and enzyme–substrate complex alike) or uncompetitive, and its inhibition "
            "constant Ki. Submit once with submit_enzyme_inhibition: Km, kcat, Ki and a "
            "probability for each mechanism (adding up to 1). Reward: the product of "
            f"exp(−ln²(estimate/truth)/2τ²) with τ = {TAU} for Km, kcat and Ki, and 1 − B/2 "
            "with B the Brier score of the probabilities (Σ (p − 1[true])²)."
        )

    @tool(name="submit_enzyme_inhibition", destructive=True)
    async def submit(
        self,
        km: Annotated[Concentration, Arg("Michaelis constant for pNPP, > 0.", within="constant")],
        kcat: Annotated[
            RateConstant, Arg("Turnover number per active site, > 0.", within="turnover")
        ],
        ki: Annotated[
            Concentration, Arg("The inhibitor's inhibition constant, > 0.", within="constant")
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
        constants = _constants(km, kcat)
        constants["ki_molar"] = positive_value(magnitude(ki, "molar"), "ki", "M")
        constants["mechanism"] = mechanism_probabilities(mechanism)
        self.submission = constants
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        kinetics = lab.shared["world"].kinetics
        truth, inhibition = kinetics.enzyme(ENZYME), kinetics.inhibition(INHIBITOR)
        if self.submission is None:
            return {"raw": 0.0}
        return inhibition_score(
            self.submission,
            truth["km_molar"],
            truth["kcat_per_s"],
            inhibition["ki_molar"],
            inhibition["mechanism"],
        )

    def expert(self, session: Session) -> None:
        """As the kinetics expert, with an IC50 scan and the substrate series at three
        inhibitor levels, fit by each mechanism's rate law; probabilities from the fits."""
        assay = Assay(session)
        est, probabilities = inhibition_expert(assay)
        assay.call(
            f"submit_{self.id}",
            km=molar_qty(est.km),
            kcat=_per_s(est.kcat),
            ki=molar_qty(est.ki),
            mechanism={m: round(probabilities[m], 6) for m in MECHANISMS},
        )

    def naive(self, session: Session) -> None:
        """The kinetics naive protocol with one more well holding the inhibitor at 5 mM: Ki
        as if noncompetitive from the two endpoints, the mechanisms equally likely."""
        assay = Assay(session)
        kcat, ratio = _naive_kcat(assay, inhibitor=True)
        inhibitor = 5e-3
        ki = inhibitor * ratio / (1.0 - ratio) if 0.0 < ratio < 1.0 else inhibitor
        session.call_tool(
            f"submit_{self.id}",
            {
                "km": molar_qty(LITERATURE_KM_M),
                "kcat": _per_s(kcat),
                "ki": molar_qty(ki),
                "mechanism": {m: 1.0 / 3.0 for m in MECHANISMS},
            },
        ).unwrap()

    def prior(self, session: Session) -> None:
        """No measurement: Km and Ki at the centres of the levels the pNPP and inhibitor
        labels allow in a well, kcat the median enzyme's, the mechanisms equally likely."""
        assay = Assay(session)
        self._submit_unmeasured(
            session,
            label_centre(assay, "pnpp"),
            MEDIAN_KCAT_PER_S,
            label_centre(assay, "inhibitor"),
        )

    def inversion(self, session: Session) -> None:
        """No measurement: the package's values (the centres of ``kinetics.toml``'s priors,
        the literature Km), the mechanisms as likely as the package draws them."""
        self._submit_unmeasured(session, *_package_constants())

    def _submit_unmeasured(self, session: Session, km: float, kcat: float, ki: float) -> None:
        session.call_tool(
            f"submit_{self.id}",
            {
                "km": molar_qty(km),
                "kcat": _per_s(kcat),
                "ki": molar_qty(ki),
                "mechanism": {m: 1.0 / 3.0 for m in MECHANISMS},
            },
        ).unwrap()


# -- helpers -----------------------------------------------------------------------------------
def inhibition_score(
    submission: Mapping[str, Any], km: float, kcat: float, ki: float, mechanism: str
) -> dict[str, float]:
    """The inhibition reward of ``submission`` (``km_molar``, ``kcat_per_s``, ``ki_molar`` and
    ``mechanism``'s probabilities) against the truth: the product of :func:`log_term` for Km,
    kcat and Ki and 1 − B/2, B the Brier score of the probabilities; with each term and B."""
    terms = {
        "km_term": log_term(submission["km_molar"], km),
        "kcat_term": log_term(submission["kcat_per_s"], kcat),
        "ki_term": log_term(submission["ki_molar"], ki),
    }
    brier = sum((p - (m == mechanism)) ** 2 for m, p in submission["mechanism"].items())
    terms["mechanism_term"] = 1.0 - brier / 2.0
    return {"raw": math.prod(terms.values()), **terms, "brier": brier}


def _constants(km: Any, kcat: Any) -> dict[str, Any]:
    return {
        "km_molar": positive_value(magnitude(km, "molar"), "km", "M"),
        "kcat_per_s": positive_value(magnitude(kcat, "1 / second"), "kcat", "1/s"),
    }


def mechanism_probabilities(given: Mechanism) -> dict[str, float]:
    values = {m: float(given[m]) for m in MECHANISMS}  # type: ignore[literal-required]
    for m, p in values.items():
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise OutOfRange(
                f"the probability of {m} must be within 0–1, not {p:g}",
                field=f"/mechanism/{m}",
                hint="give each mechanism a probability from 0 to 1",
            )
    total = sum(values.values())
    if abs(total - 1.0) > PROBABILITY_SLACK:
        raise OutOfRange(
            f"the mechanism probabilities add up to {total:g}, not 1",
            field="/mechanism",
            hint="give probabilities that add up to 1",
        )
    return {m: p / total for m, p in values.items()}


def _six_digits(value: float) -> float:
    return float(f"{value:.6g}")


def molar_qty(value: float) -> QuantityJSON:
    """A concentration given in M, as the protocols submit it: mM, six significant digits."""
    return qty(_six_digits(value * 1e3), "millimolar")


def _per_s(value: float) -> QuantityJSON:
    """A rate constant in s⁻¹, six significant digits."""
    return qty(_six_digits(value), "1 / second")


def label_centre(assay: Assay, key: str) -> float:
    """The geometric centre (M) of the levels of stock ``key`` a well can hold
    (:data:`WELL_SPAN`), from its label alone."""
    low, high = WELL_SPAN
    return assay.molar[key] * math.sqrt(low * high)


def _package_constants() -> tuple[float, float, float]:
    """Km (M), kcat (s⁻¹) and Ki (M) from the package's data alone: the literature Km, the
    geometric centres of ``kinetics.toml``'s kcat and Ki priors."""
    data = KineticsData.default()
    kcat_low, kcat_high = data.enzymes[ENZYME].kcat_per_s
    ki_low, ki_high = data.inhibitors[INHIBITOR].ki_mm
    return LITERATURE_KM_M, math.sqrt(kcat_low * kcat_high), math.sqrt(ki_low * ki_high) * 1e-3


def _naive_kcat(assay: Assay, *, inhibitor: bool) -> Any:
    """The naive endpoint: 25 mM pNPP, enzyme stock at 1:10, 10 min, OD/(ε · 1 cm); with
    ``inhibitor``, a second well with 5 mM inhibitor and the ratio of the two endpoints."""
    e_well = assay.molar["enzyme"] * 20.0 / 200.0
    parts = [("buffer", 40.0), ("pnpp", 100.0), ("water", 40.0), ("enzyme", 20.0)]
    wells = [Well("plate_1:A1", [(assay.stock[k], v) for k, v in parts])]
    if inhibitor:
        parts = [("buffer", 40.0), ("pnpp", 100.0), ("inhibitor", 20.0), ("enzyme", 20.0)]
        wells.append(Well("plate_1:A2", [(assay.stock[k], v) for k, v in parts]))
    series = assay.run(wells, read_s=600.0).series
    ends = [float(series[w.well][-1]) for w in wells]
    ends = [e if math.isfinite(e) else 4.0 for e in ends]  # a saturated well reads "high"
    kcat = max(ends[0], 1e-3) / PNP_EPSILON_405 / 600.0 / e_well  # path taken as 1 cm
    if not inhibitor:
        return kcat
    return kcat, ends[1] / max(ends[0], 1e-3)
