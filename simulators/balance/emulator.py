"""An MT-SICS balance emulator: bytes in, bytes out, weighing what the world holds on its pan.

Protocol handling here; what water weighs and how fast it evaporates is :mod:`.physics`. The pan
carries a weighing vessel, a container of the world (``"weighing_vessel"`` in the virtual lab)
that the liquid handler dispenses into. The balance reads, in grams:

    load    = vessel + V · ρw(T) · (1 − ρa/ρw) / (1 − ρa/ρref)    (conventional mass, in air)
    reading = load − zero point − tare + ε,   ε ~ N(0, repeatability²), rounded to readability

with ρw the density of water at the vessel's temperature in the world. What differs between
units comes from the world's profile (``simulators/data/published_profile.toml``,
``[balance.*]``), each drawn once per seed as hidden truth where the profile gives a prior:
the model's repeatability and settling time (``balance.<MODEL>.repeatability``,
``.settling_time``; the model record's figures where the profile has no such key), the empty
vessel's mass (``balance.vessel.mass``) and the draft shield's humidity
(``balance.evaporation.humidity``), as ``<name>/repeatability_g``, ``<name>/settling_s``,
``<name>/vessel_g`` and ``<name>/humidity``. The balance was switched on with the
vessel on its pan, so its initial zero took the vessel (an initial zero-setting range of 20 % of
capacity [L: OIML R 76-1]) and zeroing later is allowed within ±2 % of that zero. After the load
changes (a dispense), the display settles over the model's settling time: an immediate reading
(``SI``) meanwhile is dynamic (status ``D``) and off by a decaying part of the change; a stable
one (``S``, ``T``, ``Z``) waits on the world's clock until it has settled. Water evaporates from
the open vessel as the clock advances (its volume falls, its solutes stay), at the rate
:class:`Evaporation` gives for the liquid's depth in the vessel; the balance does not count that
slow drift as a change of load. Noise comes from ``world.stream(name)`` only. Resetting the
world switches the balance off and on: zero point at what is on the pan, no tare, and the serial
number and vessel of the new seed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from labtools.drivers.mettler import commands as c
from labtools.drivers.mettler.models import BalanceModel, get_model
from labtools.drivers.mettler.protocol import TERMINATOR, status_line, text_line, weight_line
from labtools.simulators.balance.physics import Evaporation, buoyancy_factor, water_density
from labtools.simulators.world import World

__all__ = ["SICSEmulator", "Vessel"]

log = logging.getLogger(__name__)

#: a change of load (g) smaller than this is not a change (float round-off)
_CHANGE_G = 1e-9
#: the zero-setting range, ± this fraction of capacity around the power-on zero [A: balances
#: allow about ±2 %; OIML R 76-1 permits at most 4 % of Max [L]]
ZERO_RANGE = 0.02
#: the initial zero-setting range at switching on: up to this fraction of capacity [L: OIML
#: R 76-1, at most 20 % of Max]
INITIAL_ZERO_RANGE = 0.2
#: overload is shown above capacity plus 9 scale intervals [L: OIML R 76-1]
OVERLOAD_INTERVALS = 9
#: longest command line the balance buffers before answering a syntax error [A]
MAX_LINE = 128


class Vessel:
    """The weighing vessel on the pan: a glass cylinder of ``diameter_mm`` inner diameter and
    ``depth_mm`` depth, whose empty mass (conventional, g) is drawn per seed within
    ``mass_g``; ``container``: its name in the world."""

    def __init__(
        self,
        container: str = "weighing_vessel",
        *,
        diameter_mm: float = 20.0,
        depth_mm: float = 40.0,
        mass_g: tuple[float, float] = (20.0, 30.0),
    ) -> None:
        self.container = container
        self.diameter_mm = diameter_mm
        self.depth_mm = depth_mm
        #: the empty mass's range where the world's profile has no ``balance.vessel.mass``
        self.mass_g = mass_g
        #: evaporation at the published humidity; the emulator draws its own per seed
        self.evaporation = Evaporation(diameter_mm / 2000.0, depth_mm / 1000.0)

    def liquid_height_m(self, volume_ul: float) -> float:
        area_mm2 = math.pi * (self.diameter_mm / 2.0) ** 2
        return volume_ul / area_mm2 / 1000.0


class SICSEmulator:
    """An emulated Mettler Toledo balance of ``model`` with ``vessel`` on its pan in ``world``.

    ``name`` names its noise stream ``world.stream(name)`` and its hidden truth
    (``<name>/vessel_g``).
    """

    def __init__(
        self,
        world: World,
        model: str = "XPR205",
        *,
        name: str = "balance",
        vessel: Vessel | None = None,
        serial_number: str | None = None,
    ) -> None:
        self.model: BalanceModel = get_model(model)
        self.world = world
        self.name = name
        self.vessel = vessel or Vessel()
        self._rng = world.stream(name)
        self._serial_stream = world.stream(f"{name}/serial")
        self._serial_given = serial_number
        self._buffer = bytearray()
        self._handlers: dict[str, Callable[[c.Command], bytes]] = {
            c.WEIGH.code: self._weigh,
            c.WEIGH_IMMEDIATELY.code: self._weigh,
            c.TARE.code: self._tare,
            c.TARE_IMMEDIATELY.code: self._tare,
            c.ZERO.code: self._zero,
            c.ZERO_IMMEDIATELY.code: self._zero,
            c.IDENTIFY_TYPE.code: self._identify_type,
            c.IDENTIFY_SERIAL.code: self._identify_serial,
            c.RESET.code: self._reset,
        }
        self._power_on()
        world.on_reset(self._power_on)
        world.clock.watch(self._time_passes)

    # -- switching on --------------------------------------------------------------------------
    def _power_on(self) -> None:
        """Zero at what is on the pan, no tare, the seed's serial number, vessel and unit."""
        low, high = self.vessel.mass_g
        model = self.model.name
        self.vessel_g: float = self._drawn(
            "vessel_g", "balance.vessel.mass", "gram", lambda rng: float(rng.uniform(low, high))
        )
        #: this unit's repeatability (g, 1 sd) and settling time (s)
        self.repeatability_g: float = self._drawn(
            "repeatability_g",
            f"balance.{model}.repeatability",
            "gram",
            lambda _: self.model.repeatability_g,
        )
        self.settling_s: float = self._drawn(
            "settling_s",
            f"balance.{model}.settling_time",
            "second",
            lambda _: self.model.settling_s,
        )
        humidity = self._drawn(
            "humidity",
            "balance.evaporation.humidity",
            "dimensionless",
            lambda _: self.vessel.evaporation.humidity,
        )
        self.evaporation = replace(self.vessel.evaporation, humidity=humidity)
        drawn = f"B{int(self._serial_stream.integers(10**9)):09d}"
        self.serial_number = self._serial_given or drawn
        self.tare_g: float | None = None
        self._buffer.clear()
        self._seen_g = self.load_g()
        self.initial_zero_g = (
            self._seen_g if self._seen_g <= INITIAL_ZERO_RANGE * self.model.capacity_g else 0.0
        )
        self.zero_g = self.initial_zero_g
        self._settled_from_g = self._seen_g
        self._changed_at = -math.inf

    def _drawn(self, own: str, key: str, unit: str, otherwise: Callable[[Any], float]) -> float:
        """This seed's ``<name>/<own>``: the profile's ``key`` (in ``unit``), drawn from the
        hidden-truth stream where it is a prior; ``otherwise`` where the profile lacks it."""
        profile = self.world.profile
        if key not in profile:
            return float(self.world.hidden(f"{self.name}/{own}", otherwise))
        parameter = profile[key].in_unit(unit)
        return float(self.world.hidden(f"{self.name}/{own}", parameter.draw))

    # -- the world -----------------------------------------------------------------------------
    def load_g(self) -> float:
        """What the pan carries, as a balance in air reads it (g): vessel and water."""
        contents = self.world.peek(self.vessel.container)
        rho = water_density(self.world.temperature(self.vessel.container))
        liquid_g = contents.volume_ul * 1e-3 * rho * buoyancy_factor(rho)
        return self.vessel_g + liquid_g

    def _notice(self) -> None:
        """A change of load since last seen (a dispense) starts the display settling."""
        load = self.load_g()
        if abs(load - self._seen_g) > _CHANGE_G:
            now = self.world.clock.now()
            self._settled_from_g = self._displayed(now, self._seen_g)  # shown just before
            self._changed_at = now
            self._seen_g = load

    def _time_passes(self, seconds: float) -> None:
        """The clock's watcher: note what was put on the pan, then let water evaporate."""
        self._notice()
        contents = self.world.peek(self.vessel.container)
        if contents.volume_ul <= 0.0:
            return
        celsius = self.world.temperature(self.vessel.container)
        height = self.vessel.liquid_height_m(contents.volume_ul)
        lost_ul = self.evaporation.rate_g_s(celsius, height) * seconds
        lost_ul /= water_density(celsius) * 1e-3  # g → µL
        mixture = self.world.contents(self.vessel.container)
        mixture.volume_ul = max(mixture.volume_ul - lost_ul, 0.0)  # the solutes stay
        self._seen_g = self.load_g()

    # -- the display ---------------------------------------------------------------------------
    def _settling_left(self) -> float:
        return max(self._changed_at + self.settling_s - self.world.clock.now(), 0.0)

    def _displayed(self, now: float, load: float) -> float:
        """The gross value the balance's filter shows at ``now`` (g, before noise) with
        ``load`` on the pan: the load, plus what is left of the last change while it settles."""
        settle = self.settling_s
        if settle <= 0.0 or now - self._changed_at >= settle:
            return load
        left = 1.0 - (now - self._changed_at) / settle
        return load + (self._settled_from_g - load) * left**3

    def _read(self, *, stable: bool) -> tuple[float, bool] | bytes:
        """The gross reading (g, with noise, not rounded) and whether it is stable; a status
        (``I``) when a stable reading does not come within the balance's timeout."""
        self._notice()
        if stable:
            wait = self._settling_left()
            if wait > self.model.stable_timeout_s:
                self.world.clock.advance(self.model.stable_timeout_s)
                return b"I"
            if wait > 0.0:
                self.world.clock.advance(wait)
                self._notice()
        now = self.world.clock.now()
        settled = self._settling_left() <= 0.0
        value = self._displayed(now, self.load_g()) - self.zero_g
        noise = self.repeatability_g * float(self._rng.standard_normal())
        return value + noise, settled

    def _over(self, gross: float) -> str:
        cap = self.model.capacity_g
        if gross > cap + OVERLOAD_INTERVALS * self.model.readability_g:
            return "+"
        if gross < -ZERO_RANGE * cap:
            return "-"
        return ""

    def _round(self, grams: float) -> float:
        d = self.model.readability_g
        return round(grams / d) * d

    # -- commands ------------------------------------------------------------------------------
    def _weigh(self, command: c.Command) -> bytes:
        read = self._read(stable=command.waits_for_stability)
        if isinstance(read, bytes):
            return status_line(command.reply_id, read.decode())
        gross, stable = read
        limit = self._over(gross)
        if limit:
            return status_line(command.reply_id, limit)
        net = gross - (self.tare_g or 0.0)
        status = "S" if stable else "D"
        return weight_line(command.reply_id, status, self._round(net), self.model.decimals)

    def _tare(self, command: c.Command) -> bytes:
        read = self._read(stable=command.waits_for_stability)
        if isinstance(read, bytes):
            return status_line(command.reply_id, read.decode())
        gross, stable = read
        limit = self._over(gross)  # the taring range is the weighing range
        if limit:
            return status_line(command.reply_id, limit)
        self.tare_g = self._round(gross)
        status = "S" if stable else "D"
        return weight_line(command.reply_id, status, self.tare_g, self.model.decimals)

    def _zero(self, command: c.Command) -> bytes:
        read = self._read(stable=command.waits_for_stability)
        if isinstance(read, bytes):
            return status_line(command.reply_id, read.decode())
        gross, stable = read
        zero = self.zero_g + gross  # the new zero point
        limit = ZERO_RANGE * self.model.capacity_g
        if zero - self.initial_zero_g > limit:
            return status_line(command.reply_id, "+")
        if zero - self.initial_zero_g < -limit:
            return status_line(command.reply_id, "-")
        self.zero_g = zero
        self.tare_g = None
        if command.code == c.ZERO.code:
            return status_line(command.reply_id, "A")
        return status_line(command.reply_id, "S" if stable else "D")

    def _identify_type(self, command: c.Command) -> bytes:
        model = self.model
        text = f"{model.name} {model.capacity_g:.{model.decimals}f} g"
        return text_line(command.reply_id, "A", text)

    def _identify_serial(self, command: c.Command) -> bytes:
        return text_line(command.reply_id, "A", self.serial_number)

    def _reset(self, command: c.Command) -> bytes:
        """``@``: as after switching on, without zeroing: the tare is cleared."""
        self.tare_g = None
        return text_line(command.reply_id, "A", self.serial_number)

    # -- bytes ---------------------------------------------------------------------------------
    def feed(self, data: bytes) -> bytes:
        """Take host bytes (any chunking); return the answers to every line they complete."""
        self._buffer += data
        out = bytearray()
        while True:
            end = self._buffer.find(TERMINATOR)
            if end < 0:
                if len(self._buffer) > MAX_LINE:
                    self._buffer.clear()
                    out += status_line("ES")
                break
            line = bytes(self._buffer[:end])
            del self._buffer[: end + len(TERMINATOR)]
            out += self.answer(line)
        return bytes(out)

    def answer(self, line: bytes) -> bytes:
        """The answer to one command line (without its CR LF)."""
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError:
            return status_line("ET")
        words = text.split(" ")
        command = c.BY_CODE.get(words[0])
        if command is None or len(words) != 1:  # unknown, lower case, or parameters
            log.debug("syntax error: %r", text)
            return status_line("ES")
        return self._handlers[command.code](command)
