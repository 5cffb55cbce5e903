"""The ``cuvette`` family: one analyte's concentration in a sample, with its uncertainty, by
absorbance in the spectrometer's 1 cm cuvette (not the plate reader) against a certified
standard.

The question is the instrument's workflow and physics: the liquid handler fills and empties the
cuvette (its beam covered from 700 µL; 20 µL stays behind when it is emptied), the spectrometer
needs an integration time (the CCD saturates above its full scale, read noise drowns a short
exposure), a dark and a water reference at that time; a sample far over the cuvette's range
reads through stray light and a starved detector, and must be diluted into range.

Structures: ``<analyte>`` over :data:`~.parts.ANALYTES` (each with its band in the lamp's
weaker blue or its bright red). Levels (:data:`~.cuvette_parts.LEVEL`) set the sample's optical
density neat over 1 cm (from near the top of the range to a hundred times over it), the
detector's noise and the budget.

Hidden truth per seed: the sample's concentration (log-uniform in the level's range, set by the
library's ε over 1 cm), the standard's real concentration (its label ±1 %, 1 sd), the analyte
lot's ε and band position (``species.toml``: 3 % for most food dyes, none for the others) and
its content per labelled mole (N(1, 5 %²) truncated at 2.5 sd, stability's
:data:`~.stability_parts.CONTENT_SD`, for every analyte), the spectrometer unit's wavelength
error and stray light (``published_profile.toml``). The sample and its standard share
a lot: a standard measured beside the sample calibrates ε, stray light and the wavelength scale
at once; the library's ε (:meth:`CuvetteTask.no_controls`) does not.

Submission and scoring are quantify's (:class:`~.quantify.QuantifyTask`: ``submit_quantify``,
raw = exp(−CRPS / (0.05 c))), times this family's process rubric
(:func:`~.cuvette_parts.rubric`), weight 0.6.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labtools.lab import Lab
from labtools.session import Session, Task
from labtools.simulators.families.cuvette_parts import CUVETTE, LEVEL, rubric
from labtools.simulators.families.identify_parts import lot
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.quantify import STANDARD, QuantifyTask
from labtools.simulators.families.stability_parts import CONTENT_SD, CONTENT_TRUNCATE
from labtools.simulators.families.task import SAMPLE, WASTE, WATER, log_uniform
from labtools.simulators.profile import Parameter
from labtools.simulators.published import detector_key, load_profile
from labtools.simulators.tasks.offers import LIQUID, SPECTROMETER
from labtools.simulators.tasks.scripting import batch, caller
from labtools.simulators.world import SpeciesLibrary

__all__ = ["Cuvette", "CuvetteTask"]

#: the spectrometer of the family's lab (its default model)
MODEL = "FLAME-S"
#: the cuvette's path, cm, as the package gives it (:class:`~labtools.simulators.spectrometer.
#: cuvette.Cuvette`) [L: a standard 10 mm cuvette]
PATH_CM = 1.0
#: what the shortcuts fill the cuvette with (µL): the beam covered, with room [A]
FILL_UL = 1000.0
#: the spectrometer's power-up integration time (ms), as the shortcuts leave it [A: the
#: Flame-S profile's default, spectrometer.toml]
DEFAULT_MS = 10.0


def _level(number: int) -> Level:
    """The family's level as the shared :class:`~.levels.Level` (no second absorber)."""
    own = LEVEL[number]
    return Level(number, own.od, (0.0, 0.0), own.noise, own.budget)


