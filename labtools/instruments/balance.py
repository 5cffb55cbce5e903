"""The balance interface: weigh, tare and zero a laboratory balance, and say what it is.

The tools are concrete: they shape results (grams, rounded to the balance's readability) and
keep what the front end knows (the tare in force). A driver implements the hooks: ``_weigh``,
``_tare``, ``_zero`` (each stable or immediate, in grams) and ``_identity``. Refusals are the
driver's typed errors, raised before anything on the balance changed: a stable reading that
does not settle in time is ``timeout``; an overload, ``precondition_failed``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from labtools.instrument import Instrument
from labtools.tool import Arg, tool
from labtools.units import QuantityJSON, qty

__all__ = [
    "GRAM",
    "Balance",
    "BalanceIdentity",
    "BalanceInfo",
    "BalanceLimits",
    "BalanceSnapshot",
    "MassReading",
    "Mode",
    "TareSet",
    "Weighing",
    "ZeroSet",
]

GRAM = "gram"
Mode = Literal["stable", "immediate"]


@dataclass(frozen=True)
class BalanceLimits:
    """What the balance can weigh (g) and how finely it reads (g): a model's datasheet."""

    capacity_g: float = 220.0
    readability_g: float = 1e-5

    @property
    def decimals(self) -> int:
        """Decimal places of a reading in grams (5 for 0.01 mg)."""
        return max(0, round(-math.log10(self.readability_g)))


@dataclass(frozen=True)
class Weighing:
    """What a driver hook returns: grams and whether the balance called the value stable."""

    grams: float
    stable: bool


@dataclass(frozen=True)
class BalanceIdentity:
    """What the balance says it is (``I2``/``I4`` on MT-SICS)."""

    model: str
    serial_number: str
    capacity_g: float


@dataclass(frozen=True)
class BalanceSnapshot:
    """The front end's state, for :meth:`Balance.restore`."""

    tare_g: float | None


class MassReading(TypedDict):
    mass: QuantityJSON
    stable: bool


class TareSet(TypedDict):
    tare: QuantityJSON
    stable: bool


class ZeroSet(TypedDict):
    zeroed: bool
    stable: bool


class BalanceInfo(TypedDict):
    model: str
    serial_number: str
    capacity: QuantityJSON
    readability: QuantityJSON
    tare: QuantityJSON | None


_MODE = "'stable': wait for the balance to settle after a load changes; 'immediate': now."


class Balance(Instrument):
    """A laboratory balance with its weighing vessel on the pan."""

    kind = "balance"
    limits: BalanceLimits

    def __init__(self, name: str, limits: BalanceLimits | None = None) -> None:
        super().__init__(name)
        self.limits = limits or BalanceLimits()
        #: the tare in force as this front end set it (g); None: none set since connecting
        self._tare_g: float | None = None

    @tool(read_only=True)
    async def weigh(self, mode: Annotated[Mode, Arg(_MODE)] = "stable") -> MassReading:
        """Read the mass on the balance (g, net of the tare); ``stable`` false while it
        settles."""
        reading = await self._weigh(stable=mode == "stable")
        return {"mass": self._grams(reading.grams), "stable": reading.stable}

    @tool(idempotent=True)
    async def tare(self, mode: Annotated[Mode, Arg(_MODE)] = "stable") -> TareSet:
        """Store what is on the pan as the tare, so readings show what is added (tare a
        vessel, dispense, weigh: the mass dispensed)."""
        reading = await self._tare(stable=mode == "stable")
        self._tare_g = reading.grams
        return {"tare": self._grams(reading.grams), "stable": reading.stable}

    @tool(idempotent=True)
    async def zero(self, mode: Annotated[Mode, Arg(_MODE)] = "stable") -> ZeroSet:
        """Set the zero point to the present load and clear the tare; only a small load (a
        few % of capacity) can be zeroed: to weigh into a vessel, tare it."""
        stable = await self._zero(stable=mode == "stable")
        self._tare_g = None
        return {"zeroed": True, "stable": stable}

    @tool(read_only=True)
    async def get_info(self) -> BalanceInfo:
        """The balance's model, serial number, capacity and readability, and the tare in force
        (null when none was set since it connected)."""
        identity = self._identity()
        return {
            "model": identity.model,
            "serial_number": identity.serial_number,
            "capacity": qty(identity.capacity_g, GRAM),
            "readability": qty(self.limits.readability_g, GRAM),
            "tare": None if self._tare_g is None else self._grams(self._tare_g),
        }

    # -- helpers -------------------------------------------------------------------------------
    def _grams(self, grams: float) -> QuantityJSON:
        value = round(grams, self.limits.decimals)
        return qty(value + 0.0, GRAM)  # + 0.0: no -0.0

    # -- episodes ------------------------------------------------------------------------------
    def snapshot(self) -> BalanceSnapshot:
        return BalanceSnapshot(self._tare_g)

    def restore(self, snapshot: BalanceSnapshot) -> None:
        self._tare_g = snapshot.tare_g

    def state(self) -> dict[str, Any]:
        return {"tare": None if self._tare_g is None else self._grams(self._tare_g)}

    # -- driver hooks --------------------------------------------------------------------------
    @abstractmethod
    async def _weigh(self, *, stable: bool) -> Weighing:
        """The net weight (g); ``stable``: wait for stability."""

    @abstractmethod
    async def _tare(self, *, stable: bool) -> Weighing:
        """Tare; the tare stored (g)."""

    @abstractmethod
    async def _zero(self, *, stable: bool) -> bool:
        """Zero; whether the zero was set under stable conditions."""

    @abstractmethod
    def _identity(self) -> BalanceIdentity:
        """Model, serial number and capacity as read when connecting."""
