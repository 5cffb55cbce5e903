"""The ``luminescence`` family: the ATP in each of a plate's samples, read by the light a glow
luciferase reagent makes from it, with its uncertainty: the one family that reads light the
sample makes.

Structures: ``n<samples>+<hot>+dec<span>`` (:mod:`.luminescence_parts`): 3-6 samples already
mixed with the reagent in plate_1's row C (C2, C4, ...), a bright positive control against the
first at an edge (B2), at a diagonal (B1) or far from every sample (H12), and the samples'
light spread over 1-3 decades. Levels (:data:`~.luminescence_parts.LEVEL`) set the faintest
sample's light (30 times the dark rate at level 1, a fraction of it at level 5), the control's
brightness (its leak into its neighbour, a tenth of the faintest sample at level 1, up to a
hundred times it at level 5), the reader's dark rate and the budget.

Hidden truth per seed: each sample's ATP (its nominal light log-uniform over the structure's
decades from the level's floor), the control's, the reagent lot's light yield and the reader's
detection efficiency (:data:`~.luminescence_parts.LOT`), the standard's real concentration
(its label ±1 %), and the reader's cross-talk (1e-6 to 1e-4 to each edge neighbour) and dark
rate (the published prior's, times the level's factor), drawn per seed by the world. An ATP
standard read in the plate calibrates the lot and the reader; blanks give the dark counts; a
well beside the control with no ATP gives its leak; repeated reads give the counts a faint
sample needs. The package's nominal yield and an unblanked read
(:meth:`LuminescenceTask.no_controls`) get none of these.

The world's reader has no per-seed detection efficiency: the family folds this seed's
efficiency factor, with the lot's yield factor, into the glow reagent's photons per pmol in the
world's library (they multiply: counts = η · Y · pmol).

Reward: raw = exp(−mean over the samples of CRPS(N(ln ĉ, (σ̂/ĉ)²), ln c) / SCALE) (kinetics'
log-scale score and its :data:`~.kinetics.SCALE`), times the process rubric (a blank, standard
levels, repeated counts and, where the control is a sample's neighbour, its leak), weight 0.6.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.naming import ContainerNames
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.simulators.families.estimates import (
    checked_estimates,
    estimates_tool,
    log_crps_score,
    sample_names,
    submission,
)
from labtools.simulators.families.kinetics import SCALE
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.luminescence_parts import (
    HOT_WELL,
    LEVEL,
    LOT,
    NOMINAL_CPS_PER_PMOL,
    SAMPLE_UL,
    SPECIES,
    LuminescenceLevel,
    Structure,
    held_out,
    parse,
    rubric,
    sample_wells,
    structures,
)
from labtools.simulators.families.task import (
    STANDARD_TOLERANCE,
    STANDARDS,
    STOCK_UL,
    WASTE,
    WATER,
    FamilyTask,
    log_uniform,
)
from labtools.simulators.profile import Parameter
from labtools.simulators.profile.parameter import Prior
from labtools.simulators.published import load_profile
from labtools.simulators.tasks.offers import LIQUID, LUMINESCENCE
from labtools.simulators.tasks.scripting import caller
from labtools.simulators.world import Mixture, SpeciesLibrary
from labtools.units import Range

__all__ = ["Luminescence", "LuminescenceTask"]

STANDARD = STANDARDS[0]
#: the ATP standard's label (µM) [A: 1 µM, 200 pmol in a 200 µL well: 2e7 counts a second
#: nominal, so that a few µL make a curve well above any sample's dark floor]
STANDARD_UM = 1.0
STANDARD_LABEL = f"ATP standard {STANDARD_UM:g} µM in glow reagent ±1 %"
#: the diluent's label: the reagent without ATP (the lab's water, relabelled)
DILUENT_LABEL = "glow reagent, no ATP (diluent and blank)"
CONTROL_LABEL = "positive control (high ATP)"
#: the uncertainty the shortcuts state, relative [A: what a read alone seems to give]
SHORTCUT_SD = 0.03


def nm_of(cps: float) -> float:
    """ATP (nM) in a sample well that reads ``cps`` nominally (the package's yield)."""
    return cps / NOMINAL_CPS_PER_PMOL * 1000.0 / SAMPLE_UL


@dataclasses.dataclass(frozen=True)
class LuminescenceLimits:
    """Sane bounds of a submission: up to 1 mM of ATP in a well (a thousand times any
    control)."""

    concentration: Range = Range(0.0, 1000.0, "micromolar")


class LuminescenceTask(FamilyTask):
    """One instance of :class:`Luminescence` (its class attributes set by
    :meth:`Luminescence.build`)."""

    lab_tools = LIQUID | LUMINESCENCE

    limits = LuminescenceLimits()
    level: ClassVar[LuminescenceLevel]  # type: ignore[assignment]
    parts: ClassVar[Structure]

    def build_lab(self, seed: int = 0, profile: Any = None) -> Lab:
        """The family's lab, the reader's dark-rate prior raised by the level's factor (the
        same draws: every other hidden value of the seed stays)."""
        base = load_profile(profile)
        key = "reader.luminescence.dark_rate"
        prior = base[key].prior
        if prior is not None and self.level.dark != 1.0:
            raised = Prior(prior.kind, prior.a, prior.b, scale=prior.scale * self.level.dark)
            source = f"level {self.level.number}"
            value = Parameter(key, base[key].unit, prior=raised, source=source)
            base = base.with_values({key: value})
        return super().build_lab(seed, base)

    # -- the layout ----------------------------------------------------------------------------
    def samples(self) -> list[str]:
        """The samples' wells (``plate_1:C2`` ...), in order."""
        return [f"plate_1:{w}" for w in sample_wells(self.parts.samples)]

    def places(self) -> tuple[str, ...]:
        """The samples as the submission names them (``sample_1`` ...)."""
        return sample_names(self.parts.samples)

    def hot(self) -> str:
        return f"plate_1:{HOT_WELL[self.parts.hot]}"

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """Each sample's ATP (nM in its well), the control's and the lot's and reader's factors
        this seed drew (trainers and scoring only)."""
        return dict(lab.shared["world"].hidden(f"task/{self.id}", self._draw))

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        low = self.level.floor_cps
        high = low * 10.0**self.parts.decades
        out = {f"{p}_nm": nm_of(log_uniform(rng, (low, high))) for p in self.places()}
        out["control_nm"] = nm_of(log_uniform(rng, self.level.hot_cps))
        out["yield_factor"], out["efficiency_factor"] = LOT.draw(rng)
        return out

    def prepare(self, lab: Lab, seed: int) -> None:
        """The lot into the world's library, the standard into the reservoir, the samples and
        the control into plate_1 (the deck told of their volumes), the labels on the deck."""
        world = lab.shared["world"]
        truth = self.truth(lab)
        species = SpeciesLibrary.default()[SPECIES]
        if species.luminescence is None:
            raise TypeError(f"the species library's {SPECIES!r} gives no luminescence")
        light = dict(species.luminescence)
        light["photons_per_s_per_pmol"] *= truth["yield_factor"] * truth["efficiency_factor"]
        world.species.put(dataclasses.replace(species, luminescence=light))
        world.fill_stock(
            {
                "well": STANDARD,
                "species": SPECIES,
                "concentration_uM": STANDARD_UM,
                "volume_ul": STOCK_UL,
                "tolerance": STANDARD_TOLERANCE,
                "label": STANDARD_LABEL,
            }
        )
        world.labels[WATER] = DILUENT_LABEL
        shown = {WATER: DILUENT_LABEL, STANDARD: STANDARD_LABEL, self.hot(): CONTROL_LABEL}
        wells = dict(zip(self.samples(), self.places(), strict=True))
        for well, place in wells.items():
            molar = truth[f"{place}_nm"] * 1e-9
            world.fill(well, Mixture.solution(SAMPLE_UL, {SPECIES: molar}), place)
            shown[well] = place
        control = Mixture.solution(SAMPLE_UL, {SPECIES: truth["control_nm"] * 1e-9})
        world.fill(self.hot(), control, CONTROL_LABEL)
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update(shown)
        names = ContainerNames(handler.plr.deck)  # the deck's belief of the wells' volumes
        for well in [*wells, self.hot()]:
            names.resolve(well)[0].tracker.set_volume(SAMPLE_UL)

    def statement(self, lab: Lab) -> str:
        wells = ", ".join(
            f"{p} in {w.partition(':')[2]}"
            for p, w in zip(self.places(), self.samples(), strict=True)
        )
        hot = self.hot().partition(":")[2]
        return (
            f"plate_1 holds {self.parts.samples} samples, each 200 µL already mixed with a glow "
            f"luciferase ATP reagent ({wells}), and a bright positive control in {hot}. The "
            f"reservoir holds an ATP standard at {STANDARD} ('{STANDARD_LABEL}') and the reagent "
            f"without ATP at {WATER} (the diluent and blank); a waste trough at {WASTE}. ATP "
            "dispensed into the diluent glows at once, as in the samples. lh_get_deck shows the "
            "deck: two 96-well plates, tip racks, the plate reader and a spectrometer. Measure by "
            "luminescence "
            "(reader_read_luminescence: counts per second, each read 1 s per well; neighbouring "
            "wells' light leaks into a well). Determine the ATP concentration in each sample "
            "well and its standard uncertainty (one standard deviation, everything included). "
            "Submit once with submit_luminescence. Reward: the mean over the samples of the "
            "continuous ranked probability score of a normal distribution on the log scale, "
            "N(ln estimate, (uncertainty / estimate)²), against ln of the truth, as "
            f"exp(−mean / {SCALE}), times how sound the experiment was (a blank, ATP standard "
            "levels, every sample counted in repeated reads"
            + (", the control's leak into a well beside it" if self.parts.hot != "none" else "")
            + ")."
        )

    async def take(
        self, concentrations: Mapping[str, Any], uncertainties: Mapping[str, Any]
    ) -> Submitted:
        """Check and keep a submission: per sample an ATP concentration > 0 and an
        uncertainty ≥ 0 (nM)."""
        values, spreads = checked_estimates(
            concentrations, uncertainties, self.places(), "nanomolar"
        )
        self.submission = {"concentrations_nm": values, "uncertainties_nm": spreads}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        return log_crps_score(
            self.submission["concentrations_nm"],
            self.submission["uncertainties_nm"],
            {place: truth[f"{place}_nm"] for place in self.places()},
            SCALE,
        )

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.luminescence_expert.luminescence`: an ATP standard curve, blanks and leak
        probes beside the control in the plate, read repeatedly until the faintest sample's
        counts suffice; the leak measured and taken off."""
        from labtools.simulators.families.luminescence_expert import luminescence

        estimates, sds = luminescence(
            caller(session),
            samples=self.samples(),
            hot=self.hot(),
            standard=STANDARD,
            water=WATER,
            calls=self.budget.calls,
        )
        self._submit(session, estimates, sds)

    def naive(self, session: Session) -> None:
        """The samples read once, unblanked, converted with the reagent's stated photons per
        pmol as if every photon were counted; a made-up 10 %."""
        from labtools.simulators.families.luminescence_expert import read_once

        photons = SpeciesLibrary.default()[SPECIES].luminescence or {}
        per_pmol = float(photons["photons_per_s_per_pmol"])
        cps = read_once(caller(session), self.samples())
        guesses = [c / per_pmol * 1000.0 / SAMPLE_UL for c in cps]
        self._submit(session, guesses, [0.1 * g for g in guesses])

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a thousandth of the standard's label for each sample, ± that
        much."""
        from labtools.demo.labels import label_micromolar

        label = caller(session)("lh_get_deck")["labels"][STANDARD]
        guess = label_micromolar(label)  # µM / 1000 = nM
        self._submit(session, [guess] * len(self.places()), [guess] * len(self.places()))

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the level's light converted with the package's nominal yield:
        the prior's log-centre and its spread, for every sample."""
        low = nm_of(self.level.floor_cps)
        high = low * 10.0**self.parts.decades
        centre, sd = math.sqrt(low * high), (high - low) / math.sqrt(12.0)
        self._submit(session, [centre] * len(self.places()), [sd] * len(self.places()))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the samples read once, no blank, standard, leak or repeat, converted with
        the package's nominal yield (the library's photons per pmol, the published detection
        efficiency); a few per cent as the uncertainty."""
        from labtools.simulators.families.luminescence_expert import read_once

        guesses = [nm_of(c) for c in read_once(caller(session), self.samples())]
        self._submit(session, guesses, [SHORTCUT_SD * g for g in guesses])

    def _submit(self, session: Session, estimates: list[float], sds: list[float]) -> None:
        safe = [e if math.isfinite(e) and e > 0 else 1e-6 for e in estimates]
        spread = [s if math.isfinite(s) and s >= 0 else e for s, e in zip(sds, safe, strict=True)]
        caller(session)(
            "submit_luminescence",
            **submission(
                self.places(), [_nm(e) for e in safe], [_nm(s) for s in spread], "nanomolar"
            ),
        )


def _nm(value: float) -> float:
    return float(f"{min(max(value, 1e-6), 1e6):.6g}")


class Luminescence(LevelledFamily):
    """The ATP in each of a plate's samples by the light a glow reagent makes
    (:mod:`.luminescence`)."""

    id = "luminescence"
    title = "Quantify ATP in each of a plate's samples by glow luminescence, with cross-talk"
    task = LuminescenceTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return [s.name for s in structures()]

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        parts = parse(structure)
        places = sample_names(parts.samples)
        return {
            "title": f"Quantify ATP in {parts.samples} samples by luminescence",
            "parts": parts,
            "rubric": rubric(parts, STANDARD, WATER, f"plate_1:{HOT_WELL[parts.hot]}"),
            "submit": estimates_tool(
                "submit_luminescence", LuminescenceTask.take, places, "ATP concentration"
            ),
        }
