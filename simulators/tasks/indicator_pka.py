"""T5 — determine a mystery indicator's pKa from absorbance spectra across buffers.

Hidden truth per seed (``labtools.simulators.world.hidden_species``): the indicator's pKa (uniform
3.5–9.0) and both forms' spectra (band positions, ε, widths; they always cross at an
isosbestic point), and each buffer's real pH (its label ±0.02, 1 sd). No library entry is the
indicator, so without spectra only the prior is left (:meth:`IndicatorPka.prior`,
:meth:`IndicatorPka.inversion` score near 0). The agent sees a labelled stock ("indicator X
200 µM ±1 %"), ten buffers labelled pH 2.00 … 11.00 and water, and submits a pKa p̂ and a
one-sd uncertainty σ̂.

Reward: raw = exp(−CRPS(N(p̂, σ̂²), pKa) / 0.1). For σ̂ = 0 the CRPS is |p̂ − pKa|, so this is
the reference's exp(−|p̂ − pKa| / 0.1) (environments reference, T5); CRPS being strictly
proper (Gneiting & Raftery 2007), an honest σ̂ scores best in expectation, a σ̂ too small or
too large costs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Anchors, Budget, Session, Submitted, Task
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.pka_fit import pka_posterior
from labtools.simulators.tasks.rubrics import RUBRICS
from labtools.simulators.tasks.scripting import Call, batch, caller, nm, site_of
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.simulators.world.hidden_species import PKA_RANGE, MysteryIndicator
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["IndicatorPka", "buffers_of"]

INDICATOR = "reservoir:A2"
WATER = "reservoir:A1"
#: the score's scale s in pH units: a CRPS (for a point answer, the error) of 0.1 costs a
#: factor e^−1, as the environments reference sets it. 0.1 is what careful spectrophotometric
#: work reaches against the literature (methyl red's pKa is quoted 4.76–5.05: physics §8);
#: the expert lands within ~0.02 here, the labelled buffers' own tolerance
SCALE = 0.1
WELL_UL = 200.0
INDICATOR_UL = 20.0  # 20 µM in the well: 0.1–0.9 OD at either form's peak
READ_NM = (380.0, 660.0, 10.0)  # covers both forms' peaks (400–640 nm); 29 points
ROWS = "ABCD"  # each buffer in quadruplicate, one column per buffer
#: wells per spectrum read: 20 × 29 values, within the 600 the reader returns inline
READ_WELLS = 20
_PH_LABEL = re.compile(r"pH (\d+(?:\.\d+)?) ±(\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class PkaLimits:
    """Sane bounds of a submission."""

    pka: Range = Range(0.0, 14.0)
    uncertainty: Range = Range(0.0, 14.0)


class IndicatorPka(Task):
    id = "indicator_pka"
    title = "Determine an indicator's pKa from its spectra across buffers"
    budget = Budget(calls=150, tips=40, reagent_ul=8000, wells=48, hours=4)
    #: mean raw scores of naive() and expert() over calibration seeds 1000–1049, measured with
    #: labtools.session.evaluate.calibrate (`labtools eval --calibrate`)
    anchors = Anchors(naive=0.1936, expert=0.938, seeds="1000-1049")
    #: process components of the reward (labtools.simulators.tasks.rubrics)
    rubric = RUBRICS["indicator_pka"]
    config = "labtools.simulators:indicator_pka.toml"
    lab_tools = LIQUID | ABSORBANCE
    limits = PkaLimits()

    def prepare(self, lab: Lab, seed: int) -> None:
        """The indicator and the buffers' real pH are drawn by the lab's components when the
        world is reset; nothing else to put in place."""
        _indicator(lab)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        buffers = "; ".join(f"{well}: {labels[well]}" for well, _, _ in buffers_of(labels))
        return (
            f"Determine the pKa of an acid-base indicator. {INDICATOR} holds its stock "
            f"({labels[INDICATOR]}); its pKa and the spectra of its acid and base forms are "
            f"unknown. Buffers in the reservoir: {buffers}; the ± is one standard deviation of "
            f"the real pH. Water is in {WATER}. Two 96-well plates, a plate reader and a "
            "spectrometer are on the deck (lh_get_deck shows it all). A little indicator added "
            "to a buffer takes the buffer's pH. Submit once with submit_indicator_pka: the pKa "
            "and its standard uncertainty (one standard deviation, everything included). "
            "Reward: exp(-CRPS / 0.1), with CRPS the continuous ranked probability score of a "
            "normal distribution with your pKa and uncertainty against the true pKa (for a zero "
            "uncertainty, the absolute error): a wrong value costs, and so does an uncertainty "
            "that is too small or too large."
        )

    @tool(name="submit_indicator_pka", destructive=True)
    async def submit(
        self,
        pka: Annotated[float, Arg("The indicator's pKa (dimensionless).", within="pka")],
        uncertainty: Annotated[
            float, Arg("Its standard uncertainty: one standard deviation.", within="uncertainty")
        ],
    ) -> Submitted:
        """Submit the indicator's pKa and its uncertainty. Ends the episode."""
        self.submission = pka_submission(pka, uncertainty)
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        return pka_score(self.submission, _indicator(lab).truth["pka"], SCALE)

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """Each well read empty; 180 µL of each buffer in quadruplicate (rows A–D, one column
        per buffer; a fresh tip whenever a channel changes buffer), then 20 µL of indicator
        into every well from one channel and one tip, so that the amounts differ only by that
        channel's scatter; spectra 380–660 nm; a global two-form fit of every well and
        wavelength (pKa, both form spectra, each buffer's real pH within its label's ±, each
        well's amount within the replicates' scatter): the pKa and its uncertainty from that
        posterior."""
        call = caller(session)
        deck = call("lh_get_deck")
        buffers = buffers_of(deck["labels"])
        sources = _layout(buffers, len(deck["channels"]))
        wells = list(sources)
        empty = _measure(call, wells)
        call("lh_move_plate", plate="plate_1", destination=site_of(deck, "plate_1"))
        fills = [(sources[w], f"plate_1:{w}", WELL_UL - INDICATOR_UL) for w in wells]
        call("lh_transfer", **batch(fills, "per_source", channels=[]))
        doses = [(INDICATOR, f"plate_1:{w}", INDICATOR_UL) for w in wells]
        call("lh_transfer", **batch(doses, "reuse", channels=[0]))
        filled = _measure(call, wells)
        spectra = np.array([filled[w] - empty[w] for w in wells])
        labelled = {source: (ph, sd) for source, ph, sd in buffers}
        ph, sd = (np.array([labelled[sources[w]][i] for w in wells]) for i in (0, 1))
        pka, sigma = pka_posterior(spectra, ph, sd)
        call("submit_indicator_pka", pka=round(pka, 4), uncertainty=round(sigma, 4))

    def naive(self, session: Session) -> None:
        """Indicator in each buffer, one unblanked reading at bromophenol blue's base peak
        (590 nm, a literature value), the pH where the reading crosses half its maximum by
        linear interpolation; half a buffer step as the uncertainty."""
        call = caller(session)
        buffers = buffers_of(call("lh_get_deck")["labels"])
        wells = [f"A{i + 1}" for i in range(len(buffers))]
        into = [f"plate_1:{well}" for well in wells]
        buffered = [
            (s, w, WELL_UL - INDICATOR_UL) for (s, _, _), w in zip(buffers, into, strict=True)
        ]
        call("lh_transfer", **batch(buffered, channels=[0]))
        dyed = [(INDICATOR, w, INDICATOR_UL) for w in into]
        call("lh_transfer", **batch(dyed, "reuse", channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        od = call("reader_read_absorbance", plate="plate_1", wavelength=nm(590), wells=wells)
        values = np.array([od["values"][w] for w in wells])
        ph = np.array([p for _, p, _ in buffers])
        call("submit_indicator_pka", pka=round(_half_max_ph(ph, values), 4), uncertainty=0.5)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the middle of the labelled buffers' pH range, ± a uniform
        prior's sd over it (from the labels alone)."""
        call = caller(session)
        ph = [p for _, p, _ in buffers_of(call("lh_get_deck")["labels"])]
        low, high = min(ph), max(ph)
        middle, sd = (low + high) / 2.0, (high - low) / math.sqrt(12.0)
        call("submit_indicator_pka", pka=round(middle, 4), uncertainty=round(sd, 4))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the centre and sd of the package's own prior of mystery
        indicators (``hidden_species.PKA_RANGE``, uniform). No library entry is this
        indicator: its pKa and spectra are drawn per seed."""
        low, high = PKA_RANGE
        middle, sd = (low + high) / 2.0, (high - low) / math.sqrt(12.0)
        caller(session)("submit_indicator_pka", pka=round(middle, 4), uncertainty=round(sd, 4))


def buffers_of(labels: dict[str, str]) -> list[tuple[str, float, float]]:
    """The labelled buffers as (well, pH, sd), by increasing pH."""
    found = []
    for well, label in labels.items():
        match = _PH_LABEL.search(label)
        if match is not None and label.startswith("buffer"):
            found.append((well, float(match.group(1)), float(match.group(2))))
    return sorted(found, key=lambda b: b[1])


def _half_max_ph(ph: np.ndarray, values: np.ndarray) -> float:
    """The first pH where ``values`` cross half their maximum (linear interpolation)."""
    half = float(np.max(values)) / 2.0
    above = values >= half
    for i in range(1, ph.size):
        if above[i] != above[i - 1]:
            t = (half - values[i - 1]) / (values[i] - values[i - 1])
            return float(ph[i - 1] + t * (ph[i] - ph[i - 1]))
    return float(np.median(ph))


def _indicator(lab: Lab) -> MysteryIndicator:
    component = lab.shared.get("indicator")
    if not isinstance(component, MysteryIndicator):
        raise RuntimeError("the indicator_pka task needs its lab config (indicator_pka.toml)")
    return component


def _layout(buffers: list[tuple[str, float, float]], channels: int) -> dict[str, str]:
    """Well → buffer: buffer ``k`` in column ``k + 1``, one well per row of :data:`ROWS`; in
    the order that lets each of the ``channels`` keep to one buffer, row after row."""
    column = {source: str(i + 1) for i, (source, _, _) in enumerate(buffers)}
    return {
        f"{row}{column[source]}": source
        for start in range(0, len(buffers), channels)
        for row in ROWS
        for source, _, _ in buffers[start : start + channels]
    }


def _measure(call: Call, wells: list[str]) -> dict[str, np.ndarray]:
    """Move plate_1 into the reader and read the spectra of ``wells`` at :data:`READ_NM` (OD),
    :data:`READ_WELLS` at a time."""
    start, stop, step = READ_NM
    call("lh_move_plate", plate="plate_1", destination="reader")
    spectra: dict[str, np.ndarray] = {}
    for first in range(0, len(wells), READ_WELLS):
        data = call(
            "reader_read_absorbance_spectrum",
            plate="plate_1",
            wells=wells[first : first + READ_WELLS],
            start=nm(start),
            stop=nm(stop),
            step=nm(step),
        )
        spectra.update({w: np.array(v, dtype=float) for w, v in data["values"].items()})
    return spectra


def pka_submission(pka: float, uncertainty: float) -> dict[str, float]:
    """A submitted pKa and its standard uncertainty, each refused unless finite (their ranges
    are the tool's limits)."""
    for name, value in (("pka", pka), ("uncertainty", uncertainty)):
        if not math.isfinite(value):
            raise OutOfRange(f"the {name} must be a finite number", field=f"/{name}")
    return {"pka": float(pka), "uncertainty": float(uncertainty)}


def pka_score(submission: dict[str, float], truth: float, scale: float) -> dict[str, float]:
    """``exp(−CRPS / scale)`` of N(pKa, uncertainty²) against the true ``truth``, with the error
    and the CRPS."""
    guess, sd = submission["pka"], submission["uncertainty"]
    crps = crps_normal(guess, sd, truth)
    return {"raw": math.exp(-crps / scale), "error": guess - truth, "crps": crps}
