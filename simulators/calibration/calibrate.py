"""A whole calibration: every run on a lab, then every fit, in ``labtools calibrate``'s shape.

``calibrate(lab)`` makes the runs of :mod:`.protocol` through ``lab.call`` (a real lab or a
virtual one alike) and fits them (:mod:`.fit_reader`, :mod:`.fit_pipetting`,
:mod:`.fit_spectrometer`); ``fit_records(records)`` fits saved run records. The result is
JSON-able::

    {"parameters": {"<dotted profile key>": {"value", "unit", "ci95": [lo, hi], "interval"}},
     "derived": {...}, "not_identified": {"<key>": "why"},
     "runs": {"reader": {"calls", "tools", "virtual_s"}, ...},
     "records": {...}}                       # with keep_records=True

On the virtual lab the runs take 414 tool calls (reader 91, pipetting 311, spectrometer 12)
and 2,643 s of virtual time, most of it plate reads; the fits take about 10 s of wall time
(the pipetting fit most of it) [C: tests/test_calibration_protocol.py].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labtools.simulators.calibration.fit_pipetting import fit_pipetting
from labtools.simulators.calibration.fit_reader import fit_reader
from labtools.simulators.calibration.fit_spectrometer import fit_spectrometer
from labtools.simulators.calibration.protocol import (
    pipetting_run,
    reader_run,
    spectrometer_run,
)

__all__ = ["RUNS", "calibrate", "fit_records", "run_all"]

#: the runs, in the order they are made (the reader's first: the pipetting fit uses its gain,
#: stray light, noise and dye lot)
RUNS = ("reader", "pipetting", "spectrometer")
_RUN = {"reader": reader_run, "pipetting": pipetting_run, "spectrometer": spectrometer_run}


def run_all(lab: Any) -> dict[str, dict[str, Any]]:
    """Every run's record, in :data:`RUNS` order."""
    return {name: _RUN[name](lab) for name in RUNS}


def fit_records(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Fit whichever runs ``records`` holds (keys of :data:`RUNS`)."""
    fits: dict[str, dict[str, Any]] = {}
    if "reader" in records:
        fits["reader"] = fit_reader(records["reader"])
    if "pipetting" in records:
        fits["pipetting"] = fit_pipetting(records["pipetting"], fits.get("reader"))
    if "spectrometer" in records:
        fits["spectrometer"] = fit_spectrometer(records["spectrometer"])
    out: dict[str, Any] = {"parameters": {}, "derived": {}, "not_identified": {}}
    for fit in fits.values():
        for part in out:
            out[part].update(fit.get(part, {}))
    out["runs"] = {
        name: {k: record[k] for k in ("calls", "tools", "virtual_s") if k in record}
        for name, record in records.items()
    }
    return out


def calibrate(lab: Any, *, keep_records: bool = False) -> dict[str, Any]:
    """Run the whole protocol on ``lab`` and fit it (see the module docstring)."""
    records = run_all(lab)
    result = fit_records(records)
    if keep_records:
        result["records"] = records
    return result