class CuvetteTask(QuantifyTask):
    """One instance of :class:`Cuvette` (its class attributes set by :meth:`Cuvette.build`)."""

    lab_tools = LIQUID | SPECTROMETER

    interferent_key = None

    def build_lab(self, seed: int = 0, profile: Any = None) -> Lab:
        """The family's lab, its spectrometer's noise raised by the level's factor (dark noise
        times it, S:N at full signal divided by it: every count's noise scales alike)."""
        base = load_profile(profile)
        factor = self.level.noise
        dark, snr = (detector_key(MODEL, f) for f in ("dark_noise", "snr_full_signal"))
        values = {
            dark: base.expected(dark) * factor,
            snr: base.expected(snr) / factor,
        }
        noisier = {
            key: Parameter(key, base[key].unit, value, source=f"level {self.level.number}")
            for key, value in values.items()
        }
        return Task.build_lab(self, seed, base.with_values(noisier))

    # -- the hidden world ----------------------------------------------------------------------
    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        a = analyte(self.analyte_key)
        od = log_uniform(rng, self.level.od)
        z = float(rng.standard_normal())
        while abs(z) > CONTENT_TRUNCATE:
            z = float(rng.standard_normal())
        return {"analyte_um": od / (a.epsilon * PATH_CM) * 1e6, "content": 1.0 + CONTENT_SD * z}

    def prepare(self, lab: Lab, seed: int) -> None:
        """The analyte's lot (its batch's ε times its content, as stability's) into the world's
        library; the standard and the sample, both of that lot, into the reservoir."""
        truth = self.truth(lab)
        world = lab.shared["world"]
        factor, shift = lot(world.hidden_truth(), self.analyte_key)
        base = SpeciesLibrary.default()[self.analyte_key]
        world.species.put(base.batch_of(factor * truth["content"], shift))
        self.fill_reservoir(
            lab, {STANDARD: self.analyte_key}, {self.analyte_key: truth["analyte_um"] * 1e-6}
        )

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        a = analyte(self.analyte_key)
        return (
            f"The container {SAMPLE} ('sample') holds {a.name} in water at an unknown "
            f"concentration. A certified standard of {a.name} is at {STANDARD} "
            f"('{labels[STANDARD]}'); water at {WATER}, a waste trough at {WASTE}. Measure with "
            "the spectrometer (spec_* tools), which reads the 1 cm cuvette the liquid handler "
            "fills and empties (lh_transfer to and from 'cuvette'; lh_get_deck shows the deck). "
            f"Determine the concentration of {a.name} in the sample and its standard "
            "uncertainty (one standard deviation, everything included). Submit once with "
            "submit_quantify. Reward: the continuous ranked probability score of a normal "
            "distribution with your concentration and uncertainty against the true "
            "concentration, on a scale of 5 % of it, times how sound the experiment was "
            "(a dark and a water reference, the standard measured alone, standard levels, "
            "replicate fillings, the sample between standards)."
        )

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.cuvette_expert.cuvette` (integration time, dark, reference, survey,
        standards, replicates)."""
        from labtools.simulators.families.cuvette_expert import cuvette

        estimate, sd = cuvette(
            caller(session),
            standard=STANDARD,
            sample=SAMPLE,
            water=WATER,
            waste=WASTE,
            peak_nm=analyte(self.analyte_key).peak_nm,
            epsilon=analyte(self.analyte_key).epsilon,
        )
        self._submit(session, estimate, sd)

    def naive(self, session: Session) -> None:
        """The sample measured neat against the empty cuvette (no water reference), at the
        power-up integration time, one scan; the library's ε over 1 cm; a made-up 10 %."""
        guess = _neat_um(session, self.analyte_key, water_reference=False)
        self._submit(session, guess, 0.1 * guess)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the level's optical densities converted with the library's ε
        over 1 cm: the prior's log-centre, and its spread."""
        a = analyte(self.analyte_key)
        low, high = (od / (a.epsilon * PATH_CM) * 1e6 for od in self.level.od)
        self._submit(session, math.sqrt(low * high), (high - low) / math.sqrt(12.0))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the sample measured once neat at the power-up integration time (one scan,
        against the dark and water reference the tool needs), its peak converted with the
        library's ε over 1 cm; no standard, dilution or replicate; the library's few per cent
        as its uncertainty."""
        guess = _neat_um(session, self.analyte_key, water_reference=True)
        self._submit(session, guess, 0.03 * guess)


def _neat_um(session: Session, key: str, *, water_reference: bool) -> float:
    """The sample neat in the cuvette, read once at the power-up time against a dark and a
    reference (the cuvette with water, or empty), at the library's peak (the compact bin
    nearest it), converted with the library's ε over 1 cm (µM; 0 when nothing could be
    read)."""
    call = caller(session)
    a = analyte(key)

    def move(source: str, destination: str, volume: float) -> None:
        moves = [(source, destination, volume)]
        call("lh_transfer", **batch(moves, "new", tip_rack="tips_1000ul", channels=[0]))

    call("spec_set_integration_time", time={"value": DEFAULT_MS, "unit": "millisecond"})
    call("spec_acquire_dark", scans=1)
    if water_reference:
        move(WATER, CUVETTE, FILL_UL)
        call("spec_acquire_reference", scans=1)
        move(CUVETTE, WASTE, FILL_UL - 20.0)
    else:
        call("spec_acquire_reference", scans=1)
    move(SAMPLE, CUVETTE, FILL_UL)
    result = call("spec_measure_absorbance", scans=1)
    grid, values = result["wavelengths"], result["absorbance"]
    peak = values[min(range(len(grid)), key=lambda i: abs(grid[i] - a.peak_nm))]
    if peak is None:  # masked at the peak (opaque): the highest value it did read
        finite = [v for v in values if v is not None]
        peak = max(finite) if finite else 0.0
    return max(float(peak), 0.0) / (a.epsilon * PATH_CM) * 1e6


class Cuvette(LevelledFamily):
    """One analyte's concentration in the spectrometer's cuvette (:mod:`.cuvette`)."""

    id = "cuvette"
    title = "Quantify an analyte in the spectrometer's cuvette against a certified standard"
    task = CuvetteTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(ANALYTES)

    def held_out(self, structure: str) -> bool:
        """The shared held-out species (:data:`~.parts.HELD_OUT_SPECIES`)."""
        return structure in HELD_OUT_SPECIES

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        a = analyte(structure)
        return {
            "title": f"Quantify {a.name} in the cuvette",
            "level": _level(level),
            "analyte_key": structure,
            "rubric": rubric(standard=STANDARD, sample=SAMPLE, water=WATER, peak_nm=a.peak_nm),
        }
