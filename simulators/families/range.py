"""The ``range`` family: qualify the plate reader's linear range: its stray-light fraction ``s``
at a dye's band peak, which caps the transmitted fraction (``T_meas = (T + s)/(1 + s)``) and so
ends the linear range where readings fall :data:`~.range_parts.SHORTFALL` short of the true
absorbance.

Structures: ``<analyte>+<volume>ul`` (:mod:`.range_parts`): a certified standard of the analyte
in water, read at its band's peak in 100, 200 or 300 µL of plate_1. Levels
(:data:`~.range_parts.LEVEL`) set the reader's noise and the budget (wells and reads); the
wording never changes.

Hidden truth per seed: the reader unit's stray light (the profile's log-uniform 1-5e-5 in the
visible [A: plate_reader.toml, bounded by the Synergy HT accuracy spec] and its rise towards
the UV, ratio 6-30 at 230 nm [C: published_2.toml]), its gain and zero, each well's optical
offset and defects, the dye lot's ε and band position (``species.toml`` batches), the
standard's real concentration (its label ±1 %). Only readings high in the range reveal ``s``:
the package's median unit (:meth:`RangeTask.no_controls`) is off by up to a factor 2.2.

Reward: raw = exp(−CRPS / :data:`SCALE`), the CRPS of a normal in ln s, centred on the stated
value's logarithm with the stated sd, against the true value's (strictly proper); times the
process rubric (a blank on the standard's plate, standard levels, wells read high in the
range), weight :data:`PROCESS_WEIGHT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, levels
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.range_parts import (
    LEVEL,
    SHORTFALL,
    Qualification,
    held_out,
    linear_limit_od,
    published_stray,
    qualification,
    structures,
    true_stray,
)
from labtools.simulators.families.task import STANDARDS, WASTE, WATER, FamilyTask, standard
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["LinearRange", "RangeTask"]

STANDARD = STANDARDS[0]
#: the score's scale on ln s [A: 0.15, about twice the expert's log error (0.055-0.09 rms at
#: levels 1-5); the package's median unit, off by up to a factor 2.2 (sd 0.46 in ln), earns
#: about a quarter]
SCALE = 0.15
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: wells of the standard read high in the range for full credit [A]
HIGH_WELLS = 6
#: a reading at least this high counts as high in the range (OD) [A: where stray light of 1e-5
#: already costs 0.4 %]
HIGH_READING = 3.0


@dataclass(frozen=True)
class RangeLimits:
    """Sane bounds of a submission (``s`` must be positive: its logarithm is scored)."""

    stray_light: Range = Range(1e-9, 0.1)
    uncertainty: Range = Range(0.001, 10.0)


def high_wells(episode: Episode) -> float:
    """Distinct wells of the standard with an absorbance reading at least
    :data:`HIGH_READING`, out of :data:`HIGH_WELLS`."""
    wells = {
        r.well
        for r in episode.of([STANDARD], "absorbance")
        if any(v is not None and v >= HIGH_READING for v in r.values)
    }
    return min(1.0, len(wells) / HIGH_WELLS)


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [STANDARD], [WATER], empty=False),
            "a water blank on each plate the standard was read on",
        ),
        Component(
            "levels",
            0.4,
            lambda e: levels(e, STANDARD, count=8),
            "standard levels read, out of eight",
        ),
        Component(
            "high",
            0.4,
            high_wells,
            f"wells of the standard read at {HIGH_READING:g} OD or more, out of {HIGH_WELLS}",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)


class RangeTask(FamilyTask):
    """One instance of :class:`LinearRange` (its class attributes set by
    :meth:`LinearRange.build`)."""

    rubric = RUBRIC
    limits = RangeLimits()
    qualification: ClassVar[Qualification]

    def truth(self, lab: Lab) -> dict[str, float]:
        """The stray light at the peak this seed drew and the linear range's top it sets
        (trainers and scoring only)."""
        s = true_stray(lab, self.qualification)
        return {"stray_light": s, "linear_limit_od": linear_limit_od(s)}

    def prepare(self, lab: Lab, seed: int) -> None:
        """The certified standard into the reservoir, its label on the deck."""
        world = lab.shared["world"]
        world.fill_stock(standard(STANDARD, self.qualification.key))
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels[STANDARD] = world.labels[STANDARD]

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        q = self.qualification
        a = analyte(q.key)
        peak, ul = f"{q.peak_nm:g} nm", f"{q.volume_ul} µL"
        return (
            "Qualify the plate reader's linear range: determine its stray-light fraction s at "
            f"{peak} (the band peak of {a.name}), the fraction of the incident light that "
            "reaches the detector whatever the sample, so that the transmitted fraction it "
            "measures is (T + s) / (1 + s) and a reading falls short of the true absorbance by "
            f"log10(1 + s·10^A); the linear range ends where that is {SHORTFALL:.0%} of A. "
            f"The reader reports readings above its stated 4.0 OD range as over-range. Read "
            f"{ul} in wells of plate_1 (a Corning 96-well flat-bottom plate). A certified "
            f"standard of {a.name} is at {STANDARD} ('{labels[STANDARD]}'); water at {WATER}, "
            f"a waste trough at {WASTE}. lh_get_deck shows the deck: two 96-well plates, tip "
            "racks, the plate reader and a spectrometer. Submit once with "
            "submit_range: s and the standard uncertainty of its natural logarithm "
            f"(one sd, everything included). Reward: exp(-CRPS / {SCALE}), the continuous "
            "ranked probability score of a normal distribution of ln s, centred on your "
            "value's logarithm with your sd, against the true value's logarithm; times how "
            "sound the experiment was (a water blank on the standard's plate, eight standard "
            f"levels, {HIGH_WELLS} wells of the standard read at {HIGH_READING:g} OD or more)."
        )

    @tool(name="submit_range", destructive=True)
    async def submit(
        self,
        stray_light: Annotated[
            float,
            Arg("The reader's stray-light fraction s at the wavelength.", within="stray_light"),
        ],
        uncertainty: Annotated[
            float,
            Arg("The standard uncertainty of ln s (one sd, 0.1 = 10 %).", within="uncertainty"),
        ],
    ) -> Submitted:
        """Submit the stray-light fraction and the sd of its logarithm. Ends the episode."""
        for name, value in (("stray_light", stray_light), ("uncertainty", uncertainty)):
            if not math.isfinite(float(value)):
                raise OutOfRange(f"the {name} must be a finite number", field=f"/{name}")
        self.submission = {"stray_light": float(stray_light), "uncertainty": float(uncertainty)}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        true = math.log(self.truth(lab)["stray_light"])
        guess = math.log(self.submission["stray_light"])
        crps = crps_normal(guess, self.submission["uncertainty"], true)
        return {"log_error": guess - true, "log_crps": crps, "raw": math.exp(-crps / SCALE)}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.range_expert.qualify` (a dilution series to near the range's top, read at
        the peak and a reference wavelength, ``s`` fitted from the shortfall)."""
        from labtools.simulators.families.range_expert import qualify

        q = self.qualification
        s, sd = qualify(
            caller(session),
            standard=STANDARD,
            water=WATER,
            peak_nm=q.peak_nm,
            ref_nm=q.ref_nm,
            volume_ul=float(q.volume_ul),
            planning_slope=analyte(q.key).epsilon * nominal_path_cm(q.volume_ul),
            wells=self.budget.wells,
            calls=self.budget.calls,
            reagent_ul=self.budget.reagent_ul,
        )
        self._submit(session, s, sd)

    def naive(self, session: Session) -> None:
        """A dilution series read once at the peak; its highest reading taken for the
        stray-light plateau (``s = 10^−max``); a made-up 0.5."""
        from labtools.simulators.families.range_expert import naive_stray

        q = self.qualification
        s = naive_stray(
            caller(session),
            standard=STANDARD,
            water=WATER,
            peak_nm=q.peak_nm,
            volume_ul=float(q.volume_ul),
        )
        self._submit(session, s, 0.5)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; the stated range's top taken for the plateau, s = 10^−4,
        ± a factor e."""
        caller(session)("lh_get_deck")
        self._submit(session, 1e-4, 1.0)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the published priors' median unit at the wavelength, with
        their spread's sd in the logarithm."""
        caller(session)("lh_get_deck")
        centre, sd = published_stray(self.qualification)
        self._submit(session, centre, sd)

    def no_controls(self, session: Session) -> None:
        """Shortcut: the standard read neat once (no blank, no series, no replicate) and s
        the reader's datasheet value (the published median unit) with the datasheet's
        confidence (a tenth)."""
        from labtools.simulators.families.protocol import PLATE, transfer, well
        from labtools.simulators.tasks.scripting import nm, site_of

        call = caller(session)
        q = self.qualification
        home = site_of(call("lh_get_deck"), PLATE)
        transfer(call, [(STANDARD, well("A1"), float(q.volume_ul))], "reuse")
        call("lh_move_plate", plate=PLATE, destination="reader")
        call("reader_read_absorbance", plate=PLATE, wavelength=nm(q.peak_nm), wells=["A1"])
        call("lh_move_plate", plate=PLATE, destination=home)
        centre, _ = published_stray(q)
        self._submit(session, centre, 0.1)

    @staticmethod
    def _submit(session: Session, s: float, sd: float) -> None:
        value = s if math.isfinite(s) and s > 0 else 3e-5
        spread = sd if math.isfinite(sd) else 1.0
        caller(session)(
            "submit_range",
            stray_light=float(f"{min(max(value, 1e-9), 0.1):.4g}"),
            uncertainty=round(min(max(spread, 0.001), 10.0), 4),
        )


class LinearRange(LevelledFamily):
    """The plate reader's stray light and linear range (:mod:`.range`)."""

    id = "range"
    title = "Qualify the plate reader's linear range: its stray light"
    task = RangeTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return structures()

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        q = qualification(structure)
        return {
            "title": f"The reader's stray light at {q.peak_nm:g} nm, {q.volume_ul} µL",
            "qualification": q,
        }
