"""The ``mixture`` family: which of a set of candidate analytes a sample holds, and how much of
each, against certified standards of every candidate.

Structures: sets of :data:`CANDIDATES` analytes (``a+b+c``, in :data:`~.parts.ANALYTES`
order), every two of them told apart by absorbance (:data:`ALIKE_MAX`). Levels
(:mod:`.levels`) set each present analyte's optical density, the reader's noise and the
budget.

Hidden truth per seed: how many of the candidates the sample holds (one to all, at most
three), which, and each one's concentration (log-uniform in the level's optical densities, by
the library's ε and the nominal path); each standard's real concentration (its label ±1 %,
1 sd) and each dye's lot. A standard read beside the sample calibrates its lot's ε and shape,
the path, plate and gain; the library's spectra (:meth:`MixtureTask.no_controls`) do not.

Reward: F1 of the analytes claimed present (a concentration that would read at least
:data:`PRESENT_OD` neat in a 200 µL well, by the library's ε) × the mean over the present ones
of exp(−|ln(ĉ/c)| / τ), τ = 0.1, times the process rubric (:data:`RUBRIC`: a blank, every
candidate's standard read alone, sample replicates, a sample reading in range), weight
:data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import pint

from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Rubric, blanks, references, usable_reading
from labtools.session.process import replicates as replicated
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.levels import LEVEL
from labtools.simulators.families.parts import (
    ANALYTES,
    HELD_OUT_PAIRS,
    HELD_OUT_SPECIES,
    alike,
    analyte,
)
from labtools.simulators.families.task import (
    SAMPLE,
    STANDARDS,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    log_uniform,
    per_candidate_tool,
)
from labtools.simulators.tasks.scripting import (
    Call,
    batch,
    caller,
    nm,
    nominal_path_cm,
    nominal_plate_od,
    site_of,
)
from labtools.simulators.world import SpeciesLibrary
from labtools.tool import Arg
from labtools.units import Concentration, Range, magnitude, qty

__all__ = ["Mixture", "MixtureTask"]

#: candidates per structure [A: three to five, as a screen's panel]
CANDIDATES = (3, 4, 5)
#: at most this many of them in one sample [A]
MOST_PRESENT = 3
#: every two candidates at most this alike (:func:`~.parts.alike`), as quantify's
ALIKE_MAX = 0.95
#: a claimed concentration counts as "present" when it would read this much neat in a 200 µL
#: well by the library's ε: three times the reader's 0.001 OD noise floor [A]
PRESENT_OD = 0.003
TAU = 0.1  # concentration tolerance: a 10 % error costs a factor e^-1 (dye_quantification's)
#: the process's share of the outcome, as quantify's
PROCESS_WEIGHT = 0.6


def rubric(candidates: tuple[str, ...]) -> Rubric:
    stocks = STANDARDS[: len(candidates)]
    return Rubric(
        (
            Component(
                "blank",
                0.25,
                lambda e: blanks(e, [SAMPLE], [WATER]),
                "a water (or empty-well) blank on each plate the sample was read on",
            ),
            Component(
                "references",
                0.35,
                lambda e: references(e, stocks, [WATER]),
                "share of the candidates' standards read alone (the unmixing basis)",
            ),
            Component(
                "replicates",
                0.2,
                lambda e: replicated(e, [SAMPLE], copies=3),
                "the sample in three wells of one condition (two: half)",
            ),
            Component(
                "linear_range",
                0.2,
                lambda e: usable_reading(e, [SAMPLE]),
                "a reading of the sample (a spectrum by its peak) within 0.1–2.0 OD",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="No uncertainty is asked for.",
    )


@dataclass(frozen=True)
class MixtureLimits:
    """Sane bounds of a submission."""

    concentration: Range = Range(0.0, 10.0, "molar")


class MixtureTask(FamilyTask):
    """One instance of :class:`Mixture` (its class attributes set by :meth:`Mixture.build`)."""

    limits = MixtureLimits()
    candidates: ClassVar[tuple[str, ...]]

    @property
    def stocks(self) -> dict[str, str]:
        """Each candidate's standard container."""
        return dict(zip(self.candidates, STANDARDS, strict=False))

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The sample's analytes and concentrations (µM) this seed drew (trainers, scoring)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        count = int(rng.integers(1, min(MOST_PRESENT, len(self.candidates)) + 1))
        chosen = sorted(int(i) for i in rng.choice(len(self.candidates), count, replace=False))
        path = nominal_path_cm(WELL_UL)
        out = {}
        for i in chosen:
            a = analyte(self.candidates[i])
            out[a.key] = log_uniform(rng, self.level.od) / (a.epsilon * path) * 1e6
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        sample = {key: um * 1e-6 for key, um in self.truth(lab).items()}
        self.fill_reservoir(lab, {c: k for k, c in self.stocks.items()}, sample)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        names = ", ".join(analyte(k).name for k in self.candidates)
        standards = "; ".join(f"{c}: '{labels[c]}'" for c in self.stocks.values())
        keys = ", ".join(self.candidates)
        return (
            f"The container {SAMPLE} ('sample') holds, in water, one to "
            f"{min(MOST_PRESENT, len(self.candidates))} of these analytes: {names}, each at an "
            f"unknown concentration. Certified standards of every one are in the reservoir "
            f"({standards}); water at {WATER}, a waste trough at {WASTE}. lh_get_deck shows the "
            "deck: two 96-well plates, tip racks, the plate reader and a spectrometer. Find "
            "which the sample holds and the concentration of each. Submit once with "
            f"submit_mixture, giving every candidate's concentration ({keys}; 0 for one that is "
            f"absent: a concentration that would read below {PRESENT_OD} OD neat in a 200 µL "
            "well counts as absent). Reward: the right set of analytes (F1) times concentration "
            "accuracy, times how sound the experiment was (a blank, every standard read alone, "
            "sample replicates, a sample reading in range)."
        )

    async def take(self, given: Mapping[str, pint.Quantity]) -> Submitted:
        """What every instance's ``submit_mixture`` does with its candidates' concentrations
        (checked by the tool's schema: exactly the candidates, each 0-10 M)."""
        self.submission = {k: magnitude(given[k], "micromolar") for k in self.candidates}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0, "f1": 0.0, "accuracy": 0.0}
        truth = self.truth(lab)
        path = nominal_path_cm(WELL_UL)
        claimed = {
            k
            for k, um in self.submission.items()
            if um * 1e-6 * analyte(k).epsilon * path >= PRESENT_OD
        }
        hits = len(claimed & set(truth))
        f1 = 2 * hits / (len(claimed) + len(truth))
        terms = []
        for key, true_um in truth.items():
            guess = self.submission.get(key, 0.0)
            error = abs(math.log(guess) - math.log(true_um)) if guess > 0 else math.inf
            terms.append(math.exp(-error / TAU))
        accuracy = sum(terms) / len(terms)
        return {"raw": f1 * accuracy, "f1": f1, "accuracy": accuracy}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.mixture_expert.composition` (survey, calibration, unmixing)."""
        from labtools.simulators.families.mixture_expert import composition

        found = composition(
            caller(session), self.stocks, sample=SAMPLE, water=WATER, wells=self.budget.wells
        )
        self._submit(session, found)

    def naive(self, session: Session) -> None:
        """The sample read neat at each candidate's library peak, unblanked: the candidate whose
        peak reads most per library ε is the one present, over a 1 cm path."""
        call = self._read_neat(session)
        values = {}
        for key in self.candidates:
            a = analyte(key)
            read = call(
                "reader_read_absorbance", plate="plate_1", wavelength=nm(a.peak_nm), wells=["A1"]
            )["values"].get("A1")
            values[key] = 4.0 if read is None else max(float(read), 0.0)
        best = max(self.candidates, key=lambda k: values[k] / analyte(k).epsilon)
        found = {k: 0.0 for k in self.candidates}
        found[best] = values[best] / analyte(best).epsilon * 1e6
        self._submit(session, found)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; every candidate present at a twentieth of its standard."""
        from labtools.demo.labels import label_micromolar

        labels = caller(session)("lh_get_deck")["labels"]
        self._submit(
            session, {k: label_micromolar(labels[c]) / 20.0 for k, c in self.stocks.items()}
        )

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; every candidate at the log-centre of the level's optical
        densities, converted with the library's ε over the nominal path."""
        centre = math.sqrt(self.level.od[0] * self.level.od[1])
        path = nominal_path_cm(WELL_UL)
        self._submit(
            session, {k: centre / (analyte(k).epsilon * path) * 1e6 for k in self.candidates}
        )

    def no_controls(self, session: Session) -> None:
        """Shortcut: :meth:`uncalibrated`'s concentrations."""
        self._submit(session, self.uncalibrated(session))

    def uncalibrated(self, session: Session) -> dict[str, float]:
        """Each candidate's concentration (µM) from the sample's spectrum read once neat, the
        nominal plate's OD taken off, unmixed with the library's spectra over the nominal path
        (the same subset choice as the expert's); no standard, blank or replicate."""
        from labtools.simulators.families.protocol import GRID_NM, PLATE, read, select

        call = caller(session)
        home = site_of(call("lh_get_deck"), PLATE)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", WELL_UL)], "new", channels=[0]))
        library = SpeciesLibrary.default()
        path = nominal_path_cm(WELL_UL)
        basis = [library[k].absorptivity(GRID_NM) * path * 1e-6 for k in self.candidates]
        spectrum = read(call, home, ["A1"])["A1"] - nominal_plate_od()
        found = select(spectrum, basis)
        return dict(zip(self.candidates, map(float, found), strict=True))

    @staticmethod
    def _read_neat(session: Session) -> Call:
        """200 µL of the sample into plate_1:A1 (one tip), the plate into the reader."""
        call = caller(session)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", WELL_UL)], "new", channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        return call

    def _submit(self, session: Session, found: Mapping[str, float]) -> None:
        caller(session)(
            "submit_mixture",
            concentrations={
                k: qty(max(float(found.get(k, 0.0)), 0.0), "micromolar", decimals=6)
                for k in self.candidates
            },
        )


class Mixture(LevelledFamily):
    """Which candidates a sample holds, and how much of each (:mod:`.mixture`)."""

    id = "mixture"
    title = "Identify and quantify the analytes of a sample among candidates with standards"
    members: ClassVar[tuple[str, ...]] = ("dye_quantification",)
    task = MixtureTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(_structures())

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        if HELD_OUT_SPECIES & set(keys):
            return True
        kinds = {analyte(k).kind for k in keys}
        return any(pair <= kinds for pair in HELD_OUT_PAIRS)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = tuple(structure.split("+"))
        return {
            "title": f"Which of {len(keys)} analytes a sample holds, and how much",
            "rubric": rubric(keys),
            "candidates": keys,
            "submit": _submit_tool(keys),
        }


def _submit_tool(keys: tuple[str, ...]) -> Any:
    """The ``submit_mixture`` tool of a candidate set: one concentration per candidate."""

    async def submit(self: MixtureTask, concentrations: Any) -> Submitted:
        """Submit every candidate's concentration in the sample. Ends the episode."""
        return await self.take(cast("Mapping[str, pint.Quantity]", concentrations))

    described = Arg(
        "Each candidate's concentration in the sample, by its key; 0 for an absent one.",
        within="concentration",
    )
    return per_candidate_tool(
        "submit_mixture", submit, "concentrations", keys, Concentration, described
    )


@functools.cache
def _structures() -> list[str]:
    """Every candidate set of :data:`CANDIDATES` analytes whose members are told apart."""
    told_apart = {
        (a, b) for a, b in itertools.combinations(ANALYTES, 2) if alike(a, b) <= ALIKE_MAX
    }
    out = []
    for size in CANDIDATES:
        for group in itertools.combinations(ANALYTES, size):
            if all(pair in told_apart for pair in itertools.combinations(group, 2)):
                out.append("+".join(group))
    return out
