"""The ``identify`` family: which of a list of candidate species a sample holds, with no standard
of any of them: only the species library's spectra (the literature's) and a blank of the
sample's matrix.

Structures: panels of 3, 5, 8 or 12 candidates over :data:`~.parts.ANALYTES` (``a+b+c``, in
``ANALYTES`` order), every two at most 0.95 alike; each panel is an analyte with the analytes
most alike to it that keep the panel told apart (:func:`~.identify_parts.panel`), so that a
panel holds its anchor's nearest look-alikes. Levels (:data:`~.identify_parts.LEVEL`) set the
unknown's optical density, the matrix's, the matrix's band shift, the reader's noise and the
budget.

Hidden truth per seed: which candidate (uniform), its concentration (its optical density neat in
a 200 µL well, log-uniform in the level's range, by the library's ε and the nominal path), the
river water's humic matter (its optical density at 400 nm over the unknown's at its peak,
log-uniform in the level's range: a background sloping into the UV), the band shift the matrix
gives the unknown (N(0, σ²), σ by level, truncated at 2.5 sd), and the unknown's lot (a food
dye's ε factor and band shift, ``species.toml``). The matrix blank read beside the sample takes
the background off; a fit that lets the bands move finds the shift. The library's spectra read
once, unblanked and unshifted (:meth:`IdentifyTask.no_controls`), pick a candidate that matches
the matrix's slope.

Reward: 1 + ln(p)/ln(N) for the probability p given the true candidate, floored at 0 (the log
score, so that even odds score 0 and certainty on the right one 1), times the process rubric
(:data:`~.identify_parts.RUBRIC`: the matrix blank, the sample's spectrum read whole,
replicates, a reading in range), weight 0.6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, cast

import numpy as np
from typing_extensions import TypedDict

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.errors import OutOfRange
from labtools.instruments.plate_reader import MONOCHROMATOR_ABSORBANCE
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.simulators.families.identify_parts import (
    LEVEL,
    MATRIX,
    MATRIX_KEY,
    MATRIX_NM,
    RUBRIC,
    SHIFT_TRUNCATE,
    STATED_SHIFT_NM,
    IdentifyLevel,
    lot,
    moved,
    structures,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import HELD_OUT_SPECIES, analyte
from labtools.simulators.families.task import (
    SAMPLE,
    STOCK_UL,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    log_uniform,
    per_candidate_tool,
)
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.tool import Arg, tool
from labtools.units import Range, Wavelength, magnitude

__all__ = ["Identify", "IdentifyTask"]

#: submitted probabilities must add up to 1 within this [A: room for rounding to a few digits]
SUM_TOLERANCE = 0.01


@dataclass(frozen=True)
class IdentifyLimits:
    """Sane bounds of the task's tools: the library's spectra over the plate reader's
    wavelengths and steps (its monochromator's 230-1000 nm, 1-50 nm), probabilities 0-1."""

    wavelength: Range = MONOCHROMATOR_ABSORBANCE
    step: Range = Range(1.0, 50.0, "nanometer")
    probability: Range = Range(0.0, 1.0)


class Peak(TypedDict):
    wavelength_nm: float
    epsilon: float


class LibrarySpectra(TypedDict):
    """What ``library_spectra`` answers."""

    wavelengths: list[float]
    wavelength_unit: str
    epsilon_unit: str
    spectra: dict[str, list[float]]
    peaks: dict[str, Peak]


class IdentifyTask(FamilyTask):
    """One instance of :class:`Identify` (its class attributes set by :meth:`Identify.build`)."""

    rubric = RUBRIC
    limits = IdentifyLimits()
    level: ClassVar[IdentifyLevel]
    candidates: ClassVar[tuple[str, ...]]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, Any]:
        """The unknown (``candidate``), its concentration and the matrix's (µM), the matrix's
        band shift, the lot's ε factor and the whole shift from the library (nm) this seed
        drew (trainers and scoring only)."""
        world = lab.shared["world"]
        drawn = dict(world.hidden(f"task/{self.id}", self._draw))
        factor, lot_shift = lot(world.hidden_truth(), drawn["candidate"])
        drawn["epsilon_factor"] = factor
        drawn["shift_nm"] = lot_shift + drawn["matrix_shift_nm"]
        return drawn

    def _draw(self, rng: np.random.Generator) -> dict[str, Any]:
        key = self.candidates[int(rng.integers(len(self.candidates)))]
        od = log_uniform(rng, self.level.od)
        matrix_od = od * log_uniform(rng, self.level.interferent_ratio)
        shift = float(rng.standard_normal())
        while abs(shift) > SHIFT_TRUNCATE:
            shift = float(rng.standard_normal())
        path = nominal_path_cm(WELL_UL)
        humic = float(SpeciesLibrary.default()[MATRIX_KEY].absorptivity(MATRIX_NM))
        return {
            "candidate": key,
            "analyte_um": od / (analyte(key).epsilon * path) * 1e6,
            "matrix_um": matrix_od / (humic * path) * 1e6,
            "matrix_shift_nm": self.level.shift_nm * shift,
        }

    def prepare(self, lab: Lab, seed: int) -> None:
        """The unknown's lot moved by the matrix into the world's library (every other
        candidate as the library or its lot has it), the sample and the matrix blank into the
        reservoir, their labels on the deck."""
        world = lab.shared["world"]
        truth = self.truth(lab)
        library = SpeciesLibrary.default()
        hidden = world.hidden_truth()
        for key in self.candidates:
            if key == truth["candidate"]:
                world.species.put(moved(library[key], truth["epsilon_factor"], truth["shift_nm"]))
            elif f"batch/{key}" not in hidden:  # not drawn in lots: the library's own
                world.species.put(library[key])
        matrix = {MATRIX_KEY: truth["matrix_um"] * 1e-6}
        labels = {
            SAMPLE: "sample: an unknown in river water",
            MATRIX: "river water (the sample's matrix, without the unknown)",
        }
        world.fill(
            SAMPLE,
            Mixture.solution(STOCK_UL, {**matrix, truth["candidate"]: truth["analyte_um"] * 1e-6}),
            labels[SAMPLE],
        )
        world.fill(MATRIX, Mixture.solution(STOCK_UL, matrix), labels[MATRIX])
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(labels)

    def statement(self, lab: Lab) -> str:
        library = SpeciesLibrary.default()
        names = "; ".join(f"{library[k].name} ({k})" for k in self.candidates)
        count = len(self.candidates)
        return (
            f"The container {SAMPLE} ('sample') holds one of these {count} species, in river "
            f"water: {names}. {MATRIX} holds the same river water without it (the sample's "
            f"matrix; it may absorb too). No standard of any candidate is on the deck: "
            "library_spectra gives each candidate's molar absorptivity as the species library "
            "has it (the literature's); the sample's own lot, and its matrix, may move its "
            f"bands by up to about {STATED_SHIFT_NM} nm and change its ε by a few per cent. "
            f"Water at {WATER}, a waste trough at {WASTE}. lh_get_deck shows the deck: two "
            "96-well plates, tip racks, the plate reader and a spectrometer. Find which "
            "candidate the sample holds: submit once with submit_identify a probability for "
            "every candidate, by its key, adding up to 1. Reward: 1 + ln(p)/ln("
            f"{count}) for the probability p you gave the right one, floored at 0 (even odds "
            "score 0, certainty on the right one 1), times how sound the experiment was (the "
            "matrix read alone as a blank, the sample's spectrum read whole, sample "
            "replicates, a sample reading within 0.1-2.0 OD)."
        )

    @tool(name="library_spectra", read_only=True)
    async def library_spectra(
        self,
        candidates: Annotated[
            Sequence[str], Arg("Candidate keys (every candidate if the list is empty).")
        ],
        start: Annotated[Wavelength, Arg("First wavelength.", within="wavelength")],
        stop: Annotated[Wavelength, Arg("Last wavelength (inclusive).", within="wavelength")],
        step: Annotated[Wavelength, Arg("Wavelength step.", within="step")],
    ) -> LibrarySpectra:
        """The species library's molar absorptivity (M⁻¹ cm⁻¹) of candidates, as the
        literature gives it (no lot's, no matrix's), and each one's maximum within the
        wavelengths asked for."""
        keys = list(candidates) or list(self.candidates)
        for i, key in enumerate(keys):
            if key not in self.candidates:
                raise OutOfRange(
                    f"{str(key)[:40]!r} is not a candidate",
                    field=f"/candidates/{i}",
                    hint=f"candidates: {', '.join(self.candidates)}",
                )
        low, high = magnitude(start, "nanometer"), magnitude(stop, "nanometer")
        by = magnitude(step, "nanometer")
        if high < low:
            raise OutOfRange("stop lies below start", field="/stop", hint="give stop ≥ start")
        count = int((high - low) / by + 1e-9) + 1
        if count * len(keys) > 12_000:
            raise OutOfRange(
                f"{count} wavelengths × {len(keys)} candidates is too many",
                field="/step",
                hint="ask for fewer candidates, a larger step or a narrower range",
            )
        grid = np.array([round(low + i * by, 6) for i in range(count)])
        library = SpeciesLibrary.default()
        spectra, peaks = {}, {}
        for key in keys:
            values = np.asarray(library[key].absorptivity(grid), dtype=float)
            spectra[key] = [float(f"{v:.5g}") for v in values]
            best = int(np.argmax(values))
            peaks[key] = Peak(wavelength_nm=float(grid[best]), epsilon=float(f"{values[best]:.5g}"))
        return LibrarySpectra(
            wavelengths=[float(x) for x in grid],
            wavelength_unit="nm",
            epsilon_unit="M^-1 cm^-1",
            spectra=spectra,
            peaks=peaks,
        )

    async def take(self, given: Mapping[str, float]) -> Submitted:
        """What every instance's ``submit_identify`` does with its candidates' probabilities
        (the schema checks each is within 0-1, every candidate given): they must add up to 1."""
        values = {k: float(given[k]) for k in self.candidates}
        total = sum(values.values())
        if not (math.isfinite(total) and abs(total - 1.0) <= SUM_TOLERANCE):
            raise OutOfRange(
                f"the probabilities add up to {total:.4g}, not 1",
                field="/probabilities",
                hint=f"give every candidate a probability, together 1 (±{SUM_TOLERANCE:g})",
            )
        self.submission = {k: v / total for k, v in values.items()}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        p = float(self.submission[self.truth(lab)["candidate"]])
        log_score = math.log(p) / math.log(len(self.candidates)) if p > 0 else -math.inf
        ranked = sorted(self.submission.values(), reverse=True)
        return {
            "raw": max(0.0, 1.0 + log_score),
            "probability": p,
            "right": float(p == ranked[0] and (len(ranked) == 1 or ranked[1] < p)),
        }

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.identify_expert.identify` (survey, matrix-blanked replicates, each
        candidate's evidence with its bands free to move)."""
        from labtools.simulators.families.identify_expert import identify

        found = identify(
            caller(session), self.candidates, sample=SAMPLE, matrix=MATRIX, water=WATER
        )
        self._submit(session, found)

    def naive(self, session: Session) -> None:
        """The sample read neat, unblanked, at each candidate's library peak: the candidate
        whose reading is largest per library ε is it, for certain."""
        from labtools.simulators.families.identify_expert import references
        from labtools.simulators.tasks.scripting import batch, nm

        call = caller(session)
        refs = references(call, self.candidates)
        call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", WELL_UL)], "new", channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        per_epsilon = {}
        for key, ref in refs.items():
            data = call(
                "reader_read_absorbance", plate="plate_1", wavelength=nm(ref.peak_nm), wells=["A1"]
            )
            value = data["values"].get("A1")
            per_epsilon[key] = (4.0 if value is None else float(value)) / ref.peak_epsilon
        best = max(self.candidates, key=lambda k: per_epsilon[k])
        self._submit(session, {k: float(k == best) for k in self.candidates})

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; even odds (the prior the statement gives)."""
        self._submit(session, {k: 1.0 / len(self.candidates) for k in self.candidates})

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; certainty on the candidate the library says absorbs most (the
        likeliest to be the colour seen)."""
        from labtools.simulators.families.identify_expert import references

        refs = references(caller(session), self.candidates)
        best = max(self.candidates, key=lambda k: refs[k].peak_epsilon)
        self._submit(session, {k: float(k == best) for k in self.candidates})

    def no_controls(self, session: Session) -> None:
        """Shortcut: the sample read once neat over the plate's range, the nominal plate's OD
        taken off, matched to each candidate's library spectrum as it stands (no shift) with an
        amplitude and a constant; the probabilities from the residuals with the reader's
        nominal noise. No matrix blank or replicate."""
        from labtools.simulators.families.identify_expert import library_match, references
        from labtools.simulators.families.protocol import GRID_NM
        from labtools.simulators.published import published
        from labtools.simulators.tasks.scripting import one_reading

        call = caller(session)
        refs = references(call, self.candidates)
        spectrum = one_reading(call, [(SAMPLE, "plate_1:A1", WELL_UL)], GRID_NM)
        noise = float(published()["reader.absorbance.noise_floor"].expected)
        self._submit(session, library_match(spectrum, refs, noise))

    def _submit(self, session: Session, found: Mapping[str, float]) -> None:
        values = {k: max(float(found.get(k, 0.0)), 0.0) for k in self.candidates}
        total = sum(values.values()) or 1.0
        caller(session)(
            "submit_identify",
            probabilities={k: round(v / total, 6) for k, v in values.items()},
        )


class Identify(LevelledFamily):
    """Which candidate a sample holds, from the library's spectra (:mod:`.identify`)."""

    id = "identify"
    title = "Identify a sample's species among candidates from the library's spectra alone"
    task = IdentifyTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return bool(HELD_OUT_SPECIES & set(structure.split("+")))

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        keys = tuple(structure.split("+"))
        return {
            "title": f"Which of {len(keys)} species a sample holds, from the library's spectra",
            "candidates": keys,
            "submit": _submit_tool(keys),
        }


def _submit_tool(keys: tuple[str, ...]) -> Any:
    """The ``submit_identify`` tool of a panel: one probability per candidate."""

    async def submit(self: IdentifyTask, probabilities: Any) -> Submitted:
        """Submit each candidate's probability of being the sample's species. Ends the
        episode."""
        return await self.take(cast("Mapping[str, float]", probabilities))

    described = Arg(
        "Each candidate's probability, by its key; together they add up to 1.",
        within="probability",
    )
    return per_candidate_tool("submit_identify", submit, "probabilities", keys, float, described)
