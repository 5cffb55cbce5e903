"""The ``fluorimetry`` family: how much of a fluorophore a sample holds, measured by its
fluorescence, with its uncertainty, against a certified standard of the fluorophore, the sample
coloured by a second species that absorbs its light and does not fluoresce.

Structures: ``<fluorophore>+<matrix>`` (:func:`~.fluorimetry_parts.structures`: nine
fluorophores, each with the analytes that absorb at its excitation or emission). Levels
(:data:`~.fluorimetry_parts.LEVEL`) set the sample's signal (from past the detector's ceiling,
where it must be diluted and its own inner filter bends its reading, down to a few times the
plate's autofluorescence), the matrix's inner filter (a few per cent of the light at level 1,
most of it at 5), the reader's noise floor and the budget.

Hidden truth per seed: the sample's concentration (its nominal signal neat log-uniform in the
level's range, by the library's ε and quantum yield and the published reader), the matrix's
(its optical density at the excitation plus the emission neat in a 200 µL well, log-uniform in
the level's range), the standard's real concentration (its label ±1 %), the fluorophore's lot
(ε and quantum yield, :data:`~.fluorimetry_parts.LOT`, shared by the sample and its standard),
the reader's fluorescence scale (±10 %) and autofluorescence floor (10-30 RFU), and the plates'
paths. A standard read beside the sample calibrates the lot and the reader; only a standard
added to the sample itself (or a sample diluted until its matrix no longer filters) calibrates
the matrix's inner filter: a standard curve in water reads a filtered sample low.

Reward: :class:`~.quantify.QuantifyTask`'s (``submit_quantify``: exp(−CRPS(N(ĉ, σ̂²), c) /
(0.05 c))), times the process rubric (:data:`~.fluorimetry_parts.RUBRIC`: a blank, standard
additions, sample replicates, the standard read alone), weight 0.6.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session
from labtools.simulators.families.fluorimetry_parts import (
    LEVEL,
    LOT,
    RUBRIC,
    STANDARD,
    FluorimetryLevel,
    matrix_od,
    nominal_rfu_per_um,
    of_lot,
    optics,
    structures,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import HELD_OUT_PAIRS, HELD_OUT_SPECIES, analyte
from labtools.simulators.families.quantify import QuantifyTask
from labtools.simulators.families.task import (
    SAMPLE,
    STANDARD_TOLERANCE,
    STOCK_UL,
    WASTE,
    WATER,
    WELL_UL,
    log_uniform,
)
from labtools.simulators.tasks.offers import ENDPOINT, FLUORESCENCE, LIQUID
from labtools.simulators.tasks.scripting import batch, caller, nm, nominal_path_cm
from labtools.simulators.world import Mixture, SpeciesLibrary

__all__ = ["Fluorimetry", "FluorimetryTask", "standard_label_um"]

#: a standard reads about this signal diluted 1 in 100 in a 200 µL well (nominal RFU) [A: a
#: decade above the highest in-well signal the expert aims for, so that its additions are made
#: from a dilution of it]
STANDARD_RFU = 2e4
#: the reader's autofluorescence floor as the package gives it (RFU): the published prior's
#: middle [C: uniform 10-30 RFU]
NOMINAL_BACKGROUND = 20.0


def standard_label_um(key: str) -> float:
    """The certified standard's label (µM, two significant figures): reads about
    :data:`STANDARD_RFU` diluted 1 in 100 (nominal)."""
    return float(f"{100.0 * STANDARD_RFU / nominal_rfu_per_um(key):.2g}")


class FluorimetryTask(QuantifyTask):
    """One instance of :class:`Fluorimetry` (its class attributes set by
    :meth:`Fluorimetry.build`): quantify's submission and score, a fluorophore in a matrix."""

    lab_tools = LIQUID | ENDPOINT | FLUORESCENCE

    rubric = RUBRIC
    level: ClassVar[FluorimetryLevel]
    matrix_key: ClassVar[str]

    noisier = ("reader.fluorescence.noise_floor",)

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The sample's fluorophore and matrix (µM) and the lot's ε and quantum-yield factors
        this seed drew (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        signal = log_uniform(rng, self.level.signal)
        filtering = log_uniform(rng, self.level.filter_od)
        epsilon_factor, yield_factor = LOT.draw(rng)
        per_molar = matrix_od(self.analyte_key, self.matrix_key) * nominal_path_cm(WELL_UL)
        return {
            "analyte_um": signal / nominal_rfu_per_um(self.analyte_key),
            "matrix_um": filtering / per_molar * 1e6,
            "epsilon_factor": epsilon_factor,
            "yield_factor": yield_factor,
        }

    def prepare(self, lab: Lab, seed: int) -> None:
        """The fluorophore's lot into the world's library, its certified standard and the
        sample into the reservoir, their labels on the deck."""
        world = lab.shared["world"]
        truth = self.truth(lab)
        library = SpeciesLibrary.default()
        key = self.analyte_key
        world.species.put(of_lot(library[key], truth["epsilon_factor"], truth["yield_factor"]))
        label_um = standard_label_um(key)
        name = analyte(key).name
        world.fill_stock(
            {
                "well": STANDARD,
                "species": key,
                "concentration_uM": label_um,
                "volume_ul": STOCK_UL,
                "tolerance": STANDARD_TOLERANCE,
                "label": f"{name} standard {label_um:g} µM ±1 %",
            }
        )
        sample = {key: truth["analyte_um"] * 1e-6, self.matrix_key: truth["matrix_um"] * 1e-6}
        world.fill(SAMPLE, Mixture.solution(STOCK_UL, sample), "sample")
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update({c: world.labels[c] for c in (STANDARD, SAMPLE)})

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        a, m = analyte(self.analyte_key), analyte(self.matrix_key)
        ex, em = optics(self.analyte_key)
        return (
            f"The container {SAMPLE} ('sample') holds {a.name} at an unknown concentration in "
            f"water coloured by {m.name}, which absorbs light but does not fluoresce. A "
            f"certified standard of {a.name} is at {STANDARD} ('{labels[STANDARD]}'); water at "
            f"{WATER}, a waste trough at {WASTE}. lh_get_deck shows the deck: two 96-well "
            "plates, tip racks, the plate reader and a spectrometer. Measure by fluorescence "
            f"(reader_read_fluorescence; {a.name} is excited at {ex} nm and emits at {em} nm, "
            "the library's maxima). Determine the concentration of "
            f"{a.name} in the sample and its standard uncertainty (one standard deviation, "
            "everything included). Submit once with submit_quantify. Reward: the continuous "
            "ranked probability score of a normal distribution with your concentration and "
            "uncertainty against the true concentration, on a scale of 5 % of it, times how "
            "sound the experiment was (a blank, the standard added to the sample itself at "
            "several levels, sample replicates, the standard read alone)."
        )

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.fluorimetry_expert.fluorimetry` (survey, standard additions to the diluted
        sample)."""
        from labtools.simulators.families.fluorimetry_expert import fluorimetry

        estimate, sd = fluorimetry(
            caller(session), key=self.analyte_key, standard=STANDARD, sample=SAMPLE, water=WATER
        )
        self._submit(session, estimate, sd)

    def naive(self, session: Session) -> None:
        """The sample read once neat, unblanked, in fluorescein equivalents (the reader's
        nominal 200 RFU per nM of fluorescein, whatever the fluorophore); a made-up 10 %."""
        rfu = _read_once(session, self.analyte_key)
        guess = rfu / nominal_rfu_per_um("fluorescein")
        self._submit(session, guess, 0.1 * guess)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a thousandth of the standard's label, ± that much."""
        from labtools.demo.labels import label_micromolar

        label = caller(session)("lh_get_deck")["labels"][STANDARD]
        guess = label_micromolar(label) / 1000.0
        self._submit(session, guess, guess)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the level's signals converted with the library's ε and
        quantum yield and the nominal reader: the prior's log-centre, and its spread."""
        low, high = (s / nominal_rfu_per_um(self.analyte_key) for s in self.level.signal)
        self._submit(session, math.sqrt(low * high), (high - low) / math.sqrt(12.0))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the sample read once neat at the reader's own gain, the nominal
        autofluorescence floor taken off, converted with the library's ε, quantum yield and
        emission and the published reader's calibration and geometry; no standard, blank or
        replicate; a few per cent as its uncertainty."""
        rfu = _read_once(session, self.analyte_key) - NOMINAL_BACKGROUND
        guess = max(rfu, 0.0) / nominal_rfu_per_um(self.analyte_key)
        self._submit(session, guess, 0.03 * guess)

    def water_curve(self, session: Session) -> None:
        """Shortcut (not tabulated): the expert's experiment with its additions made to water
        instead of the sample: a standard curve in water, blind to the matrix's inner filter."""
        from labtools.simulators.families.fluorimetry_expert import fluorimetry

        estimate, sd = fluorimetry(
            caller(session),
            key=self.analyte_key,
            standard=STANDARD,
            sample=SAMPLE,
            water=WATER,
            in_water=True,
        )
        self._submit(session, estimate, sd)


def _read_once(session: Session, key: str) -> float:
    """The sample neat in plate_1:A1 (one tip), read once at the library's maxima at the
    reader's own gain (RFU; the detector's ceiling where it saturates)."""
    from labtools.simulators.plate_reading.params import ReaderConstants

    call = caller(session)
    ex, em = optics(key)
    call("lh_transfer", **batch([(SAMPLE, "plate_1:A1", WELL_UL)], "new", channels=[0]))
    call("lh_move_plate", plate="plate_1", destination="reader")
    data = call(
        "reader_read_fluorescence",
        plate="plate_1",
        wells=["A1"],
        excitation_wavelength=nm(ex),
        emission_wavelength=nm(em),
        gain=0,
        focal_height={"value": 0, "unit": "millimeter"},
    )
    value = data["values"].get("A1")
    return float(ReaderConstants().rfu_ceiling if value is None else value)


class Fluorimetry(LevelledFamily):
    """A fluorophore's concentration in a coloured sample by fluorescence
    (:mod:`.fluorimetry`)."""

    id = "fluorimetry"
    title = "Quantify a fluorophore in a coloured sample by its fluorescence, with its uncertainty"
    task = FluorimetryTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        keys = structure.split("+")
        if HELD_OUT_SPECIES & set(keys):
            return True
        return frozenset(analyte(k).kind for k in keys) in HELD_OUT_PAIRS

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        key, matrix = structure.split("+")
        return {
            "title": f"Quantify {analyte(key).name} by fluorescence in {analyte(matrix).name}",
            "analyte_key": key,
            "interferent_key": None,
            "matrix_key": matrix,
        }
