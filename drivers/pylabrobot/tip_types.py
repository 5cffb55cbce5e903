"""Tip types as the liquid-handler driver configures them: a name and the volumes one
aspiration with such a tip may take, matched to PyLabRobot tips by their nominal volume."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from labtools.config import ConfigError
from labtools.drivers.pylabrobot.plr import Tip
from labtools.errors import brief
from labtools.instruments import TipType
from labtools.units import Range

__all__ = ["DEFAULT_TIP_TYPES", "nominal_ul", "parse_tip_types"]

UL = "microliter"
#: tip type name → [smallest, largest, precise from] volume per aspiration (µL); a PLR tip
#: belongs to the type whose largest volume equals the tip's nominal (rated working) volume.
#: Smaller volumes are refused (the hint names a rack whose tips take them); volumes from the
#: smallest up to "precise from" are pipetted with a larger relative error, and lh_transfer
#: notes them with the rack to use instead. The 10 and 50 µL tips take 10–100 % of nominal, the
#: range ISO 8655-2:2022 tests (100, 50 and 10 % of nominal [V: physics reference §2]); the 300
#: and 1000 µL ranges are this driver's earlier ones [A]; "precise from" is the smallest volume
#: a published row covers for the tip (simulators/data/pipetting.toml, its sources).
DEFAULT_TIP_TYPES: Mapping[str, Sequence[float]] = MappingProxyType(
    {
        "tip_10ul": (1.0, 10.0, 1.0),
        "tip_50ul": (5.0, 50.0, 5.0),
        "tip_300ul": (1.0, 300.0, 10.0),
        "tip_1000ul": (10.0, 1000.0, 100.0),
    }
)


def nominal_ul(tip: Tip) -> float:
    """A PLR tip's nominal volume (µL): ``nominal_volume`` where it has one, else its maximal."""
    return float(getattr(tip, "nominal_volume", None) or tip.maximal_volume)


def parse_tip_types(
    raw: Mapping[str, Sequence[float]],
) -> tuple[dict[float, TipType], dict[float, float]]:
    """Tip types keyed by their largest volume (the nominal volume of their PLR tips), and the
    volume (µL) each is precise from."""
    out: dict[float, TipType] = {}
    precise: dict[float, float] = {}
    for name, bounds in raw.items():
        key = ("tip_types", name)
        try:
            values = [float(b) for b in bounds]
        except (TypeError, ValueError):
            values = []
        three = len(values) == 3
        if len(values) == 2:
            values.append(values[0])
        low, high, precise_from = values if len(values) == 3 else (math.nan,) * 3
        if not (0 < low <= high < math.inf and low <= precise_from <= high):
            shape = (
                "[min, max, precise_from] µL with 0 < min <= precise_from <= max"
                if three
                else "[min, max] µL with 0 < min <= max"
            )
            raise ConfigError(f"give {shape}, not {brief(bounds)}", key=key)
        if high in out:
            raise ConfigError(f"{out[high].name!r} also has {high:g} µL tips", key=key)
        out[high] = TipType(name, Range(low, high, UL))
        precise[high] = precise_from
    if not out:
        raise ConfigError("configure at least one tip type", key="tip_types")
    return out, precise
