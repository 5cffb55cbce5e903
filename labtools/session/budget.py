"""An episode's budget and what it has used so far."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from labtools.result import ToolResult
from labtools.units import Quantity, magnitude

__all__ = ["Budget", "Usage"]


@dataclass(frozen=True)
class Budget:
    """Limits of one episode; exceeding any truncates it.

    ``reagent_ul``: volume drawn from labelled stocks; ``wells``: distinct plate wells filled.
    """

    calls: int = 200
    tips: int = 96
    reagent_ul: float = 10_000.0
    wells: int = 96
    hours: float = 8.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Usage:
    """Consumables used, counted from the tool calls of the standard instrument surface."""

    calls: int = 0
    tips: int = 0
    reagent_ul: float = 0.0
    wells: set[str] = field(default_factory=set)
    hours: float = 0.0

    def count(self, verb: str, arguments: Any, result: ToolResult, stocks: set[str]) -> None:
        """Account for one call (``verb``: the tool name without its instrument prefix)."""
        self.calls += 1
        if not result.ok or not isinstance(arguments, dict):
            return
        data = result.data or {}
        if verb == "pick_up_tips":
            self.tips += len(arguments["channels"])
        elif verb in (
            "aspirate",
            "dispense",
        ):  # one item per channel; wells as the driver names them
            for item in data.get("items", ()):
                well = item.get("well", "")
                if verb == "aspirate" and well in stocks:
                    self.reagent_ul += _microliters(item)
                if verb == "dispense" and ":" in well and well not in stocks:
                    self.wells.add(well)
        elif verb == "transfer":  # a batch: tips it picked up, stocks drawn, wells filled
            self.tips += int(data.get("tips_used", 0))
            for transfer in arguments["transfers"]:
                if transfer["source"] in stocks:
                    self.reagent_ul += _microliters(transfer)
                well = transfer["destination"]
                if ":" in well and well not in stocks:
                    self.wells.add(well)

    def exceeded(self, budget: Budget) -> list[str]:
        """The budget lines used beyond their limit."""
        over = []
        for name, limit in budget.as_dict().items():
            used = len(self.wells) if name == "wells" else getattr(self, name)
            if used > limit:
                over.append(name)
        return over

    def fraction(self, budget: Budget) -> float:
        """Mean share of the budget used (0 … 1+), for the efficiency term."""
        shares = [
            (len(self.wells) if name == "wells" else getattr(self, name)) / limit
            for name, limit in budget.as_dict().items()
            if limit > 0
        ]
        return sum(shares) / len(shares)

    def as_dict(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "tips": self.tips,
            "reagent_ul": round(self.reagent_ul, 3),
            "wells": len(self.wells),
            "hours": round(self.hours, 4),
        }


def _microliters(data: dict[str, Any]) -> float:
    """The ``volume`` of an item, a transfer or a result (``{value, unit}``) in µL."""
    volume = data.get("volume")
    if not isinstance(volume, dict):
        return 0.0
    return magnitude(Quantity(float(volume["value"]), volume["unit"]), "microliter")
