"""The ``quantify`` family: one analyte's concentration in a sample, with its uncertainty, by
absorbance against a certified standard, a second absorber in the sample where the structure
names one.

Structures: ``<analyte>`` or ``<analyte>+<interferent>`` over :data:`~.parts.ANALYTES` (an
interferent only where it absorbs at the analyte's peak: :data:`OVERLAP_MIN`). Levels
(:mod:`.levels`) set the analyte's optical density, the interferent's share, the reader's noise
and the budget.

Hidden truth per seed: the sample's concentrations (log-uniform in the level's range, set by
the library's ε and the nominal path, so that the level's optical densities are met), each
standard's real concentration (its label ±1 %, 1 sd), each dye's lot (ε and band positions,
``species.toml``), the instruments. The sample and its standards share a lot: a standard read
beside the sample calibrates ε, path, plate and gain at once; the library's ε and the nominal
path (:meth:`QuantifyTask.no_controls`) do not.

Reward: raw = exp(−CRPS(N(ĉ, σ̂²), c) / (0.05 c)), a strictly proper score of the stated
concentration and uncertainty (:func:`~labtools.simulators.tasks.standard_curve.crps_normal`),
times the process rubric (:data:`RUBRIC`: a blank, the standard read alone, standard levels,
sample replicates, the sample bracketed), weight :data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Rubric, blanks, bracketed, levels, references
from labtools.session.process import replicates as replicated
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.levels import LEVEL
from labtools.simulators.families.parts import (
    ANALYTES,
    HELD_OUT_PAIRS,
    HELD_OUT_SPECIES,
    alike,
    analyte,
    overlap,
)
from labtools.simulators.families.task import (
    SAMPLE,
    STANDARDS,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    log_uniform,
)
from labtools.simulators.tasks.scripting import caller, no_controls_um, nominal_path_cm
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Concentration, Range, magnitude, qty

__all__ = ["Quantify", "QuantifyTask"]

STANDARD, SECOND = STANDARDS[:2]
#: an interferent must absorb at least this share of its own peak at the analyte's peak [A]
OVERLAP_MIN = 0.05
#: and its spectrum must differ from the analyte's: at most this alike (:func:`~.parts.alike`)
#: [A: NADH and NADPH, 1.0, cannot be told apart by absorbance; brilliant blue and patent
#: blue V, 0.978, left the expert 55 % off at level 5]
ALIKE_MAX = 0.95
#: the score's scale, as a fraction of the true concentration (as standard_curve's)
SCALE = 0.05
#: the process's share of the outcome: an experiment without controls scores at most half
PROCESS_WEIGHT = 0.6


@dataclass(frozen=True)
class QuantifyLimits:
    """Sane bounds of a submission."""

    concentration: Range = Range(0.0, 10.0, "molar")


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [SAMPLE], [WATER]),
            "a water (or empty-well) blank on each plate the sample was read on",
        ),
        Component(
            "reference",
            0.2,
            lambda e: references(e, [STANDARD], [WATER]),
            "the standard read alone (diluted in water)",
        ),
        Component(
            "levels",
            0.2,
            lambda e: levels(e, STANDARD, count=4, lacks=[SAMPLE]),
            "standard levels read, out of four",
        ),
        Component(
            "replicates",
            0.2,
            lambda e: replicated(e, [SAMPLE], copies=3),
            "the sample in three wells of one condition (two: half)",
        ),
        Component(
            "bracketed",
            0.2,
            lambda e: bracketed(e, [SAMPLE], STANDARD, accurate=(0.0, 2.0)),
            "a reading of the sample between standards read at the same wavelength",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)


class QuantifyTask(FamilyTask):
    """One instance of :class:`Quantify` (its class attributes set by :meth:`Quantify.build`)."""

    rubric = RUBRIC
    limits = QuantifyLimits()
    analyte_key: ClassVar[str]
    interferent_key: ClassVar[str | None]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The sample's concentrations (µM) this seed drew (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        a = analyte(self.analyte_key)
        od = log_uniform(rng, self.level.od)
        out = {"analyte_um": od / (a.epsilon * nominal_path_cm(WELL_UL)) * 1e6}
        if self.interferent_key is not None:
            at_peak = od * log_uniform(rng, self.level.interferent_ratio)
            share = overlap(self.analyte_key, self.interferent_key)
            b = analyte(self.interferent_key)
            out["interferent_um"] = at_peak / share / (b.epsilon * nominal_path_cm(WELL_UL)) * 1e6
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        truth = self.truth(lab)
        standards = {STANDARD: self.analyte_key}
        sample = {self.analyte_key: truth["analyte_um"] * 1e-6}
        if self.interferent_key is not None:
            standards[SECOND] = self.interferent_key
            sample[self.interferent_key] = truth["interferent_um"] * 1e-6
        self.fill_reservoir(lab, standards, sample)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        a = analyte(self.analyte_key)
        also, second = "", ""
        if self.interferent_key is not None:
            b = analyte(self.interferent_key)
            also = f", with {b.name} also present,"
            second = f"; a standard of {b.name} at {SECOND} ('{labels[SECOND]}')"
        return (
            f"The container {SAMPLE} ('sample') holds {a.name} in water{also} at an unknown "
            f"concentration. A certified standard of {a.name} is at {STANDARD} "
            f"('{labels[STANDARD]}'){second}; water at {WATER}, a waste trough at {WASTE}. "
            "lh_get_deck shows the deck: two 96-well plates, tip racks, the plate reader and a "
            f"spectrometer. Determine the concentration of {a.name} in the sample and its "
            "standard uncertainty (one standard deviation, everything included). Submit once "
            "with submit_quantify. Reward: the continuous ranked probability score of a normal "
            "distribution with your concentration and uncertainty against the true "
            "concentration, on a scale of 5 % of it, times how sound the experiment was "
            "(blanks, the standard read alone, standard levels, replicates, the sample "
            "between standards)."
        )

    @tool(name="submit_quantify", destructive=True)
    async def submit(
        self,
        concentration: Annotated[
            Concentration, Arg("The analyte's concentration in the sample.", within="concentration")
        ],
        uncertainty: Annotated[
            Concentration,
            Arg("Its standard uncertainty: one standard deviation, ≥ 0.", within="concentration"),
        ],
    ) -> Submitted:
        """Submit the analyte's concentration in the sample and its uncertainty. Ends the
        episode."""
        self.submission = {
            "concentration_um": magnitude(concentration, "micromolar"),
            "uncertainty_um": magnitude(uncertainty, "micromolar"),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        true_um = self.truth(lab)["analyte_um"]
        guess, sd = self.submission["concentration_um"], self.submission["uncertainty_um"]
        crps = crps_normal(guess, sd, true_um)
        return {
            "raw": math.exp(-crps / (SCALE * true_um)),
            "relative_error": (guess - true_um) / true_um,
            "relative_crps": crps / true_um,
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.quantify_expert.quantify` (survey, calibration series, unmixing)."""
        from labtools.simulators.families.quantify_expert import quantify

        estimate, sd = quantify(
            caller(session),
            standard=STANDARD,
            second=SECOND if self.interferent_key is not None else None,
            sample=SAMPLE,
            water=WATER,
        )
        self._submit(session, estimate, sd)

    def naive(self, session: Session) -> None:
        """The sample read neat at the library's peak, unblanked, with the library's ε and a
        1 cm path; a made-up 10 % uncertainty."""
        a = analyte(self.analyte_key)
        guess = no_controls_um(session, SAMPLE, self.analyte_key, a.peak_nm, plate_od=0.0)
        guess *= nominal_path_cm(WELL_UL)  # converted over 1 cm instead
        self._submit(session, guess, 0.1 * guess)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a twentieth of the standard's label, ± that much."""
        guess = _label_um(caller(session)("lh_get_deck")["labels"][STANDARD]) / 20.0
        self._submit(session, guess, guess)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the level's optical densities converted with the library's ε
        over the nominal path: the prior's log-centre, and its spread."""
        a = analyte(self.analyte_key)
        low, high = (od / (a.epsilon * nominal_path_cm(WELL_UL)) * 1e6 for od in self.level.od)
        centre = math.sqrt(low * high)
        self._submit(session, centre, (high - low) / math.sqrt(12.0))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the sample read once neat at the library's peak, the nominal plate's OD
        taken off, converted with the library's ε over the nominal path; no standard, blank or
        replicate; the library's few per cent as its uncertainty."""
        a = analyte(self.analyte_key)
        guess = no_controls_um(session, SAMPLE, self.analyte_key, a.peak_nm)
        self._submit(session, guess, 0.03 * guess)

    @staticmethod
    def _submit(session: Session, micromolar: float, sd_um: float) -> None:
        caller(session)(
            "submit_quantify",
            concentration=qty(max(micromolar, 0.0), "micromolar", decimals=6),
            uncertainty=qty(max(sd_um, 0.0), "micromolar", decimals=6),
        )


