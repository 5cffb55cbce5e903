"""The ``wide_range`` family: the concentration of a reduced cofactor (or FMN) in each of four
or six samples that span up to four decades, each with its uncertainty, where no one read mode
covers them all.

Absorbance at the cofactor's peak (NADH's 340 nm) is accurate for the concentrated samples
only (the reader's 0.1-2.0 OD window, over its ~0.001 OD floor; diluted above it); fluorescence
(NADH excited at 340 nm, read at 460 nm) reaches the faint ones but bends under the cofactor's
own inner filter long before the absorbance window opens, and its scale is the reader's and
the lot's. The skill: choosing the mode (and the dilution) per sample and calibrating each mode
in its own read: an absorbance standard series for ε × path, a fluorescence standard series for
the gain, blanks for both.

Structures: ``<cofactor>+<n>+<spread>+<matrix>`` (:mod:`.wide_range_parts`): NADH, NADPH or
FMN; four or six samples; spread evenly over the level's span or at its two ends; in water or
with NAD+ (a decoy: it reads at neither wavelength). Levels (:data:`~.wide_range_parts.LEVEL`)
widen the span (fainter faint samples, brighter bright ones), raise the reader's noise and cut
the budget. FMN's structures are the ``test-ood`` split's only.

Hidden truth per seed: the samples' concentrations (their optical densities neat, library ε
and nominal path, spread over the level's span as the structure says), NAD+'s, the standard's
real concentration (its label ±1 %), the cofactor's lot (ε and quantum yield,
:data:`~.wide_range_parts.LOT`, shared by the samples and the standard), the reader's
fluorescence scale (±10 %), autofluorescence floor (10-30 RFU), zero offset and gain, and the
plates' paths and defect wells. The standard read beside the samples in each mode calibrates
both; the library's ε and the nominal path (:meth:`WideRangeTask.no_controls`) miss the lot,
and no absorbance reading sees the faint samples.

Reward: raw = exp(−mean CRPS / :data:`SCALE`), the mean over the samples of the continuous
ranked probability score (:func:`~labtools.simulators.tasks.standard_curve.crps_normal`) of a
normal in ln c, centred on the stated concentration's logarithm with the stated relative
uncertainty as its sd, against the true concentration's logarithm; times the process rubric
(a blank, absorbance and fluorescence standard levels, sample duplicates), weight 0.6.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.simulators.families.estimates import (
    checked_estimates,
    estimates_tool,
    log_crps_score,
    sample_names,
    submission,
)
from labtools.simulators.families.fluorimetry_parts import of_lot, optics
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import (
    STOCK_UL,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    log_uniform,
    standard,
)
from labtools.simulators.families.wide_range_parts import (
    LEVEL,
    LOT,
    MATRIX_UM,
    SAMPLE_SLOTS,
    STANDARD,
    WideRangeLevel,
    held_out,
    parse,
    rubric,
    structures,
)
from labtools.simulators.tasks.offers import ENDPOINT, FLUORESCENCE, LIQUID
from labtools.simulators.tasks.scripting import (
    batch,
    caller,
    nm,
    nominal_path_cm,
    nominal_plate_od,
)
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.units import Range

__all__ = ["SCALE", "WideRange", "WideRangeTask"]

#: the score's scale on ln c [A: a sample honestly within 3 % keeps ~0.9 of its term; a sample
#: off by a factor 2 costs the whole outcome most of its worth]
SCALE = 0.1
#: an absorbance reading at or below 0 is taken at this (OD) by the shortcuts that convert one:
#: the reader's noise floor [A]
FLOOR_OD = 0.001


@dataclass(frozen=True)
class WideRangeLimits:
    """Sane bounds of a submission (each concentration > 0: its logarithm is scored)."""

    concentration: Range = Range(0.0, 10.0, "molar")


class WideRangeTask(FamilyTask):
    """One instance of :class:`WideRange` (its class attributes set by :meth:`WideRange.build`)."""

    lab_tools = LIQUID | ENDPOINT | FLUORESCENCE

    limits = WideRangeLimits()
    level: ClassVar[WideRangeLevel]
    analyte_key: ClassVar[str]
    count: ClassVar[int]
    spread: ClassVar[str]
    matrix_key: ClassVar[str | None]

    noisier = ("reader.fluorescence.noise_floor",)

    def samples(self) -> tuple[str, ...]:
        """The samples' containers, in order."""
        return SAMPLE_SLOTS[: self.count]

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """Each sample's cofactor (µM, ``sample_i_um``), NAD+ (µM, where present) and the lot's
        ε and quantum-yield factors this seed drew (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        low, high = self.level.od
        if self.spread == "even":
            edges = np.linspace(math.log(low), math.log(high), self.count + 1)
            ods = [math.exp(rng.uniform(a, b)) for a, b in itertools.pairwise(edges)]
        else:
            half = self.count // 2
            ods = [log_uniform(rng, (low, 10.0 * low)) for _ in range(half)]
            ods += [log_uniform(rng, (high / 10.0, high)) for _ in range(self.count - half)]
        order = rng.permutation(self.count)
        per_um = analyte(self.analyte_key).epsilon * nominal_path_cm(WELL_UL) * 1e-6
        out = {
            f"{n}_um": ods[int(j)] / per_um
            for n, j in zip(sample_names(self.count), order, strict=True)
        }
        epsilon_factor, yield_factor = LOT.draw(rng)
        out["epsilon_factor"], out["yield_factor"] = epsilon_factor, yield_factor
        out["matrix_um"] = log_uniform(rng, MATRIX_UM) if self.matrix_key else 0.0
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The cofactor's lot into the world's library; its certified standard and the samples
        into the reservoir, their labels on the deck."""
        world = lab.shared["world"]
        truth = self.truth(lab)
        key = self.analyte_key
        world.species.put(
            of_lot(SpeciesLibrary.default()[key], truth["epsilon_factor"], truth["yield_factor"])
        )
        world.fill_stock(standard(STANDARD, key))
        for name, container in zip(sample_names(self.count), self.samples(), strict=True):
            content = {key: truth[f"{name}_um"] * 1e-6}
            if self.matrix_key:
                content[self.matrix_key] = truth["matrix_um"] * 1e-6
            world.fill(container, Mixture.solution(STOCK_UL, content), name.replace("_", " "))
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update({c: world.labels[c] for c in (STANDARD, *self.samples())})

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        a = analyte(self.analyte_key)
        ex, em = optics(self.analyte_key)
        first, last = self.samples()[0], self.samples()[-1]
        also = ""
        if self.matrix_key:
            also = f" Every sample also holds {analyte_name(self.matrix_key)}."
        keys = ", ".join(sample_names(self.count))
        return (
            f"The reservoir holds {self.count} samples of {a.name} in water ({first} to {last}: "
            f"'sample 1' to 'sample {self.count}'), at unknown concentrations that may differ "
            f"by several orders of magnitude.{also} A certified standard of {a.name} is at "
            f"{STANDARD} ('{labels[STANDARD]}'); water at {WATER}, a waste trough at {WASTE}. "
            "lh_get_deck shows the deck: two 96-well plates, tip racks, the plate reader and a "
            f"spectrometer. {a.name} absorbs at {a.peak_nm:g} nm (reader_read_absorbance) and "
            f"fluoresces (reader_read_fluorescence: excited at {ex} nm, emitting at {em} nm, the "
            "library's maxima). Determine the concentration of "
            f"{a.name} in each sample and its standard uncertainty (one standard deviation, "
            f"everything included). Submit once with submit_wide_range, by sample ({keys}). "
            f"Reward: exp(-CRPS / {SCALE}), the CRPS the mean over the samples of the "
            "continuous ranked probability score of a normal distribution of the logarithm, "
            "centred on your concentration's with your relative uncertainty as its sd, against "
            "the true concentration's logarithm; times how sound the experiment was (a blank, "
            "standard levels read by absorbance and by fluorescence, each sample in two wells)."
        )

    async def take(
        self, concentrations: Mapping[str, Any], uncertainties: Mapping[str, Any]
    ) -> Submitted:
        """Check and keep a submission: per sample a concentration > 0 and an uncertainty ≥ 0
        (µM)."""
        values, spreads = checked_estimates(
            concentrations, uncertainties, sample_names(self.count), "micromolar"
        )
        self.submission = {"concentrations_um": values, "uncertainties_um": spreads}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        return log_crps_score(
            self.submission["concentrations_um"],
            self.submission["uncertainties_um"],
            {name: truth[f"{name}_um"] for name in sample_names(self.count)},
            SCALE,
        )

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.wide_range_expert.wide_range` (a survey in both modes, then each sample by
        the mode that suits it against that mode's standard series)."""
        from labtools.simulators.families.wide_range_expert import wide_range

        found = wide_range(
            caller(session),
            key=self.analyte_key,
            standard=STANDARD,
            samples=list(self.samples()),
            water=WATER,
        )
        self._submit(session, [f[0] for f in found], [f[1] for f in found])

    def naive(self, session: Session) -> None:
        """Each sample read once neat at the library's peak, unblanked, with the library's ε
        and a 1 cm path; a made-up 10 % uncertainty."""
        ods = self._read_neat(session)
        per_um = analyte(self.analyte_key).epsilon * 1e-6
        guesses = [max(od, FLOOR_OD) / per_um for od in ods]
        self._submit(session, guesses, [0.1 * g for g in guesses])

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; every sample at a hundredth of the standard's label, ± that
        much."""
        from labtools.demo.labels import label_micromolar

        guess = label_micromolar(caller(session)("lh_get_deck")["labels"][STANDARD]) / 100.0
        self._submit(session, [guess] * self.count, [guess] * self.count)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; every sample at the log-centre of the level's optical
        densities, converted with the library's ε over the nominal path, and their spread."""
        per_um = analyte(self.analyte_key).epsilon * nominal_path_cm(WELL_UL) * 1e-6
        low, high = (od / per_um for od in self.level.od)
        centre, sd = math.sqrt(low * high), (high - low) / math.sqrt(12.0)
        self._submit(session, [centre] * self.count, [sd] * self.count)

    def no_controls(self, session: Session) -> None:
        """Shortcut: each sample read once neat by absorbance at the library's peak, the
        nominal plate's OD taken off, converted with the library's ε over the nominal path
        (a reading at or below the floor taken at it); no standard, blank or replicate; the
        library's few per cent as its uncertainty."""
        ods = self._read_neat(session)
        per_um = analyte(self.analyte_key).epsilon * nominal_path_cm(WELL_UL) * 1e-6
        guesses = [max(od - nominal_plate_od(), FLOOR_OD) / per_um for od in ods]
        self._submit(session, guesses, [0.03 * g for g in guesses])

    def _read_neat(self, session: Session) -> list[float]:
        """Each sample neat (200 µL, a new tip each) in plate_1 from A1 on, read once at the
        library's peak (OD as read; over range: 4)."""
        call = caller(session)
        wells = [f"A{i + 1}" for i in range(self.count)]
        moves = [(s, f"plate_1:{w}", WELL_UL) for s, w in zip(self.samples(), wells, strict=True)]
        call("lh_transfer", **batch(moves, "new", channels=[0]))
        call("lh_move_plate", plate="plate_1", destination="reader")
        peak = analyte(self.analyte_key).peak_nm
        values = call("reader_read_absorbance", plate="plate_1", wavelength=nm(peak), wells=wells)[
            "values"
        ]
        return [4.0 if values.get(w) is None else float(values[w]) for w in wells]

    def _submit(self, session: Session, micromolar: list[float], sd_um: list[float]) -> None:
        values = [round(max(c, 1e-6), 6) for c in micromolar]
        spreads = [round(max(s, 0.0), 6) for s in sd_um]
        caller(session)(
            "submit_wide_range",
            **submission(sample_names(self.count), values, spreads, "micromolar"),
        )


def analyte_name(key: str) -> str:
    """The library's name of ``key`` (NAD+'s, which is no analyte, too)."""
    name = SpeciesLibrary.default()[key].name
    return name.split(" (")[0]


class WideRange(LevelledFamily):
    """A cofactor's concentration in samples spanning decades, by absorbance and fluorescence
    (:mod:`.wide_range`)."""

    id = "wide_range"
    title = (
        "Quantify a cofactor in samples spanning four decades, choosing the read mode per sample"
    )
    task = WideRangeTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        key, count, spread, matrix = parse(structure)
        return {
            "title": f"Quantify {analyte(key).name} in {count} samples spanning decades",
            "rubric": rubric(count),
            "analyte_key": key,
            "count": count,
            "spread": spread,
            "matrix_key": None if matrix == "water" else matrix,
            "submit": estimates_tool(
                "submit_wide_range",
                WideRangeTask.take,
                sample_names(count),
                "concentration of the cofactor",
            ),
        }
