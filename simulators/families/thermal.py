"""The ``thermal`` family: an enzyme's heat stability, its half-life of first-order
inactivation at a stated temperature, from its activity in the plate reader's heated chamber.

Structures: ``<pair>+<celsius>C`` over the kinetics family's pairs
(:data:`~.kinetics_parts.PAIRS`: alkaline phosphatase, chymotrypsin, β-galactosidase,
acetylcholinesterase with their substrates) and the test temperatures of
:data:`~.thermal_parts.TEMPERATURES` (48-50 °C) at which the enzyme's half-life at the centres
of its published spans lies within 5-120 minutes. Levels (:data:`~.thermal_parts.LEVEL`) set
the enzyme stock's activity, the reader's noise and the budget (fewer wells, fewer hours: the
read that follows a slow enzyme's decay is shorter).

The question: the half-life t½ = ln 2 / k_d (minutes) of the enzyme's activity at the stated
temperature, k_d its first-order inactivation rate constant there.

Hidden truth per seed: everything the kinetics family draws (Km and kcat within the pair's
published spans, the lot's activity, the product's absorptivity in the medium, the buffer's pH,
the stocks, the instruments) and the enzyme's temperature laws (``kinetics.toml``'s
``[enzyme.<key>.temperature]``: the activity left after 10 minutes at 56 °C and unfolding's
activation energy set k_d at the test temperature: a 10-20-fold span of half-lives), each
uniform within its published span; the chamber's sensor offset (±0.2 °C). Only a measurement at
the temperature reveals k_d. What makes the controls matter:

- *the temperature actually reached in the wells*: the chamber's air settles on its setpoint in
  minutes, a plate follows it with a 5-minute lag (``plate_reader.toml``), and with unfolding's
  activation energy of 250-450 kJ/mol a degree below the setpoint slows k_d by a quarter to 40 %.
  Activity read while the plate warms, and incubation counted from when the chamber held its
  setpoint, measure a slower loss than the one asked for; the expert fits only the reads after
  the plate has settled, so that what was lost before sits in the amplitude, not in k_d;
- *time zero in the same read*: rates read in separate reads at different moments of the
  plate's warming differ by kcat's temperature dependence as well as by the loss;
- *the substrate's own hydrolysis*: a slope under every curve that mimics activity not lost.

Reward: raw = exp(−ln²(t̂½/t½)/2τ²) (:func:`~simulators.tasks.enzyme_kinetics.log_term`,
τ = :data:`TAU`), times the process rubric (weight :data:`~.kinetics.PROCESS_WEIGHT`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from labtools.lab import Lab
from labtools.session import Session, Submitted
from labtools.session.process import Component, Rubric, blanks, replicates
from labtools.simulators.families.kinetics import (
    BUFFER,
    CONTAINERS,
    ENZYME,
    PROCESS_WEIGHT,
    STANDARD,
    SUBSTRATE,
    HeatedKineticsTask,
    no_enzyme,
)
from labtools.simulators.families.kinetics_parts import SUBSTRATE_MAX_UL, WELL_UL, label_text, pair
from labtools.simulators.families.levelled import LevelledFamily
from labtools.simulators.families.task import WASTE, WATER
from labtools.simulators.families.thermal_parts import (
    LEVEL,
    celsius_of,
    centre_half_life_min,
    held_out,
    labels,
    structures,
)
from labtools.simulators.tasks.enzyme_kinetics import log_term, positive_value
from labtools.simulators.tasks.scripting import caller
from labtools.tool import Arg, tool
from labtools.units import Range

__all__ = ["TAU", "Thermal", "ThermalTask"]

#: the score's width in ln units [A: a half-life within 10 % keeps 0.88; the chamber's ±0.2 °C
#: sensor offset alone moves k_d by up to 10 % (unfolding's Ea of 250-450 kJ/mol near 50 °C);
#: the published spans (a 10-20-fold span of half-lives) keep little]
TAU = 0.2
#: the prior agent's generic half-life (min) [A: an hour, the middle of the asked range]
GENERIC_MIN = 60.0


@dataclass(frozen=True)
class ThermalLimits:
    """Sane bounds of a submission, far outside any enzyme's."""

    half_life: Range = Range(0.0, 1e7)


RUBRIC = Rubric(
    (
        Component(
            "blank",
            0.3,
            lambda e: blanks(e, [SUBSTRATE, ENZYME], [WATER, BUFFER]),
            "a buffer-only (or empty) well read on each plate with reactions",
        ),
        Component(
            "no_enzyme",
            0.3,
            no_enzyme,
            "the substrate read over time without enzyme (its own hydrolysis, the baseline)",
        ),
        Component(
            "replicates",
            0.4,
            lambda e: replicates(e, [ENZYME], copies=3, conditions=1, mode="kinetic"),
            "the reaction in triplicate, read over time",
        ),
    ),
    weight=PROCESS_WEIGHT,
)


