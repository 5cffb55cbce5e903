"""T3 — serial dilution, standard curve, and an unknown's concentration with its uncertainty.

Hidden truth per seed: the tartrazine concentration of the unknown sample (log-uniform,
20–400 µM, as ``virtual_lab.toml`` draws it), the standard's real concentration (its label
±2 %, 1 sd) and the tartrazine batch's ε and band positions (a few per cent and ~1 nm from the
library's, ``species.toml``; the standard and the unknown share the batch). A labelled
tartrazine standard, water and a waste trough are on the deck. The agent submits a
concentration ĉ and a one-sd uncertainty σ̂. Without a reading nothing narrows the prior's
twenty-fold range (:meth:`StandardCurve.prior`, :meth:`StandardCurve.inversion` score near 0),
and the literature ε converts a reading only to within the batch's few per cent.

Reward: raw = exp(−CRPS(N(ĉ, σ̂²), c) / s) with s = 5 % of the true c. CRPS is a strictly
proper scoring rule (Gneiting & Raftery 2007): its expectation is lowest for the honest
forecast, so an error and a mis-stated uncertainty, too small or too large, both cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.demo.protocol import TARTRAZINE_EPSILON, DyeQuantification
from labtools.lab import VIRTUAL_LAB, Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.tasks.scripting import batch, caller, nm, no_controls_um
from labtools.simulators.world import Mixture
from labtools.tool import Arg, tool
from labtools.units import Concentration, Range, magnitude, qty

__all__ = ["StandardCurve", "crps_normal"]

SAMPLE = "reservoir:A10"
SAMPLE_UL = 15_000.0
RANGE_UM = (20.0, 400.0)  # the unknown's prior (log-uniform), as in virtual_lab.toml
#: the score's scale as a fraction of the true concentration: a CRPS of 5 % of c costs a
#: factor e^−1. 5 % is a usual acceptance limit for a photometric assay's accuracy and three to
#: five times the expert protocol's stated standard uncertainty (1–2 %): an honest expert keeps
#: ~0.85–0.9, a point guess 5 % off keeps e^−1, one 20 % off keeps 2 %
SCALE = 0.05


@dataclass(frozen=True)
class CurveLimits:
    """Sane bounds of a submission: tartrazine dissolves to well under 10 M."""

    concentration: Range = Range(0.0, 10.0, "molar")


class StandardCurve(Task):
    id = "standard_curve"
    config = VIRTUAL_LAB
    lab_tools = LIQUID | ABSORBANCE
    title = "Quantify an unknown with a standard curve, with its uncertainty"
    budget = Budget(calls=250, tips=80, reagent_ul=6000, wells=60, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0005, expert=0.8075, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["standard_curve"]
    limits = CurveLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        world = lab.shared["world"]
        truth_um = world.hidden("task/standard_curve", _draw_concentration)
        world.fill(SAMPLE, Mixture.solution(SAMPLE_UL, {"tartrazine": truth_um * 1e-6}))

    def statement(self, lab: Lab) -> str:
        return (
            f"The container {SAMPLE} ('unknown sample') holds tartrazine in water at an unknown "
            "concentration. A labelled tartrazine standard (reservoir:A2), water (reservoir:A1) "
            "and a waste trough (reservoir:A11) are on the deck (see lh_get_deck), with two "
            "96-well plates, a plate reader and a spectrometer. Determine the unknown's "
            "concentration with a standard curve made by dilution of the standard, and its "
            "standard uncertainty (one standard deviation, everything included). Submit once "
            "with submit_standard_curve. Reward: the continuous ranked probability score of a "
            "normal distribution with your concentration and uncertainty against the true "
            "concentration, on a scale of 5 % of it: a wrong value costs, and so does an "
            "uncertainty that is too small or too large."
        )

    @tool(name="submit_standard_curve", destructive=True)
    async def submit(
        self,
        concentration: Annotated[
            Concentration, Arg("The unknown sample's concentration.", within="concentration")
        ],
        uncertainty: Annotated[
            Concentration,
            Arg("Its standard uncertainty: one standard deviation, ≥ 0.", within="concentration"),
        ],
    ) -> Submitted:
        """Submit the unknown's tartrazine concentration and its uncertainty. Ends the episode."""
        # both already checked: finite, 0–10 M (labtools.spec)
        self.submission = {
            "concentration_um": magnitude(concentration, "micromolar"),
            "uncertainty_um": magnitude(uncertainty, "micromolar"),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        truth_um = lab.shared["world"].hidden("task/standard_curve", _draw_concentration)
        if self.submission is None:
            return {"raw": 0.0}
        guess, sd = self.submission["concentration_um"], self.submission["uncertainty_um"]
        crps = crps_normal(guess, sd, truth_um)
        return {
            "raw": math.exp(-crps / (SCALE * truth_um)),
            "relative_error": (guess - truth_um) / truth_um,
            "relative_crps": crps / truth_um,
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """The demo's protocol in batched transfers: a serial dilution of the standard in
        triplicate, the unknown neat beside it on the same channels, λmax from a spectrum, a
        plate read, the unknown again at a better volume if it reads outside the curve's top
        half, fit, GUM-style uncertainty budget."""
        outcome = DyeQuantification(call=caller(session)).run()
        session.call_tool(
            "submit_standard_curve",
            {
                "concentration": qty(outcome.estimate_um, "micromolar"),
                "uncertainty": qty(outcome.sd_um, "micromolar"),
            },
        ).unwrap()

    def naive(self, session: Session) -> None:
        """One reading of the neat unknown, unblanked, converted with the literature ε and an
        assumed 1 cm path; a made-up 10 % uncertainty."""
        call = caller(session)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", 200)], channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        od = call("reader_read_absorbance", plate="plate_1", wavelength=nm(426), wells=["A1"])[
            "values"
        ].get("A1", 4.0)  # over-range: the top of the reader's range
        guess = max(float(od), 0.0) / TARTRAZINE_EPSILON * 1e6
        call(
            "submit_standard_curve",
            concentration=qty(guess, "micromolar"),
            uncertainty=qty(0.1 * guess, "micromolar"),
        )

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; from the labels alone, the unknown somewhere below its
        standard: half the standard's labelled concentration, ± a uniform prior's sd."""
        label = caller(session)("lh_get_deck")["labels"]["reservoir:A2"]
        top = label_micromolar(label)
        self._submit(session, top / 2.0, top / math.sqrt(12.0))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the mean and sd of the task's own prior (:data:`RANGE_UM`,
        log-uniform). No package data tells the unknown."""
        self._submit(session, *_log_uniform_moments(*RANGE_UM))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the unknown diluted 1 in 10 and read once at 426 nm, the nominal plate's OD
        taken off, converted with the library's ε over the nominal path; no standard, blank or
        replicate; the library batch spread (3 %) as its uncertainty."""
        guess = no_controls_um(session, SAMPLE, "tartrazine", 426.0, dilution=10.0)
        self._submit(session, guess, 0.03 * guess)

    @staticmethod
    def _submit(session: Session, concentration_um: float, sd_um: float) -> None:
        caller(session)(
            "submit_standard_curve",
            concentration=qty(concentration_um, "micromolar"),
            uncertainty=qty(sd_um, "micromolar"),
        )


def _log_uniform_moments(low: float, high: float) -> tuple[float, float]:
    """Mean and standard deviation of a log-uniform distribution on [low, high]."""
    span = math.log(high / low)
    mean = (high - low) / span
    second = (high**2 - low**2) / (2.0 * span)
    return mean, math.sqrt(second - mean**2)


def crps_normal(mean: float, sd: float, observed: float) -> float:
    """CRPS of the normal forecast N(mean, sd²) for ``observed`` (same unit as the inputs):
    σ·[z(2Φ(z) − 1) + 2φ(z) − 1/√π] with z = (observed − mean)/σ (Gneiting et al. 2005);
    the absolute error for σ = 0."""
    z = (observed - mean) / sd if sd > 0 else math.inf
    if not math.isfinite(z):  # σ = 0, or so small against the error that z overflows
        return abs(observed - mean)
    cdf = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    pdf = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return sd * (z * (2.0 * cdf - 1.0) + 2.0 * pdf - 1.0 / math.sqrt(math.pi))


def _draw_concentration(rng: np.random.Generator) -> float:
    """The unknown's concentration (µM), log-uniform over :data:`RANGE_UM`."""
    low, high = RANGE_UM
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))
