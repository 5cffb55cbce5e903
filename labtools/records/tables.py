"""Plate reads as labs keep them: a tidy CSV (one row per value) and the plate-grid layout
readers export (rows A…, columns 1…, one block per read and wavelength)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable

from labtools.records.readings import Reading

__all__ = ["COLUMNS", "grid_csv", "tidy_csv"]

COLUMNS = (
    "read",
    "measurement",
    "plate",
    "well",
    "row",
    "column",
    "wavelength",
    "excitation",
    "wavelength_unit",
    "time",
    "time_unit",
    "value",
    "unit",
)
_WELL = re.compile(r"([A-Z]+)(\d+)")


def tidy_csv(readings: Iterable[Reading]) -> str:
    """One row per value (:data:`COLUMNS`); an over-range value is an empty ``value``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in readings:
        row, column = _split(r.well)
        nm = r.wavelength is not None or r.excitation is not None
        writer.writerow(
            [
                r.read,
                r.measurement,
                r.plate,
                r.well,
                row,
                column,
                _cell(r.wavelength),
                _cell(r.excitation),
                "nanometer" if nm else "",
                _cell(r.time),
                "second" if r.time is not None else "",
                _cell(r.value),
                r.unit,
            ]
        )
    return out.getvalue()


def grid_csv(readings: Iterable[Reading]) -> str:
    """Each read at each wavelength (and time) as a plate grid under a title line; wells not
    read are empty, over-range values read ``OVRFLW`` as readers print them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    blocks: dict[tuple[object, ...], dict[str, Reading]] = {}
    for r in readings:  # one block per read, wavelength and time, in the order first read
        key = (r.read, r.plate, r.measurement, r.wavelength, r.excitation, r.time)
        blocks.setdefault(key, {})[r.well] = r
    for (read, plate, measurement, nm, ex, time), values in blocks.items():
        rows, columns = _shape(values)
        title = f"read {read}: {plate} {measurement}"
        title += f" ex {ex:g} nm" if ex is not None else ""
        title += f" {nm:g} nm" if nm is not None else ""
        title += f" at {time:g} s" if time is not None else ""
        unit = next(iter(values.values())).unit
        writer.writerow([f"{title} ({unit})"])
        writer.writerow(["", *range(1, columns + 1)])
        for index in range(rows):
            letter = chr(ord("A") + index)
            cells = [values.get(f"{letter}{c}") for c in range(1, columns + 1)]
            writer.writerow([letter, *("" if r is None else _grid_cell(r.value) for r in cells)])
        writer.writerow([])
    return out.getvalue()


def _shape(wells: Iterable[str]) -> tuple[int, int]:
    """8 × 12, or 16 × 24 when a well lies beyond H12."""
    split = [_split(w) for w in wells]
    big = any(len(row) > 1 or row > "H" or column > 12 for row, column in split)
    return (16, 24) if big else (8, 12)


def _split(well: str) -> tuple[str, int]:
    match = _WELL.fullmatch(well)
    return (match[1], int(match[2])) if match else (well, 0)


def _cell(value: float | None) -> str:
    return "" if value is None else repr(value)


def _grid_cell(value: float | None) -> str:
    return "OVRFLW" if value is None else repr(value)