class ThermalTask(HeatedKineticsTask):
    """One instance of :class:`Thermal` (its class attributes set by :meth:`Thermal.build`).
    The wells, stocks and labels are the kinetics family's (no coloured preparation); the
    enzyme's temperature laws are drawn on top."""

    rubric = RUBRIC
    limits = ThermalLimits()  # type: ignore[assignment]
    celsius: ClassVar[float]

    def truth(self, lab: Lab) -> dict[str, float]:
        """The half-life (min) and k_d (s⁻¹) at the stated temperature, and what this seed drew
        (trainers and scoring only)."""
        world = lab.shared["world"]
        self._install(world)
        kd = float(world.kinetics.at_work(self.pair.enzyme, self.celsius)["kd_per_s"])
        return {
            "half_life_min": math.log(2.0) / kd / 60.0,
            "kd_per_s": kd,
            **self.drawn(lab),
        }

    def statement(self, lab: Lab) -> str:
        p = self.pair
        s = label_text(labels(p, self.level)["substrate"] * SUBSTRATE_MAX_UL / WELL_UL)
        ellman = ""
        if p.product == "tnb":
            ellman = " Each thiocholine released reduces the buffer's DTNB to one TNB at once."
        return (
            f"Determine how stable {p.name(p.enzyme)} is at {self.celsius:g} °C in the assay "
            "buffer: the half-life t½ = ln 2 / k_d, in minutes, of its activity held at that "
            "temperature, k_d the first-order rate constant of its inactivation there (it "
            "unfolds when warm). The enzyme turns the colourless substrate "
            f"{p.name(p.substrate)} into {p.name(p.product)}, read at {p.read_nm:g} nm; a well "
            f"holding half its volume of the substrate stock has {s} of it, near saturation."
            f"{ellman} The reservoir holds water ({WATER}), the assay buffer ({BUFFER}), the "
            f"substrate ({SUBSTRATE}), a standard of the product ({STANDARD}) and the enzyme "
            f"({ENZYME}), a waste trough at {WASTE}; their labels (lh_get_deck) give the "
            "concentrations. lh_get_deck shows the deck: two 96-well plates, tip racks, the "
            "plate reader and a spectrometer. The room is at 25 °C; the reader's chamber heats "
            "(reader_set_temperature, reader_get_temperature, reader_stop_heating) and a plate "
            "in it follows the chamber's air minutes later. Reactions and inactivation run "
            "while time passes: reader_read_absorbance_kinetic reads wells repeatedly. Submit "
            "once with submit_thermal. Reward: exp(-ln²(t½ estimate/t½)/2τ²) with "
            f"τ = {TAU}, times how sound the experiment was (a blank, a no-enzyme control, the "
            "reaction in triplicate read over time)."
        )

    @tool(name="submit_thermal", destructive=True)
    async def submit(  # type: ignore[override]
        self,
        half_life: Annotated[
            float,
            Arg("The half-life t½ at the stated temperature, minutes, > 0.", within="half_life"),
        ],
    ) -> Submitted:
        """Submit the half-life. Ends the episode."""
        self.submission = {
            "half_life_min": positive_value(half_life, "half_life", "min"),
        }
        return {"received": True}

    def score(self, lab: Lab) -> dict[str, float]:
        if self.submission is None:
            return {"raw": 0.0}
        truth = self.truth(lab)
        estimate, real = self.submission["half_life_min"], truth["half_life_min"]
        term = log_term(estimate, real, TAU)
        return {"raw": term, "half_life_ratio": estimate / real, "half_life_term": term}

    # -- scripted protocols --------------------------------------------------------------------
    def expert(self, session: Session) -> None:
        """:func:`~.thermal_expert.half_life`: triplicate reactions with a blank and no-enzyme
        wells read at the temperature for the hours the budget leaves; one k_d fitted to the
        reads after the plate has settled."""
        from labtools.simulators.families.thermal_expert import half_life

        minutes = half_life(
            caller(session), self.pair, CONTAINERS, self.celsius, hours=self.budget.hours
        )
        self._submit_thermal(session, minutes)

    def naive(self, session: Session) -> None:
        """:func:`~.thermal_expert.naive`: one well read at once in the heated chamber for half
        an hour, its decay fitted from the first reading (the plate still warming)."""
        from labtools.simulators.families.thermal_expert import naive

        self._submit_thermal(session, naive(caller(session), self.pair, CONTAINERS, self.celsius))

    def prior(self, session: Session) -> None:
        """Shortcut: no reading; a generic hour."""
        self._submit_thermal(session, GENERIC_MIN)

    def inversion(self, session: Session) -> None:
        """Shortcut: no reading; the package's published figures: the half-life at the centres
        of the enzyme's published spans."""
        self._submit_thermal(session, centre_half_life_min(self.pair, self.celsius))

    def no_controls(self, session: Session) -> None:
        """Shortcut: :func:`~.thermal_expert.uncontrolled`: the rate at time zero and after
        half an hour, each in a read of its own, the chamber's setpoint taken as reached at
        once; no blank, no-enzyme well, replicate or settled plate."""
        from labtools.simulators.families.thermal_expert import uncontrolled

        minutes = uncontrolled(caller(session), self.pair, CONTAINERS, self.celsius)
        self._submit_thermal(session, minutes)

    @staticmethod
    def _submit_thermal(session: Session, minutes: float) -> None:
        minutes = minutes if math.isfinite(minutes) and minutes > 0 else 1e6
        caller(session)("submit_thermal", half_life=float(f"{min(minutes, 1e6):.6g}"))


class Thermal(LevelledFamily):
    """An enzyme's half-life of heat inactivation at a stated temperature (:mod:`.thermal`)."""

    id = "thermal"
    title = "Determine an enzyme's half-life of heat inactivation at a stated temperature"
    task = ThermalTask
    LEVEL = LEVEL

    def structures(self) -> list[str]:
        return list(structures())

    def held_out(self, structure: str) -> bool:
        return held_out(structure)

    def parts(self, level: int, structure: str) -> dict[str, Any]:
        key = structure.split("+")[0]
        celsius = celsius_of(structure)
        p = pair(key)
        return {
            "title": f"Half-life of {p.name(p.enzyme)} at {celsius:g} °C",
            "pair_key": p.key,
            "absorber_key": None,
            "celsius": celsius,
        }
