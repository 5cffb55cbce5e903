"""The ``detection_limit`` family: an absorbance method's limit of detection and limit of
quantitation, with their uncertainty, as a method validation states them (ICH Q2(R1), "based
on the standard deviation of the response and the slope": LOD = 3.3 σ / S, LOQ = 10 σ / S).

Structures: ``<analyte>+<peak|shoulder>+<volume>ul`` (:mod:`.detection_limit_parts`): the
analyte in water read on the plate reader at its band's peak or on its shoulder, in 100, 200 or
300 µL of plate_1. Levels (:data:`~.detection_limit_parts.LEVEL`) set the reader's noise and the
budget (the blanks it affords); the wording never changes.

Hidden truth per seed: the reader unit's read noise (the level's factor times
:data:`~.detection_limit_parts.UNIT_NOISE`, log-uniform), its gain, each well's optical offset,
the analyte lot's ε and band position (``species.toml`` batches), the certified standard's real
concentration (its label ±1 %). The true σ and S follow (:func:`~.detection_limit_parts.
blank_sd`, :func:`~.detection_limit_parts.slope_per_um`): blanks read in the plate measure σ,
a standard series measures S; the reader's published noise floor and the library's ε
(:meth:`DetectionLimitTask.no_controls`) do not.

Reward: raw = exp(−mean(CRPS_LOD, CRPS_LOQ) / :data:`SCALE`), each the CRPS of a normal in the
logarithm, centred on the stated limit's logarithm with the stated relative uncertainty as its
sd, against the true limit's logarithm (strictly proper); times the process rubric (a blank on
the standard's plate, replicate water blanks, standard levels), weight :data:`PROCESS_WEIGHT`.
:data:`SCALE` is wide enough for σ's own sampling spread: twelve blank wells leave
1/√22 ≈ 21 % of it (read once each); reading them again separates the read noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.errors import OutOfRange
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, levels
from labtools.simulators.families.detection_limit_parts import (
    LEVEL,
    LOD_K,
    LOQ_K,
    UNIT_NOISE,
    Method,
    blank_sd,
    held_out,
    method,
    published_blank_sd,
    slope_per_um,
    structures,
)
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.task import (
    STANDARDS,
    WASTE,
    WATER,
    FamilyTask,
    log_uniform,
    standard,
)
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.published import published
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Concentration, Range, magnitude, qty

__all__ = ["DetectionLimit", "DetectionLimitTask"]

STANDARD = STANDARDS[0]
#: the score's scale on the logarithm of the limits [A: 0.15, about 2.5 times the expert's own
#: log error (0.05-0.07 rms at every level, its blanks read twelve times)]
SCALE = 0.15
#: the process's share of the outcome, as the other families'
PROCESS_WEIGHT = 0.6
#: water blank wells for full credit [A: twelve leave σ's sampling spread at 21 %, read once]
BLANK_WELLS = 12


@dataclass(frozen=True)
class DetectionLimitLimits:
    """Sane bounds of a submission (a limit must be positive: its logarithm is scored)."""

    limit: Range = Range(1e-12, 1.0, "molar")
    uncertainty: Range = Range(0.001, 10.0)


def water_blanks(episode: Episode) -> float:
    """Distinct wells holding water alone that were read: (n − 1) / (:data:`BLANK_WELLS` − 1),
    at most 1."""
    wells = {r.well for r in episode.readings if r.only([WATER])}
    return min(1.0, max(len(wells) - 1, 0) / (BLANK_WELLS - 1))


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.2,
            lambda e: blanks(e, [STANDARD], [WATER], empty=False),
            "a water blank on each plate the standard was read on",
        ),
        Component(
            "blank_replicates",
            0.5,
            water_blanks,
            f"water blanks in distinct wells, out of {BLANK_WELLS}",
        ),
        Component(
            "levels",
            0.3,
            lambda e: levels(e, STANDARD, count=4),
            "standard levels read, out of four",
        ),
    ),
    weight=PROCESS_WEIGHT,
    note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
)


class DetectionLimitTask(FamilyTask):
    """One instance of :class:`DetectionLimit` (its class attributes set by
    :meth:`DetectionLimit.build`)."""

    rubric = RUBRIC
    limits = DetectionLimitLimits()
    method: ClassVar[Method]

    # -- the hidden world ----------------------------------------------------------------------
    def _unit(self, lab: Lab) -> float:
        """This seed's reader unit's read noise over the level's (hidden)."""
        draw = lab.shared["world"].hidden(
            f"task/{self.id}", lambda rng: log_uniform(rng, UNIT_NOISE)
        )
        return float(draw)

    def truth(self, lab: Lab) -> dict[str, float]:
        """The method's σ (OD), S (OD per µM), LOD and LOQ (µM) this seed drew (trainers and
        scoring only)."""
        sigma, slope = blank_sd(lab), slope_per_um(lab, self.method)
        return {
            "sigma_od": sigma,
            "slope_od_per_um": slope,
            "lod_um": LOD_K * sigma / slope,
            "loq_um": LOQ_K * sigma / slope,
        }

    def prepare(self, lab: Lab, seed: int) -> None:
        """The reader's read noise set to this unit's; the certified standard into the
        reservoir, its label on the deck."""
        world = lab.shared["world"]
        backend = lab.shared["reader_backend"]
        base = ReaderConstants.from_profile(world.profile)  # the level's, as the lab was built
        unit = self._unit(lab)
        backend.constants = replace(
            base, od_noise_floor=base.od_noise_floor * unit, snr0=base.snr0 / unit
        )
        world.fill_stock(standard(STANDARD, self.method.key))
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels[STANDARD] = world.labels[STANDARD]

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        m = self.method
        a = analyte(m.key)
        where = "its band's peak" if m.where == "peak" else "the long-wavelength side of its band"
        nm, ul = f"{m.wavelength_nm:g} nm", f"{m.volume_ul} µL"
        return (
            f"Validate an absorbance method for {a.name} in water: {ul} in a well of plate_1 "
            f"(a Corning 96-well flat-bottom plate), read once on the plate reader at {nm} "
            f"({where}), the reading less the blank's converted with a calibration line. "
            "Determine the method's limit of detection (LOD) and limit of quantitation (LOQ) "
            "as ICH Q2(R1) states them from the standard deviation of the response and the "
            "slope: LOD = 3.3 σ / S and LOQ = 10 σ / S, with σ the standard deviation of a "
            f"blank's response (water, {ul} in a fresh well of the plate, read once at {nm}; "
            "wells with a defect, which a path check finds, are not the method's) and S the "
            f"calibration slope at {nm} in {ul} (OD per µM). A certified standard of {a.name} "
            f"is at {STANDARD} ('{labels[STANDARD]}'); water at {WATER}, a waste trough at "
            f"{WASTE}. lh_get_deck shows the deck: two 96-well plates, tip racks, the plate "
            "reader and a spectrometer. Submit once with submit_detection_limit: the LOD and "
            "the LOQ (µM) and their relative standard uncertainty (one standard deviation as "
            "a fraction, everything included). Reward: exp(-CRPS / "
            f"{SCALE}), the CRPS the mean over the LOD and the LOQ of the continuous ranked "
            "probability score of a normal distribution of the logarithm, centred on your "
            "value's with your relative uncertainty as its sd, against the true value's "
            "logarithm; times how sound the experiment was (a water blank on the standard's "
            f"plate, water blanks in {BLANK_WELLS} wells, four standard levels)."
        )

    @tool(name="submit_detection_limit", destructive=True)
    async def submit(
        self,
        lod: Annotated[Concentration, Arg("The method's limit of detection.", within="limit")],
        loq: Annotated[Concentration, Arg("The method's limit of quantitation.", within="limit")],
        uncertainty: Annotated[
            float,
            Arg(
                "The relative standard uncertainty of both (one sd as a fraction, 0.1 = 10 %).",
                within="uncertainty",
            ),
        ],
    ) -> Submitted:
        """Submit the method's LOD and LOQ and their relative uncertainty. Ends the episode."""
        if not math.isfinite(float(uncertainty)):
            raise OutOfRange("the uncertainty must be a finite number", field="/uncertainty")
        self.submission = {
            "lod_um": magnitude(lod, "micromolar"),
            "loq_um": magnitude(loq, "micromolar"),
            "uncertainty": float(uncertainty),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        sd = self.submission["uncertainty"]
        out: dict[str, float] = {}
        crps = []
        for name in ("lod", "loq"):
            guess = math.log(self.submission[f"{name}_um"])
            true = math.log(truth[f"{name}_um"])
            crps.append(crps_normal(guess, sd, true))
            out[f"{name}_log_error"] = guess - true
        out["log_crps"] = sum(crps) / 2.0
        out["raw"] = math.exp(-out["log_crps"] / SCALE)
        return out

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.detection_limit_expert.detection_limit` (blanks read repeatedly with a path
        check, a standard series, σ by variance components and S by regression)."""
        from labtools.simulators.families.detection_limit_expert import detection_limit

        sigma, slope, relative = detection_limit(
            caller(session),
            standard=STANDARD,
            water=WATER,
            wavelength_nm=self.method.wavelength_nm,
            volume_ul=float(self.method.volume_ul),
            planning_slope=self.method.library_epsilon * nominal_path_cm(self.method.volume_ul),
            wells=self.budget.wells,
            reagent_ul=self.budget.reagent_ul,
        )
        self._submit(session, sigma / slope, relative)

    def naive(self, session: Session) -> None:
        """Two water blanks read once, their sd as σ; S from the library's ε over 1 cm (the
        well's path forgotten); a made-up 10 %."""
        from labtools.simulators.families.detection_limit_expert import naive_sigma

        sigma = naive_sigma(
            caller(session),
            water=WATER,
            wavelength_nm=self.method.wavelength_nm,
            volume_ul=float(self.method.volume_ul),
        )
        self._submit(session, sigma / (self.method.library_epsilon * 1e-6), 0.1)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a thousandth of the standard's label, ± a factor e."""
        from labtools.demo.labels import label_micromolar

        label = label_micromolar(caller(session)("lh_get_deck")["labels"][STANDARD])
        self._submit(session, label * 1e-3 / LOD_K, 1.0)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; σ from the published read noise at the level's factor (read
        off the budget) and the median unit, with the published well-offset spread; S from the
        library's ε over the nominal path; the unit spread's sd in the logarithm."""
        call = caller(session)
        wells = session.observation()["budget"]["wells"]
        level = next((lv for lv in LEVEL.values() if lv.budget.wells == wells), LEVEL[3])
        sigma = published_blank_sd(level.noise * math.sqrt(UNIT_NOISE[0] * UNIT_NOISE[1]))
        call("lh_get_deck")
        slope = self.method.library_epsilon * nominal_path_cm(self.method.volume_ul) * 1e-6
        self._submit(
            session, sigma / slope, math.log(UNIT_NOISE[1] / UNIT_NOISE[0]) / math.sqrt(12)
        )

    def no_controls(self, session: Session) -> None:
        """Shortcut: no blank, standard or replicate: σ the reader's published noise floor, S
        the library's ε over the nominal path; the library's few per cent as the uncertainty."""
        caller(session)("lh_get_deck")
        sigma = published().expected("reader.absorbance.noise_floor")
        slope = self.method.library_epsilon * nominal_path_cm(self.method.volume_ul) * 1e-6
        self._submit(session, sigma / slope, 0.05)

    @staticmethod
    def _submit(session: Session, sigma_over_slope_um: float, relative: float) -> None:
        value = sigma_over_slope_um if math.isfinite(sigma_over_slope_um) else 1.0
        value = min(max(value, 1e-3), 1e5)
        spread = relative if math.isfinite(relative) else 1.0
        caller(session)(
            "submit_detection_limit",
            lod=qty(LOD_K * value, "micromolar", decimals=6),
            loq=qty(LOQ_K * value, "micromolar", decimals=6),
            uncertainty=round(min(max(spread, 0.001), 10.0), 4),
        )


class DetectionLimit(LevelledFamily):
    """An absorbance method's LOD and LOQ (:mod:`.detection_limit`)."""

    id = "detection_limit"
    title = "Validate an absorbance method's limit of detection and quantitation"
    task = DetectionLimitTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return structures()

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        m = method(structure)
        where = "at its peak" if m.where == "peak" else "on its shoulder"
        return {
            "title": f"The LOD and LOQ of {analyte(m.key).name} {where}, {m.volume_ul} µL",
            "method": m,
        }
