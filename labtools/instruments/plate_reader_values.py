"""Shaping a plate reader's numbers: rounding, saturated and over-range wells, kinetic slopes,
and windows of a kept read (``reader_get_data``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pint

from labtools.errors import OutOfRange, UnknownResource, brief
from labtools.instruments.plate_reader_results import ReaderData
from labtools.units import QuantityJSON, qty

__all__ = [
    "choose_wells",
    "echo",
    "od_series",
    "plate_flags",
    "slope_per_minute",
    "split",
    "split_od",
    "window",
]


def echo(quantity: pint.Quantity) -> QuantityJSON:
    """A quantity argument as the caller gave it."""
    return qty(float(quantity.magnitude), str(quantity.units))


def slope_per_minute(times: list[float], values: list[float | None]) -> float | None:
    """Least-squares slope (per minute) of the finite values against time (s); ``None`` with
    fewer than two finite values."""
    points = [(t, v) for t, v in zip(times, values, strict=True) if v is not None]
    if len(points) < 2:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread <= 0.0:
        return None
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread
    return round(60.0 * slope, 6)


def od_series(
    values: dict[str, list[float]], od_max: float
) -> tuple[dict[str, list[float | None]], list[str], list[str]]:
    """Each well's readings rounded to 0.1 mOD, ``None`` where saturated (``inf``) or over-range
    (NaN, or above ``od_max``); the wells with any of each."""
    shown: dict[str, list[float | None]] = {}
    saturated: list[str] = []
    over: list[str] = []
    for well, readings in values.items():
        shown[well] = [round(v, 4) if math.isfinite(v) and v <= od_max else None for v in readings]
        if any(math.isinf(v) for v in readings):
            saturated.append(well)
        if any(math.isnan(v) or (math.isfinite(v) and v > od_max) for v in readings):
            over.append(well)
    return shown, saturated, over


def split_od(
    values: dict[str, float], od_max: float
) -> tuple[dict[str, float], list[str], list[str]]:
    """Readings (OD, rounded to 0.1 mOD) apart from saturated (``inf``) and over-range wells
    (NaN, or above ``od_max``)."""
    shown, saturated, over = od_series({w: [v] for w, v in values.items()}, od_max)
    return {w: v[0] for w, v in shown.items() if v[0] is not None}, saturated, over


def split(values: dict[str, float], digits: int) -> tuple[dict[str, float], list[str]]:
    """Finite readings (rounded) apart from wells with none (``inf`` or NaN from the driver:
    past the detector's range)."""
    finite = {w: round(v, digits) for w, v in values.items() if math.isfinite(v)}
    return finite, [w for w, v in values.items() if not math.isfinite(v)]


def plate_flags(
    values: dict[str, float], unread: Sequence[str], accurate: tuple[float, float]
) -> dict[str, str]:
    """Each flagged well of a reading: ``"high"`` (above the ``accurate`` range, OD),
    ``"low"`` (below it) or ``"unread"`` (no number: over the reader's range or saturated)."""
    low, high = accurate
    flags = {w: "high" if v > high else "low" for w, v in values.items() if not low <= v <= high}
    return flags | dict.fromkeys(unread, "unread")


def choose_wells(wells: Sequence[str], existing: list[str], owner: str, hint: str) -> list[str]:
    """``wells`` once each, in the order given (``existing``, all of them, when empty); a well
    not in ``existing`` refused as ``owner`` not having it, at its place in ``wells``."""
    if not wells:
        return existing
    known = set(existing)
    for i, well in enumerate(wells):
        if well not in known:
            raise UnknownResource(
                f"{owner} has no well {brief(well)}", field=f"/wells/{i}", hint=hint
            )
    return list(dict.fromkeys(wells))


def window(
    handle: str,
    stored: dict[str, Any],
    wells: Sequence[str],
    first: int,
    points: int,
    most: int,
) -> ReaderData:
    """``points`` points from index ``first`` of the kept read ``stored`` (a spectrum's
    wavelengths or a kinetic read's reads) for ``wells`` (all of the read's when empty), at most
    ``most`` values in all. Refuses, pointing at the argument, a well the read did not cover and
    a window past the read's end or over ``most`` values: nothing is cut silently."""
    spectrum = "wavelengths_nm" in stored
    axis: list[float] = stored["wavelengths_nm"] if spectrum else stored["times_s"]
    readings: dict[str, list[float | None]] = stored["absorbance"]
    read = list(readings)
    chosen = choose_wells(wells, read, handle, f"it read {len(read)} wells, {read[0]}–{read[-1]}")
    total = len(axis)
    if first >= total:
        raise OutOfRange(
            f"{handle} has {total} points; index {first} is past its last",
            field="/first",
            hint=f"give a first point from 0 to {total - 1}",
        )
    if first + points > total:
        raise OutOfRange(
            f"{points} points from index {first} run past the read's {total}",
            field="/points",
            hint=f"give at most {_points(total - first)} from index {first}",
        )
    if points * len(chosen) > most:
        raise OutOfRange(
            f"{points} points of {len(chosen)} wells are {points * len(chosen)} values, over "
            f"the {most} a call returns",
            field="/points",
            hint=f"ask for at most {_points(most // len(chosen))} of {len(chosen)} wells, or "
            "fewer wells",
        )
    stop = first + points
    return {
        "data": handle,
        "plate": stored["plate"],
        "axis": "wavelength" if spectrum else "time",
        "axis_values": axis[first:stop],
        "axis_unit": "nanometer" if spectrum else "second",
        "points": total,
        "unit": "OD",
        "values": {w: readings[w][first:stop] for w in chosen},
    }


def _points(count: int) -> str:
    return f"{count} point" if count == 1 else f"{count} points"