class Quantify(LevelledFamily):
    """One analyte's concentration against its standard (:mod:`.quantify`)."""

    id = "quantify"
    title = "Quantify an analyte against a certified standard, with its uncertainty"
    members = ("standard_curve",)
    task = QuantifyTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        out = list(ANALYTES)
        for a in ANALYTES:
            out += [f"{a}+{b}" for b in ANALYTES if b != a and _interferes(a, b)]
        return out

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        if HELD_OUT_SPECIES & set(keys):
            return True
        return frozenset(analyte(k).kind for k in keys) in HELD_OUT_PAIRS

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = structure.split("+")
        a = analyte(keys[0])
        title = f"Quantify {a.name}" + (f" beside {analyte(keys[1]).name}" if len(keys) > 1 else "")
        return {
            "title": title,
            "analyte_key": keys[0],
            "interferent_key": keys[1] if len(keys) > 1 else None,
        }


def _interferes(key: str, other: str) -> bool:
    """Whether ``other`` is a second absorber worth telling from ``key``: it absorbs at
    ``key``'s peak, and its spectrum can be told from ``key``'s."""
    return overlap(key, other) >= OVERLAP_MIN and alike(key, other) <= ALIKE_MAX


def _label_um(label: str) -> float:
    from labtools.demo.labels import label_micromolar

    return label_micromolar(label)
