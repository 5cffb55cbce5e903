"""The liquid handler's own checks, run before anything moves.

Each check takes believed volumes in µL (PLR's trackers) and the caller's volume quantity, and
raises the tool error an LLM can act on: the hint states what would be accepted, in the unit the
caller used. Nothing here touches PLR or the world.
"""

from __future__ import annotations

from collections.abc import Callable

import pint

from labtools.errors import Interlock, OutOfRange
from labtools.instruments import TipType
from labtools.units import Quantity, magnitude

__all__ = ["EPS_UL", "Suggest", "check_draw", "check_expel", "check_tip_range", "in_unit"]

#: ``suggest(ul, unit)``: hint text naming the tip rack for ``ul`` µL (``""`` if none), called
#: only when a check refuses
Suggest = Callable[[float, str], str]

#: volumes closer than this (µL) count as equal — the tolerance of PLR's own volume trackers
EPS_UL = 1e-6


def in_unit(ul: float, unit: str) -> str:
    """``ul`` microlitres written in ``unit`` (a pint unit name), e.g. ``"0.25 milliliter"``."""
    value = ul if unit == "microliter" else magnitude(Quantity(ul, "microliter"), unit)
    return f"{max(value, 0.0):.6g} {unit}"


def _unit(volume: pint.Quantity) -> str:
    """The caller's unit name (pint formats it slowly, ~35 µs: only on the error path)."""
    return str(volume.units)


def check_tip_range(
    ul: float,
    volume: pint.Quantity,
    tip_type: TipType,
    field: str = "/volume",
    *,
    suggest: Suggest | None = None,
) -> None:
    """The volume must lie in the mounted tip type's range (``field``: the volume's pointer);
    the refusal's hint names the tip rack to use instead (``suggest``), never clipping."""
    if not tip_type.volume.contains(ul):
        unit = _unit(volume)
        other = suggest(ul, unit) if suggest is not None else ""
        raise OutOfRange(
            f"{volume.magnitude:g} {unit} is outside what a {tip_type.name} tip takes",
            field=field,
            hint=f"with {tip_type.name}: {tip_type.volume.describe(unit)}"
            + (f"; {other}" if other else ""),
        )


def check_draw(
    ul: float,
    volume: pint.Quantity,
    *,
    channel: int,
    tip_type: TipType,
    tip_holds: float,
    well: str,
    well_holds: float,
    dead: float,
    field: str = "/volume",
) -> None:
    """An aspiration of ``ul``: the tip must have room and the well enough above its dead volume."""
    capacity = tip_type.volume.high
    if tip_holds + ul > capacity + EPS_UL:
        unit = _unit(volume)
        raise Interlock(
            f"the {tip_type.name} tip on channel {channel} holds {tip_holds:.4g} µL; "
            f"{ul:.4g} µL more would exceed its {capacity:g} µL",
            field=field,
            hint=f"at most {in_unit(capacity - tip_holds, unit)} (or dispense first)",
        )
    usable = well_holds - dead
    if ul > usable + EPS_UL:
        unit = _unit(volume)
        raise Interlock(
            f"{_well_reach(well, well_holds, dead)}: {ul:.4g} µL would overdraw it",
            field=field,
            hint=f"at most {in_unit(usable, unit)} from {well}"
            if usable > EPS_UL
            else f"{well} has nothing a tip can draw; use another well",
        )


def _well_reach(well: str, holds: float, dead: float) -> str:
    """What a well holds (µL) against its dead volume, worded true for an empty well, one at or
    below its dead volume and one above it."""
    if holds <= EPS_UL:
        return f"{well} is empty"
    if holds <= dead + EPS_UL:
        return (
            f"{well} holds {holds:.4g} µL, all below the tip's reach "
            f"(its dead volume is {dead:.3g} µL)"
        )
    return (
        f"{well} holds {holds:.4g} µL, of which {dead:.3g} µL is below the tip's reach "
        f"(dead volume)"
    )


def check_expel(
    ul: float,
    volume: pint.Quantity,
    *,
    channel: int,
    tip_holds: float,
    well: str,
    well_holds: float,
    well_capacity: float,
    field: str = "/volume",
) -> None:
    """A dispense of ``ul``: the tip must hold it and the well must have room for it."""
    if ul > tip_holds + EPS_UL:
        unit = _unit(volume)
        raise Interlock(
            f"the tip on channel {channel} holds {tip_holds:.4g} µL, less than {ul:.4g} µL",
            field=field,
            hint=(
                f"at most {in_unit(tip_holds, unit)}"
                if tip_holds > EPS_UL
                else "the tip is empty; aspirate first"
            ),
        )
    free = well_capacity - well_holds
    if ul > free + EPS_UL:
        unit = _unit(volume)
        raise Interlock(
            f"{well} holds {well_holds:.4g} of {well_capacity:.4g} µL: {ul:.4g} µL would "
            f"overfill it",
            field=field,
            hint=(
                f"at most {in_unit(free, unit)} into {well}"
                if free > EPS_UL
                else f"{well} is full; use another well"
            ),
        )
