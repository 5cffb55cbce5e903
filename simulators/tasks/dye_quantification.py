"""T2 — identify and quantify the food dyes in an unknown sample.

Hidden truth per seed: which one to three of four dyes the sample holds, and at what
concentrations (log-uniform), and what the labels do not say: each standard's real concentration
(its label ±2 %, 1 sd) and each dye batch's ε and band positions (``species.toml``: a few per
cent and ~1 nm from the library's), the same batch in the standards and the sample. Only the
sample's spectrum tells its dyes: a submission without a reading (:meth:`DyeQuantification.prior`,
:meth:`DyeQuantification.inversion`) can only guess from the prior, and scores near 0.
Reward: F1 of the identities × the mean over the present dyes of exp(−|ln(ĉ/c)| / τ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, cast

import numpy as np
import pint
from typing_extensions import TypedDict

from labtools.demo.labels import label_micromolar
from labtools.demo.protocol import batch
from labtools.lab import VIRTUAL_LAB, Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.tasks.scripting import (
    caller,
    nm,
    nominal_path_cm,
    one_reading,
)
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Concentration, Range, magnitude, qty

DYES = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
#: µM ranges of the hidden concentrations, chosen so the sample reads 0.05–1.5 OD neat in a
#: 200 µL well: brilliant blue absorbs ~5× more per µM [physics reference §8]
RANGES_UM = {
    "tartrazine": (5, 60),
    "sunset_yellow": (5, 60),
    "allura_red": (5, 60),
    "brilliant_blue": (1, 12),
}
SAMPLE = "reservoir:A10"
STANDARDS = {
    "tartrazine": "reservoir:A2",
    "sunset_yellow": "reservoir:A3",
    "allura_red": "reservoir:A4",
    "brilliant_blue": "reservoir:A5",
}
WATER = "reservoir:A1"
TAU = 0.1  # concentration tolerance: a 10 % error costs a factor e^-1
PRESENT_UM = 0.25  # a reported concentration above this counts as "present"


@dataclass(frozen=True)
class DyeLimits:
    """Sane bounds of a submission: no food dye dissolves anywhere near 10 M."""

    concentration: Range = Range(0.0, 10.0, "molar")
    probability: Range = Range(0.0, 1.0)  # dye_stability's P(degraded)


class DyeAmounts(TypedDict):
    tartrazine: Concentration
    sunset_yellow: Concentration
    allura_red: Concentration
    brilliant_blue: Concentration


class DyeQuantification(Task):
    id = "dye_quantification"
    config = VIRTUAL_LAB
    lab_tools = LIQUID | ABSORBANCE
    title = "Identify and quantify the dyes in an unknown sample"
    budget = Budget(calls=120, tips=40, reagent_ul=3000, wells=48, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0065, expert=0.8532, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["dye_quantification"]
    limits = DyeLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        world = lab.shared["world"]
        truth = world.hidden("task/dye_quantification", _draw_sample)
        world.fill(SAMPLE, Mixture.solution(15_000, {k: v * 1e-6 for k, v in truth.items()}))

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        stocks = "; ".join(f"{well}: {labels[well]}" for well in (WATER, *STANDARDS.values()))
        return (
            f"The container {SAMPLE} holds an unknown aqueous sample with one to three of these "
            "food dyes: tartrazine, sunset yellow FCF, allura red AC, brilliant blue FCF. "
            f"Labelled standards and water are in the reservoir ({stocks}); lh_get_deck shows "
            "the whole deck. Find which dyes the sample contains and the concentration of each "
            "in the sample. Submit once with submit_dye_quantification, giving every dye's "
            "concentration (0 for a dye that is absent). Reward: correct identities times "
            "concentration accuracy."
        )

    @tool(name="submit_dye_quantification", destructive=True)
    async def submit(
        self,
        concentrations: Annotated[
            DyeAmounts,
            Arg(
                "Each dye's concentration in the sample; 0 for an absent dye.",
                within="concentration",
            ),
        ],
    ) -> Submitted:
        """Submit your answer: the concentration of each dye in the sample. Ends the episode."""
        # quantities already checked: finite, 0–10 M (labtools.spec)
        given = cast("dict[str, pint.Quantity]", concentrations)  # the TypedDict, by dye name
        self.submission = {dye: magnitude(given[dye], "micromolar") for dye in DYES}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        truth = lab.shared["world"].hidden("task/dye_quantification", _draw_sample)
        if self.submission is None:
            return {"raw": 0.0, "f1": 0.0, "accuracy": 0.0}
        claimed = {d for d, c in self.submission.items() if c > PRESENT_UM}
        present = set(truth)
        hits = len(claimed & present)
        f1 = 2 * hits / (len(claimed) + len(present)) if claimed or present else 1.0
        terms = []
        for dye, true_um in truth.items():
            guess = self.submission.get(dye, 0.0)
            # ln ĉ − ln c, not ln(ĉ/c): the ratio of a tiny ĉ underflows to 0 before the log
            error = abs(math.log(guess) - math.log(true_um)) if guess > 0 else math.inf
            terms.append(math.exp(-error / TAU))
        accuracy = sum(terms) / len(terms)
        return {"raw": f1 * accuracy, "f1": f1, "accuracy": accuracy}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """Standards and sample side by side in one plate; unmix the sample's spectrum.

        Two batched transfers: water into the four standards' wells and the blank (one tip),
        then each standard's stock and the sample, neat and in duplicate, each with a new tip
        on its own channel (0–5), all six at once.
        """
        call = caller(session)
        volume = 200.0
        stock_ul = 40.0
        wells = {dye: f"plate_1:A{i + 1}" for i, dye in enumerate(DYES)}
        samples, blank_well = ["plate_1:A5", "plate_1:A7"], "plate_1:A6"
        water = [(WATER, well, volume - stock_ul) for well in wells.values()]
        call("lh_transfer", **batch([*water, (WATER, blank_well, volume)], "reuse", channels=[0]))
        dyes = [(STANDARDS[dye], well, stock_ul) for dye, well in wells.items()]
        dyes += [(SAMPLE, well, volume) for well in samples]
        call("lh_transfer", **batch(dyes, channels=range(len(dyes))))
        call("lh_move_plate", plate="plate_1", destination="reader")
        spectra = call(
            "reader_read_absorbance_spectrum",
            plate="plate_1",
            wells=["A1", "A2", "A3", "A4", "A5", "A6", "A7"],
            start=nm(360),
            stop=nm(720),
            step=nm(5),  # 73 points × 7 wells: inline (at most 600 values)
        )
        statement = session.observation()["task"]
        stock_um = {d: label_micromolar(statement.split(f"{STANDARDS[d]}: ", 1)[1]) for d in DYES}

        def spectrum(well: str) -> np.ndarray:
            return np.array(spectra["values"][well.split(":")[1]], dtype=float)

        blank = spectrum(blank_well)
        basis = np.column_stack(
            [(spectrum(w) - blank) / (stock_um[d] * stock_ul / volume) for d, w in wells.items()]
        )
        sample = np.mean([spectrum(w) for w in samples], axis=0) - blank
        amounts = _unmix(basis, sample)
        report = {d: float(a) for d, a in zip(DYES, amounts, strict=True)}
        call(
            "submit_dye_quantification",
            concentrations={d: qty(c, "micromolar", decimals=4) for d, c in report.items()},
        )

    def naive(self, session: Session) -> None:
        """Read the sample at tartrazine's peak and call it all tartrazine, with a 1 cm path."""
        call = caller(session)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", 200)], channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        od = call("reader_read_absorbance", plate="plate_1", wavelength=nm(426), wells=["A1"])[
            "values"
        ]["A1"]
        guess = {d: 0.0 for d in DYES}
        guess["tartrazine"] = max(od, 0.0) / 28_300 * 1e6
        call(
            "submit_dye_quantification",
            concentrations={d: qty(c, "micromolar") for d, c in guess.items()},
        )

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; every dye present (each is, half the time) at a twentieth of
        its standard's labelled concentration, a guess from the labels alone."""
        labels = caller(session)("lh_get_deck")["labels"]
        _submit_all(session, {d: label_micromolar(labels[STANDARDS[d]]) / 20.0 for d in DYES})

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; every dye at the mean of the task's own prior
        (:data:`RANGES_UM`, log-uniform: (high − low) / ln(high / low)). No package data
        tells the sample."""
        means = {d: (hi - lo) / math.log(hi / lo) for d, (lo, hi) in RANGES_UM.items()}
        _submit_all(session, means)

    def no_controls(self, session: Session) -> None:
        """Shortcut: the sample's spectrum read once, neat (200 µL), the nominal plate's OD taken
        off, unmixed with the library's spectra over the nominal path; no standard, blank or
        replicate."""
        wavelengths = np.arange(360.0, 721.0, 4.0)
        sample = one_reading(caller(session), [(SAMPLE, "plate_1:A1", 200.0)], wavelengths)
        library = SpeciesLibrary.default()
        path = nominal_path_cm(200.0)
        basis = np.column_stack([library[d].absorptivity(wavelengths) * path * 1e-6 for d in DYES])
        _submit_all(session, dict(zip(DYES, map(float, _unmix(basis, sample)), strict=True)))


def _submit_all(session: Session, concentrations_um: dict[str, float]) -> None:
    """Submit ``concentrations_um`` (µM of each dye)."""
    caller(session)(
        "submit_dye_quantification",
        concentrations={d: qty(c, "micromolar", decimals=4) for d, c in concentrations_um.items()},
    )


def _draw_sample(rng: np.random.Generator) -> dict[str, float]:
    """The hidden sample: one to three dyes, each at a log-uniform concentration (µM)."""
    count = int(rng.integers(1, 4))
    chosen = sorted(rng.choice(len(DYES), size=count, replace=False))
    out = {}
    for index in chosen:
        dye = DYES[index]
        low, high = RANGES_UM[dye]
        out[dye] = float(np.exp(rng.uniform(np.log(low), np.log(high))))
    return out


def _unmix(basis: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative amounts of each basis spectrum in ``target``, choosing which components are
    present by the Bayesian information criterion: every subset of the (four) components is fit
    by least squares, with a constant baseline; among fits with no negative amount, the lowest
    n·ln(RSS/n) + k·ln(n) wins, so a component must explain more than noise to be reported."""
    points, columns = basis.shape
    baseline = np.ones((points, 1))  # each well's own small OD offset, of either sign
    best, best_bic = np.zeros(columns), math.inf
    for mask in range(1, 2**columns):
        active = [i for i in range(columns) if mask >> i & 1]
        design = np.hstack([basis[:, active], baseline])
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        if (coef[:-1] < 0).any():
            continue
        residual = target - design @ coef
        rss = max(float(residual @ residual), 1e-300)
        bic = points * math.log(rss / points) + (len(active) + 1) * math.log(points)
        if bic < best_bic:
            best, best_bic = np.zeros(columns), bic
            best[active] = coef[:-1]
    return best
