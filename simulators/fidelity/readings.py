"""The calibration runs' readings, flattened and grouped, so a lab's and a twin's line up.

Each reading is named by where it came from in the run record (the run, the plate read or the
dark, the wavelength, the replicate read, the well or the pixel), which is the same call and
well in every lab that ran the same protocol: the lab's readings and each twin replicate's are
aligned by that name. The groups:

- ``path check``: every well at the water band's wavelengths (977, 900 nm) of the filled reader
  plate: water columns 1-5 and the dye columns, whose path the water band also reads;
- ``dye series``: the dye columns at the visible wavelengths;
- ``blanks``: the empty plate, column 12 and the water columns in the visible (water is clear
  there: they read the plate's blank);
- ``volume checks``: every read of the photometric check's plate (the diluent's blank, then
  each round), or each change of the gravimetric check's balance reading (a delivery, or an
  idle interval's evaporation; not the water drawn back when the vessel is emptied), in
  grams;
- ``spectrometer dark``: every pixel of every dark spectrum (the protocol reads no reference
  spectrum: :func:`labtools.simulators.calibration.protocol.spectrometer_run`).

A reading the instrument reported over its range (``None`` in the record) is ``+inf``: above
every value it could have read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from labtools.simulators.calibration.protocol import PATH_NM

__all__ = ["GROUPS", "readings"]

GROUPS = ("path check", "dye series", "blanks", "volume checks", "spectrometer dark")
_PATH = {str(nm) for nm in PATH_NM}


def readings(records: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{group: {reading name: value}}`` of the run records (``run_all``'s shape); groups
    with no readings are left out."""
    out: dict[str, dict[str, float]] = {}
    for group, name, value in _all(records):
        out.setdefault(group, {})[name] = math.inf if value is None else float(value)
    return {group: out[group] for group in GROUPS if group in out}


def _all(records: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str, float | None]]:
    reader = records.get("reader")
    if reader is not None:
        wells = reader["wells"]
        for phase in ("empty", "filled"):
            for nm, reads in reader[phase]["reads"].items():
                for replicate, values in enumerate(reads):
                    for well, value in values.items():
                        kind = "empty" if phase == "empty" else wells[well]["kind"]
                        yield (
                            _reader_group(kind, nm),
                            f"reader/{phase}/{nm}/{replicate}/{well}",
                            value,
                        )
    pipetting = records.get("pipetting")
    if pipetting is not None:
        for index, read in enumerate(pipetting["rounds"]):
            for nm, reads in read["reads"].items():
                for replicate, values in enumerate(reads):
                    for well, value in values.items():
                        name = f"pipetting/{index}/{nm}/{replicate}/{well}"
                        yield "volume checks", name, value
    gravimetric = records.get("gravimetric")
    if gravimetric is not None:
        weighings = gravimetric["weighings"]
        for index in range(1, len(weighings)):
            now, before = weighings[index], weighings[index - 1]
            if now["event"] == "emptied":
                continue  # the water drawn back: what the design leaves in the vessel
            what = "/".join(f"{now[k]:g}" for k in ("channel", "tip_ul", "volume_ul") if k in now)
            name = f"gravimetric/{index}/{now['event']}" + (f"/{what}" if what else "")
            yield "volume checks", name, now["g"] - before["g"]
    spectrometer = records.get("spectrometer")
    if spectrometer is not None:
        for dark in spectrometer["darks"]:
            ms = f"{dark['integration_ms']:g}"
            for pixel, count in enumerate(dark["counts"]):
                yield "spectrometer dark", f"spectrometer/dark/{ms}/{pixel}", count


def _reader_group(kind: str, nm: str) -> str:
    if kind == "empty":
        return "blanks"
    if nm in _PATH:
        return "path check"
    return "dye series" if kind == "dye" else "blanks"
