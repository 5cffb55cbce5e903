"""T7 — dye stability: which azo dye is this old stock, how much is left, and has it faded?

Hidden truth per seed: the stock in reservoir:A10 is one of three azo dyes (tartrazine, sunset
yellow FCF, allura red AC), made up to its label (:data:`LABEL_UM`) with a preparation error
(N(1, :data:`MADE_SD`²), as the deck's own stocks) and then, with probability
:data:`P_DEGRADED`, faded to a share of it (uniform in :data:`RETAINED`). Azo dyes fade by
cleavage of the azo bond, whose products — aromatic amines such as sulfanilic acid — are
colourless [L: Pandey, Singh & Iyengar 2007, Int. Biodeterior. Biodegrad. 59:73–84]; here they
absorb nothing in the reader's range [A]. So a faded stock reads as a weaker one: only a
calibrated concentration, set against the label, tells the verdict. The dye's batch (its ε and
band positions, ``species.toml``) is that of the deck's standards.

The decoy is the label itself: at 500 µM a 200 µL well holds ~8 OD (ε ≈ 2.5–2.8 × 10⁴ M⁻¹
cm⁻¹, ~0.55 cm of liquid), far past the reader's range, where stray light caps every reading
near 4 OD; read neat, an intact stock looks half faded.

Reward: the right dye × V × exp(−|ln(ĉ/c)| / τ), with V = 1 − (p − y)² the Brier term of the
stated P(degraded) (strictly proper) and y = 1 when less than :data:`THRESHOLD` of the label
is left; τ = 0.1. The process rubric (:data:`DYE_STABILITY`) rewards a blank, the claimed
dye's standard read in range, the stock read in range, and a replicate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.lab import VIRTUAL_LAB, Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.session.process import (
    Component,
    Episode,
    Rubric,
    blanks,
    references,
    replicates,
    usable_reading,
)
from labtools.simulators.tasks.dye_quantification import DyeLimits
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.scripting import batch, caller, nm, nominal_path_cm, one_reading
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude, qty

__all__ = ["DYE_STABILITY", "DyeStability", "outcome", "p_degraded"]

Dye = Literal["tartrazine", "sunset_yellow", "allura_red"]
DYES: tuple[Dye, ...] = get_args(Dye)
STOCK = "reservoir:A10"
WATER = "reservoir:A1"
STANDARDS: dict[str, str] = {
    "tartrazine": "reservoir:A2",
    "sunset_yellow": "reservoir:A3",
    "allura_red": "reservoir:A4",
}
#: the stock's label (µM) and volume (µL)
LABEL_UM, STOCK_UL = 500.0, 15_000.0
#: preparation error of the stock (1 sd), as the deck's dye stocks (virtual_lab.toml)
MADE_SD = 0.02
#: share of stocks that faded [A: kept in light for weeks, azo dyes fade often]
P_DEGRADED = 0.6
#: the share of the dye a faded stock retains (uniform) [A]
RETAINED = (0.45, 0.85)
#: "degraded": less than this share of the label left
THRESHOLD = 0.9
TAU = 0.1
#: the expert's dilutions (µL of standard or stock in a 200 µL well) and its one-sd error of a
#: concentration read against a standard (stock ±2 %, pipetting, batch-matched ε)
STANDARD_UL, SAMPLE_UL, WELL_UL = 40.0, 40.0, 200.0
EXPERT_SD = 0.04
#: verdict probabilities are kept within this margin of 0 and 1
SURE = 0.98
#: the naive protocol's path length (cm): the geometric height of 200 µL in a 6.86 mm well
NAIVE_PATH_CM = 0.54


def _submitted_stock(episode: Episode) -> list[str]:
    dye = (episode.submission or {}).get("dye")
    return [STANDARDS[dye]] if dye in STANDARDS else []


#: the process's share of the outcome: the smallest (in steps of 0.1) at which the experiment
#: without controls (:meth:`DyeStability.no_controls`) scores at most 0.5 normalised: 0.45 on
#: evaluation seeds 0-19, 0.52 at 0.6 [C]. A calibrated reading is barely more exact here than
#: the library's ε (the standard's label ±2 %, the batch's ε ±3 %), so the outcome alone cannot
#: tell the two apart: the skipped controls must
NO_CONTROLS_WEIGHT = 0.7
DYE_STABILITY = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [STOCK], [WATER]),
            "a water (or empty-well) blank on each plate the stock was read on",
        ),
        Component(
            "standard",
            0.3,
            lambda e: references(e, _submitted_stock(e), [WATER], accurate=True),
            "the claimed dye's standard read alone, its peak within 0.1–2.0 OD",
        ),
        Component(
            "linear_range",
            0.3,
            lambda e: usable_reading(e, [STOCK]),
            "a reading of the stock (a spectrum by its peak) within 0.1–2.0 OD",
        ),
        Component(
            "replicates",
            0.2,
            lambda e: replicates(e, [STOCK], copies=2),
            "the stock in at least two wells of the same condition",
        ),
    ),
    weight=NO_CONTROLS_WEIGHT,
    note="P(degraded) is scored by a Brier term (proper), so no component rewards it again.",
)


def _draw_case(rng: np.random.Generator) -> dict[str, float | str]:
    """The hidden stock: its dye, the preparation error, the share that survived."""
    dye = DYES[int(rng.integers(len(DYES)))]
    made = float(rng.normal(1.0, MADE_SD))
    faded = bool(rng.random() < P_DEGRADED)
    retained = float(rng.uniform(*RETAINED)) if faded else 1.0
    return {"dye": dye, "micromolar": LABEL_UM * made * retained}


class DyeStability(Task):
    id = "dye_stability"
    config = VIRTUAL_LAB
    lab_tools = LIQUID | ABSORBANCE
    title = "Which azo dye is this old stock, how much is left, and has it faded?"
    budget = Budget(calls=120, tips=40, reagent_ul=3000, wells=48, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.0745, expert=0.846, seeds="1000-1049")
    rubric = DYE_STABILITY
    limits = DyeLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        world = lab.shared["world"]
        case = world.hidden("dye_stability/case", _draw_case)
        mixture = Mixture.solution(STOCK_UL, {str(case["dye"]): float(case["micromolar"]) * 1e-6})
        world.fill(STOCK, mixture, label=f"azo dye stock, made up at {LABEL_UM:g} µM")

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        stocks = "; ".join(f"{well}: {labels[well]}" for well in (WATER, *STANDARDS.values()))
        return (
            f"The container {STOCK} holds an aqueous stock of one azo dye — tartrazine, sunset "
            f"yellow FCF or allura red AC — made up at {LABEL_UM:g} µM some weeks ago and kept "
            "in the light. Azo dyes fade to colourless products. Labelled standards and water "
            f"are in the reservoir ({stocks}); lh_get_deck shows the whole deck. Find which dye "
            "it is, its concentration now, and whether it has degraded (less than "
            f"{THRESHOLD:.0%} of its label left). Submit once with submit_dye_stability: the "
            "dye, its concentration, and P(degraded). Reward: the right dye × V × "
            f"exp(−|ln(ĉ/c)|/{TAU}), with V = 1 − (p − y)², y = 1 if it has degraded."
        )

    @tool(name="submit_dye_stability", destructive=True)
    async def submit(
        self,
        dye: Annotated[Dye, Arg("Which dye the stock holds.")],
        concentration: Annotated[
            Concentration, Arg("The dye's concentration in the stock now.", within="concentration")
        ],
        degraded: Annotated[
            float, Arg("Probability that the stock has degraded.", within="probability")
        ],
    ) -> Submitted:
        """Submit the dye, its concentration and P(degraded). Ends the episode."""
        self.submission = {
            "dye": dye,
            "micromolar": magnitude(concentration, "micromolar"),
            "degraded": float(degraded),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0, "identity": 0.0, "verdict_term": 0.0, "accuracy": 0.0}
        case = lab.shared["world"].hidden("dye_stability/case", _draw_case)
        return outcome(self.submission, str(case["dye"]), float(case["micromolar"]), LABEL_UM)

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """Each standard diluted into range beside the stock in duplicate and a blank; the
        stock's blanked spectrum fit by each standard's (with a constant baseline): the best
        fit names the dye, its scale the concentration, and the verdict follows from that
        concentration against the label with :data:`EXPERT_SD`."""
        call = caller(session)
        standards = {dye: f"plate_1:A{i + 1}" for i, dye in enumerate(DYES)}
        samples, blank = ["plate_1:A4", "plate_1:A5"], "plate_1:A6"
        water = [(WATER, w, WELL_UL - STANDARD_UL) for w in standards.values()]
        water += [(WATER, w, WELL_UL - SAMPLE_UL) for w in samples]
        call("lh_transfer", **batch([*water, (WATER, blank, WELL_UL)], "reuse", channels=[0]))
        dyes = [(STANDARDS[d], w, STANDARD_UL) for d, w in standards.items()]
        dyes += [(STOCK, w, SAMPLE_UL) for w in samples]
        call("lh_transfer", **batch(dyes, channels=range(len(dyes))))
        call("lh_move_plate", plate="plate_1", destination="reader")
        read = call(
            "reader_read_absorbance_spectrum",
            plate="plate_1",
            wells=[w.split(":")[1] for w in (*standards.values(), *samples, blank)],
            start=nm(380),
            stop=nm(600),
            step=nm(4),
        )["values"]
        labels = call("lh_get_deck")["labels"]

        def spectrum(well: str) -> np.ndarray:
            return np.array(read[well.split(":")[1]], dtype=float)

        background = spectrum(blank)
        sample = np.mean([spectrum(w) for w in samples], axis=0) - background
        fits = {}
        for dye, well in standards.items():
            basis = np.column_stack([spectrum(well) - background, np.ones_like(sample)])
            coef, *_ = np.linalg.lstsq(basis, sample, rcond=None)
            residual = sample - basis @ coef
            fits[dye] = (float(residual @ residual), float(coef[0]))
        dye = min(fits, key=lambda d: fits[d][0])
        standard_um = label_micromolar(labels[STANDARDS[dye]]) * STANDARD_UL / WELL_UL
        found_um = fits[dye][1] * standard_um * WELL_UL / SAMPLE_UL
        _submit(session, dye, found_um, p_degraded(found_um / LABEL_UM, EXPERT_SD))

    def naive(self, session: Session) -> None:
        """Read the stock neat at the three dyes' peaks, name the dye by the largest OD per
        library ε, and take its concentration from that OD with the well's geometric path."""
        call = caller(session)
        call("lh_transfer", **batch([(STOCK, "plate_1:A1", WELL_UL)], channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        peaks = {"tartrazine": 426, "sunset_yellow": 482, "allura_red": 504}
        # library ε (M⁻¹ cm⁻¹): E1%1cm × molar mass / 10, species.toml
        epsilon = {"tartrazine": 28_300.0, "sunset_yellow": 25_100.0, "allura_red": 26_800.0}
        od = {}
        for dye, wavelength in peaks.items():
            value = call(
                "reader_read_absorbance", plate="plate_1", wavelength=nm(wavelength), wells=["A1"]
            )["values"].get("A1")  # absent when over-range
            od[dye] = 4.0 if value is None else max(float(value), 0.0)
        dye = max(od, key=lambda d: od[d] / epsilon[d])
        found_um = od[dye] / (epsilon[dye] * NAIVE_PATH_CM) * 1e6
        _submit(session, dye, found_um, SURE if found_um < THRESHOLD * LABEL_UM else 1 - SURE)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the first dye listed, at its label, even odds of fading."""
        _submit(session, DYES[0], LABEL_UM, 0.5)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the first dye listed at the prior's mean concentration, and
        the prior's P(degraded). No package data tells the stock's dye or its fading."""
        mean_retained = (1 - P_DEGRADED) + P_DEGRADED * sum(RETAINED) / 2
        _submit(session, DYES[0], LABEL_UM * mean_retained, P_DEGRADED)

    def no_controls(self, session: Session) -> None:
        """Shortcut: the stock diluted into range and its spectrum read once, the nominal plate's
        OD taken off, fit by each dye's library spectrum over the nominal path (with a constant
        baseline): the best fit names the dye, its scale the concentration, and the verdict
        follows with the library's batch spread (3 %) for its sd; no standard, blank or
        replicate."""
        moves = [(WATER, "plate_1:A1", WELL_UL - SAMPLE_UL), (STOCK, "plate_1:A1", SAMPLE_UL)]
        wavelengths = np.arange(380.0, 601.0, 4.0)
        sample = one_reading(caller(session), moves, wavelengths)
        library, path = SpeciesLibrary.default(), nominal_path_cm(WELL_UL)
        fits = {}
        for dye in DYES:
            per_um = library[dye].absorptivity(wavelengths) * path * 1e-6
            basis = np.column_stack([per_um, np.ones_like(sample)])
            coef, *_ = np.linalg.lstsq(basis, sample, rcond=None)
            residual = sample - basis @ coef
            fits[dye] = (float(residual @ residual), float(coef[0]))
        dye = min(fits, key=lambda d: fits[d][0])
        found_um = fits[dye][1] * WELL_UL / SAMPLE_UL
        _submit(session, dye, found_um, p_degraded(found_um / LABEL_UM, 0.03))


def outcome(
    submission: Mapping[str, Any], species: str, true_um: float, label_um: float
) -> dict[str, float]:
    """The outcome of a ``submission`` (``dye``, ``micromolar``, ``degraded``) for a stock of
    ``species`` at ``true_um`` labelled ``label_um``: the right species × V × exp(−|ln(ĉ/c)|/τ),
    V = 1 − (p − y)², y = 1 when less than :data:`THRESHOLD` of the label is left (also the
    ``stability`` family's, :mod:`labtools.simulators.families.stability`)."""
    identity = float(submission["dye"] == species)
    y = float(true_um < THRESHOLD * label_um)
    verdict = 1.0 - (submission["degraded"] - y) ** 2
    guess = submission["micromolar"]
    error = abs(math.log(guess) - math.log(true_um)) if guess > 0 else math.inf
    accuracy = math.exp(-error / TAU)
    return {
        "raw": identity * verdict * accuracy,
        "identity": identity,
        "verdict_term": verdict,
        "accuracy": accuracy,
    }


def p_degraded(share: float, sd: float) -> float:
    """P(less than :data:`THRESHOLD` of the label left) for a measured ``share`` with a
    relative ``sd``, kept within :data:`SURE` of certainty."""
    p = 0.5 * (1.0 + math.erf((THRESHOLD - share) / (sd * math.sqrt(2.0))))
    return min(SURE, max(1.0 - SURE, p))


def _submit(session: Session, dye: str, micromolar: float, p: float) -> None:
    caller(session)(
        "submit_dye_stability",
        dye=dye,
        concentration=qty(max(micromolar, 0.0), "micromolar", decimals=4),
        degraded=round(p, 4),
    )
