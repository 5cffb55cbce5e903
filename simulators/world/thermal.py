"""Temperatures in the world: the room, heated chambers (a plate reader's incubator) and the
plates in them, as first-order lags solved exactly over each step of the clock.

A chamber's air approaches its setpoint (the room's temperature when its heater is off) with
time constant τ_c; the plate inside follows the chamber with τ_p; a plate outside every chamber
follows the room with τ_p. Temperatures are kept per *vessel* (the part of a container's name
before ``":"``: ``"plate_1"`` for ``"plate_1:A1"``); a vessel not listed is at the room's
temperature, exactly. A temperature within :data:`SNAP_C` of where it is heading is set there,
so a chamber held at its setpoint, and a plate in it, settle to exact, constant values.

Not modelled: gradients across a plate (the edge wells of real readers run a few tenths of a
degree off), evaporation, the heat of the liquid handler's deck.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from labtools.simulators.world.kinetics_temperature import REFERENCE_C

__all__ = ["ROOM_C", "SNAP_C", "Chamber", "Thermal"]

#: the room's temperature (°C): the reference temperature of the kinetic constants, so plates
#: that are never heated run exactly as without this module [A]
ROOM_C = REFERENCE_C
#: a temperature this close (°C) to where it is heading is set there: far inside a reader's
#: ±0.2 °C stability at 37 °C [V: Agilent BioTek Synergy HTX data sheet]
SNAP_C = 1e-3
#: steps while temperatures change are at most this fraction of the shortest time constant
STEP_FRACTION = 0.05


@dataclass
class Chamber:
    """A heated chamber: air at ``air_c`` (°C) heading for ``setpoint_c`` (``None``: heater
    off, the room), with time constant ``tau_s``; ``plate_tau_s``: how fast a plate inside
    follows the air; ``holds()``: the vessel inside, if any."""

    tau_s: float
    plate_tau_s: float
    holds: Callable[[], str | None]
    air_c: float = ROOM_C
    setpoint_c: float | None = None

    def target(self, room_c: float) -> float:
        return room_c if self.setpoint_c is None else self.setpoint_c


def _lag(start: float, target: float, seconds: float, tau: float) -> float:
    """A first-order lag from ``start`` towards a constant ``target`` after ``seconds``."""
    return target + (start - target) * math.exp(-seconds / tau)


def _follow(
    plate: float, air: float, target: float, seconds: float, tau_air: float, tau_plate: float
) -> float:
    """A plate lagging (τ_p) behind air that lags (τ_c) towards ``target``, after ``seconds``:
    P = S + (P₀ − S − B)e^(−t/τp) + B·e^(−t/τc), B = (C₀ − S)·τc/(τc − τp)."""
    if abs(tau_air - tau_plate) < 1e-9 * tau_plate:  # the limit τc → τp
        a = air - target
        return target + (plate - target + a * seconds / tau_plate) * math.exp(-seconds / tau_plate)
    b = (air - target) * tau_air / (tau_air - tau_plate)
    return (
        target
        + (plate - target - b) * math.exp(-seconds / tau_plate)
        + b * math.exp(-seconds / tau_air)
    )


def _snap(value: float, target: float) -> float:
    return target if abs(value - target) < SNAP_C else value


class Thermal:
    """The room, the chambers and every vessel away from the room's temperature.

    ``room_c``: the room's temperature (°C); ``plate_tau_s``: how fast a plate outside any
    chamber follows the room (s).
    """

    def __init__(self, room_c: float = ROOM_C, plate_tau_s: float = 300.0) -> None:
        if not (math.isfinite(plate_tau_s) and plate_tau_s > 0.0):
            raise ValueError(f"plate_tau_s must be a positive number of seconds, not {plate_tau_s}")
        self.room_c = room_c
        self.plate_tau_s = plate_tau_s
        self.chambers: dict[str, Chamber] = {}
        #: °C of each vessel away from the room's temperature
        self.warm: dict[str, float] = {}

    def reset(self) -> None:
        """Heaters off, chambers and plates at the room's temperature (chambers stay known)."""
        self.warm.clear()
        for chamber in self.chambers.values():
            chamber.air_c, chamber.setpoint_c = self.room_c, None

    def chamber(
        self, name: str, tau_s: float, plate_tau_s: float, holds: Callable[[], str | None]
    ) -> Chamber:
        """The chamber ``name`` (made at the room's temperature, heater off, on first use)."""
        for tau in (tau_s, plate_tau_s):
            if not (math.isfinite(tau) and tau > 0.0):
                raise ValueError(f"time constants must be positive seconds, not {tau}")
        found = self.chambers.get(name)
        if found is None:
            found = self.chambers[name] = Chamber(tau_s, plate_tau_s, holds, self.room_c)
        return found

    def temperature(self, vessel: str) -> float:
        """°C of ``vessel`` (``"plate_1"``; a container name's part before ``":"``)."""
        return self.warm.get(vessel, self.room_c)

    def steady(self) -> bool:
        """Whether nothing changes with time: every chamber at its target, every vessel at
        its chamber's air (or the room's temperature outside one)."""
        inside: dict[str, float] = {}
        for chamber in self.chambers.values():
            if chamber.air_c != chamber.target(self.room_c):
                return False
            vessel = chamber.holds()
            if vessel is not None:
                inside[vessel] = chamber.air_c
        for vessel, celsius in inside.items():
            if self.warm.get(vessel, self.room_c) != celsius:
                return False
        return all(vessel in inside for vessel in self.warm)

    def step_s(self) -> float:
        """The longest step (s) over which temperatures may be taken as constant."""
        taus = [self.plate_tau_s]
        for chamber in self.chambers.values():
            taus += [chamber.tau_s, chamber.plate_tau_s]
        return STEP_FRACTION * min(taus)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: chambers approach their targets, plates their surroundings."""
        room = self.room_c
        inside: set[str] = set()
        for chamber in self.chambers.values():
            target = chamber.target(room)
            vessel = chamber.holds()
            if vessel is not None:
                inside.add(vessel)
                plate = _follow(
                    self.warm.get(vessel, room),
                    chamber.air_c,
                    target,
                    seconds,
                    chamber.tau_s,
                    chamber.plate_tau_s,
                )
            chamber.air_c = _snap(_lag(chamber.air_c, target, seconds, chamber.tau_s), target)
            if vessel is not None:
                self._set(vessel, _snap(plate, chamber.air_c) if chamber.air_c == target else plate)
        for vessel in [v for v in self.warm if v not in inside]:
            self._set(vessel, _snap(_lag(self.warm[vessel], room, seconds, self.plate_tau_s), room))

    def _set(self, vessel: str, celsius: float) -> None:
        if celsius == self.room_c:
            self.warm.pop(vessel, None)
        else:
            self.warm[vessel] = celsius
