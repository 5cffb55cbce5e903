"""The ``target`` family: design to a target. Certified standards of one to three dyes and water
are on the deck; the statement gives how 200 µL of a solution reads on the lab's own plate
reader (``colour_matching``'s target, generalised), and the agent prepares that solution in a
well and submits the well.

Structures: ``<stock>[+<stock>...]+<kind>`` (:mod:`.target_parts`): one to three stock analytes
told apart, and the target's kind, ``peaks`` (the absorbance at each stock's band maximum) or
``spectrum`` (400-700 nm, 10 nm steps). Levels (:data:`~.target_parts.LEVEL`) set how strongly
each stock reads in the target, how far the lots lie from the library, the reader's noise, the
tolerance and the budget.

Hidden truth per seed: the recipe (µL of each standard per 200 µL, each stock's band in the
target log-uniform within the level's optical densities by the library's ε and the nominal
path, scaled down where the sum would read above ``colour_matching.PEAK_MAX_OD``); each
standard's real concentration (its label ±1 %, 1 sd); each dye's lot (ε and band positions, the
library's published spread times the level's ``lot_factor``); the reader's gain, offsets and
noise; each pipetting channel's bias. The target is the recipe made without error from the
real standards, 200 µL of it read without noise over its true path in :data:`TARGET_WELL`,
times the reader's gain (as ``colour_matching``'s). The library's ε, the labels and the nominal
path (:meth:`TargetTask.inversion`, :meth:`TargetTask.no_controls`) miss it by the lots and the
gain; the standards read on this reader do not.

Reward: the submitted well's real contents, 200 µL of them read as the target is (the world's
truth, with the reader's model: :func:`~labtools.simulators.tasks.colour_matching.
absorbance_in_well`), against the target: e = RMS(difference) / RMS(target) over the target's
wavelengths, raw = exp(−(e/τ)²) with τ the level's tolerance, times the process rubric (a
blank, each standard read alone, the submitted well read after its last change), weight
:data:`PROCESS_WEIGHT`. Validity: the well holds 150-250 µL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import numpy as np

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Episode, Rubric, blanks, references, verified
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.target_parts import (
    LEVEL,
    TargetLevel,
    held_out,
    structures,
    target_nm,
)
from labtools.simulators.families.task import (
    STANDARDS,
    WASTE,
    WATER,
    WELL_UL,
    FamilyTask,
    log_uniform,
    standard,
)
from labtools.simulators.profile import Parameter, Prior
from labtools.simulators.published import load_profile
from labtools.simulators.tasks.colour_matching import (
    PEAK_MAX_OD,
    TARGET_WELL,
    VALID_UL,
    absorbance_in_well,
    submitted_well,
)
from labtools.simulators.tasks.scripting import caller, nominal_path_cm
from labtools.simulators.world import Mixture
from labtools.tool import Arg, tool

__all__ = ["PROCESS_WEIGHT", "TARGET_WELL", "Target", "TargetTask", "targets_of"]

#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6
#: the target's JSON object in the statement
_TARGET = re.compile(r"\{[^{}]*\}")


def rubric(stocks: tuple[str, ...]) -> Rubric:
    """The process components: a blank, each standard read alone, the submitted well read after
    its last change (``colour_matching``'s, over this structure's standards, without its
    linear range: a faint target's standards are read in range, its mix cannot be)."""

    def checked(episode: Episode) -> float:
        well = (episode.submission or {}).get("well")
        return verified(episode, well) if isinstance(well, str) else 0.0

    return Rubric(
        (
            Component(
                "blank",
                0.25,
                lambda e: blanks(e, stocks, [WATER]),
                "an empty or water-only well read on each plate whose standard wells were read",
            ),
            Component(
                "references",
                0.4,
                lambda e: references(e, stocks, [WATER]),
                "share of the standards read alone (diluted in water)",
            ),
            Component(
                "verified",
                0.35,
                checked,
                "the submitted well read after its last change (a check of the mix)",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="No uncertainty is asked for.",
    )


class TargetTask(FamilyTask):
    """One instance of :class:`Target` (its class attributes set by :meth:`Target.build`)."""

    level: ClassVar[TargetLevel]
    keys: ClassVar[tuple[str, ...]]
    kind: ClassVar[str]

    def __init__(self) -> None:
        super().__init__()
        self._target = np.zeros(0)

    @property
    def stocks(self) -> dict[str, str]:
        """Each stock analyte's standard container."""
        return dict(zip(self.keys, STANDARDS, strict=False))

    @property
    def nm(self) -> np.ndarray:
        """The target's wavelengths (nm)."""
        return target_nm(self.keys, self.kind)

    def build_lab(self, seed: int = 0, profile: Any = None) -> Lab:
        """The family's lab (the level's reader noise), its stocks' lots spread by the level's
        ``lot_factor`` about the library's published spread."""
        base = load_profile(profile)
        factor = self.level.lot_factor
        values = {}
        for key in self.keys:
            for name in ("epsilon_factor", "shift"):
                entry = f"species.{key}.lot.{name}"
                prior = base[entry].prior
                if prior is not None:
                    wider = Prior(prior.kind, prior.a, prior.b * factor)
                    source = f"level {self.level.number}: {factor:g} × the published spread"
                    values[entry] = Parameter(entry, base[entry].unit, prior=wider, source=source)
        return super().build_lab(seed, base.with_values(values))

    # -- the hidden world ----------------------------------------------------------------------
    def truth(self, lab: Lab) -> dict[str, float]:
        """The recipe: µL of each stock's standard per 200 µL (trainers and scoring only)."""
        drawn = lab.shared["world"].hidden(f"task/{self.id}", self._draw)
        peak = float(self._read(lab, self._recipe_mix(lab, drawn), WAVELENGTHS_CAP).max())
        scale = min(1.0, PEAK_MAX_OD / peak) if peak > 0 else 1.0
        return {key: ul * scale for key, ul in drawn.items()}

    def _draw(self, rng: np.random.Generator) -> dict[str, float]:
        """Each stock's volume: its band log-uniform in the level's optical densities, by the
        library's ε, the label and the nominal path of 200 µL."""
        path = nominal_path_cm(WELL_UL)
        out = {}
        for key, container in self.stocks.items():
            od = log_uniform(rng, self.level.od)
            label_um = standard(container, key)["concentration_uM"]
            out[key] = od / (analyte(key).epsilon * label_um * 1e-6 * path) * WELL_UL
        return out

    def _recipe_mix(self, lab: Lab, recipe: Mapping[str, float]) -> Mixture:
        """``recipe`` made without error from the real standards, water to 200 µL."""
        world = lab.shared["world"]
        mix = Mixture(WELL_UL - sum(recipe.values()))
        for key, ul in recipe.items():
            stock = world.peek(self.stocks[key])
            mix.add(Mixture.solution(ul, {key: stock.concentration(key)}))
        return mix

    def _read(self, lab: Lab, contents: Mixture, nm: np.ndarray) -> np.ndarray:
        """How 200 µL of ``contents``' solution reads in :data:`TARGET_WELL` on the lab's
        reader, without noise or stray light (its gain included)."""
        if contents.volume_ul <= 0.0:
            return np.zeros(nm.shape)
        solution = Mixture.solution(WELL_UL, contents.concentrations())
        gain = 1.0 + lab.shared["reader_backend"].truth.gain_error
        return absorbance_in_well(lab, solution, TARGET_WELL, nm) * gain

    def prepare(self, lab: Lab, seed: int) -> None:
        """The standards into the reservoir (their labels on the deck), the target computed."""
        world = lab.shared["world"]
        for key, container in self.stocks.items():
            world.fill_stock(standard(container, key))
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update({c: world.labels[c] for c in self.stocks.values()})
        self._target = self._read(lab, self._recipe_mix(lab, self.truth(lab)), self.nm)

    def statement(self, lab: Lab) -> str:
        labels = lab.shared["world"].labels
        standards = "; ".join(f"{c}: '{labels[c]}'" for c in self.stocks.values())
        target = {f"{w:g}": round(float(a), 5) for w, a in zip(self.nm, self._target, strict=True)}
        return (
            "Prepare a solution that reads as asked. Certified standards in the reservoir: "
            f"{standards}; water at {WATER}, a waste trough at {WASTE}. lh_get_deck shows the "
            "deck: two 96-well plates, tip racks, the plate reader and a spectrometer. The "
            "target is how 200 µL of the solution in a well of these plates (Corning 96 flat) "
            "reads on this lab's plate reader (OD of the liquid alone, referenced to water, "
            "without noise or stray light), at each wavelength in nm:\n"
            f"{json.dumps(target)}\n"
            "It is a mix of these standards and water. Prepare the solution in a well of "
            f"plate_1 or plate_2 (keep {VALID_UL[0]:g}-{VALID_UL[1]:g} µL in it: it is judged as "
            "200 µL of it would read), check it as you like, then submit the well with "
            "submit_target. Reward: exp(-(e/tau)^2), with e the RMS difference between how the "
            "submitted solution reads (its real contents) and the target over the target's RMS, "
            f"tau = {self.level.tolerance:g}, times how sound the experiment was (a blank, each "
            "standard read alone, the submitted well read after its last change)."
        )

    @tool(name="submit_target", destructive=True)
    async def submit(
        self,
        well: Annotated[
            str, Arg("The well holding your solution, as '<plate>:<well>', e.g. 'plate_1:B3'.")
        ],
    ) -> Submitted:
        """Submit the well holding the solution that reads as the target. Ends the episode."""
        self.submission = {"well": submitted_well(well)}
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        contents = lab.shared["world"].peek(self.submission["well"])
        realised = self._read(lab, contents, self.nm)
        scale = float(np.sqrt(np.mean(self._target**2)))
        error = float(np.sqrt(np.mean((realised - self._target) ** 2))) / scale
        return {
            "raw": math.exp(-((error / self.level.tolerance) ** 2)),
            "relative_error": error,
            "volume_ul": contents.volume_ul,
        }

    def validity(self, lab: Lab) -> float:
        if self.submission is None:
            return 1.0
        volume = lab.shared["world"].peek(self.submission["well"]).volume_ul
        return 1.0 if VALID_UL[0] <= volume <= VALID_UL[1] else 0.0

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.target_expert.design` (each standard read alone, the volumes by
        non-negative least squares, the mix checked and corrected up to twice, read again)."""
        from labtools.simulators.families.target_expert import design

        call = caller(session)
        nm, od = targets_of(session.observation()["task"])
        well = design(call, self.stocks, water=WATER, target_nm=nm, target_od=od)
        call("submit_target", well=well)

    def naive(self, session: Session) -> None:
        """Each standard's volume from the target at its own band maximum alone (the other
        stocks' absorbance there left out), by the library's ε, its label and the nominal path;
        mixed once, read once unblanked, submitted."""
        from labtools.simulators.families.target_expert import library_basis, mix_once

        call = caller(session)
        nm, od = targets_of(session.observation()["task"])
        basis = library_basis(call, self.stocks, nm)
        volumes = []
        for i, key in enumerate(self.keys):
            at = int(np.argmin(np.abs(nm - analyte(key).peak_nm)))
            volumes.append(max(od[at], 0.0) / basis[at, i])
        well = mix_once(call, self.stocks, WATER, np.array(volumes), look=True)
        call("submit_target", well=well)

    def prior(self, session: Session) -> None:
        """Shortcut: no reading, the target's values unused: each standard at the volume that
        puts its band at the log-centre of the level's optical densities (library ε, label,
        nominal path)."""
        from labtools.simulators.families.target_expert import library_basis, mix_once

        call = caller(session)
        centre = math.sqrt(self.level.od[0] * self.level.od[1])
        peaks = np.array([analyte(k).peak_nm for k in self.keys])
        basis = library_basis(call, self.stocks, peaks)
        volumes = np.array([centre / basis[i, i] for i in range(len(self.keys))])
        call("submit_target", well=mix_once(call, self.stocks, WATER, volumes, look=False))

    def inversion(self, session: Session) -> None:
        """Shortcut: the target inverted without a reading (``colour_matching``'s): each
        standard's absorbance per µL from the library's ε, its label and the nominal path of
        200 µL; the volumes by non-negative least squares; mixed once and submitted."""
        from labtools.simulators.families.target_expert import uncalibrated

        call = caller(session)
        nm, od = targets_of(session.observation()["task"])
        call("submit_target", well=uncalibrated(call, self.stocks, WATER, nm, od, look=False))

    def no_controls(self, session: Session) -> None:
        """Shortcut: the experiment without its controls: :meth:`inversion`'s mix (the
        library's ε, the labels, the nominal path), read once unblanked and submitted as it
        is: no blank, no standard read alone, so no reading to convert a correction with."""
        from labtools.simulators.families.target_expert import uncalibrated

        call = caller(session)
        nm, od = targets_of(session.observation()["task"])
        call("submit_target", well=uncalibrated(call, self.stocks, WATER, nm, od, look=True))


#: the wavelengths the recipe's strongest reading is found over (nm) [A: the stocks' bands,
#: every 2 nm]
WAVELENGTHS_CAP = np.arange(400.0, 701.0, 2.0)


def targets_of(statement: str) -> tuple[np.ndarray, np.ndarray]:
    """The target's wavelengths (nm) and optical densities, as the statement gives them."""
    match = _TARGET.search(statement)
    if match is None:
        raise ValueError("the statement holds no target")
    target = json.loads(match.group())
    return np.array([float(w) for w in target]), np.array([float(v) for v in target.values()])


class Target(LevelledFamily):
    """Prepare a solution that reads as asked (:mod:`.target`)."""

    id = "target"
    title = "Prepare a solution that reads as asked, from certified standards and water"
    members = ("colour_matching",)
    task = TargetTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(tuple(structure.split("+")[:-1]))

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        *keys, kind = structure.split("+")
        names = " + ".join(analyte(k).name for k in keys)
        return {
            "title": f"Prepare a solution of {names} that reads as asked ({kind})",
            "rubric": rubric(tuple(STANDARDS[: len(keys)])),
            "keys": tuple(keys),
            "kind": kind,
        }
