"""A whole calibration: every run on a lab, then every fit, in ``labtools calibrate``'s shape.

``calibrate(lab)`` makes the runs of :mod:`.protocol` and :mod:`.gravimetric` through
``lab.call`` (a real lab or a virtual one alike) and fits them (:mod:`.fit_reader`,
:mod:`.fit_gravimetric` or :mod:`.fit_pipetting`, :mod:`.fit_spectrometer`);
``fit_records(records)`` fits saved run records. The pipetting check is gravimetric (ISO
8655-6, the run ``"gravimetric"``) where the lab has a balance (a ``balance_*`` tool), and
photometric (ISO 8655-7, the run ``"pipetting"``) where it has none; both write the same profile
keys, and ``runs`` names the one made (``"method"``). The result is JSON-able::

    {"parameters": {"<dotted profile key>": {"value", "unit", "ci95": [lo, hi], "interval"}},
     "derived": {...}, "not_identified": {"<key>": "why"},
     "runs": {"reader": {"calls", "tools", "virtual_s"},
              "gravimetric": {..., "method": "gravimetric"}, ...},
     "records": {...}}                       # with keep_records=True

On the virtual lab (which has a balance) the runs take 961 tool calls (gravimetric 858,
reader 91, spectrometer 12) and 3,731 s of virtual time; the fits about 2 s of wall time.
The photometric runs instead: 414 calls (reader 91, pipetting 311, spectrometer 12), 2,643 s,
and about 10 s of fitting [C: tests/test_calibration_protocol.py,
tests/test_calibration_gravimetric.py].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from labtools.errors import InvalidArguments
from labtools.simulators.calibration.fit_gravimetric import fit_gravimetric
from labtools.simulators.calibration.fit_pipetting import fit_pipetting
from labtools.simulators.calibration.fit_reader import fit_reader
from labtools.simulators.calibration.fit_spectrometer import fit_spectrometer
from labtools.simulators.calibration.gravimetric import gravimetric_run
from labtools.simulators.calibration.protocol import (
    pipetting_run,
    reader_run,
    spectrometer_run,
)

__all__ = ["METHODS", "RUNS", "calibrate", "fit_records", "pipetting_method", "run_all"]

#: every run, in the order a lab makes those it makes: the gravimetric check first (on the
#: virtual lab the water column holds its largest round only before the reader run has used
#: two thirds of it), the reader's before the photometric check (whose fit uses the reader's
#: gain, stray light, noise and dye lot); a lab makes "gravimetric" or "pipetting", not both
RUNS = ("gravimetric", "reader", "pipetting", "spectrometer")
_RUN: dict[str, Callable[[Any], dict[str, Any]]] = {
    "gravimetric": gravimetric_run,
    "reader": reader_run,
    "pipetting": pipetting_run,
    "spectrometer": spectrometer_run,
}
#: the pipetting check's methods: ``auto`` chooses by the lab's tools
METHODS = ("auto", "gravimetric", "photometric")


def pipetting_method(lab: Any, method: str = "auto") -> str:
    """``"gravimetric"`` or ``"photometric"``: ``method``, or for ``"auto"`` gravimetric where
    ``lab`` has a balance (a ``balance_*`` tool)."""
    if method not in METHODS:
        raise InvalidArguments(
            f"pipetting must be one of {', '.join(METHODS)}, not {method!r}",
            field="pipetting",
            hint="gravimetric needs a balance tool; photometric the reader and the dye",
        )
    if method != "auto":
        return method
    names = lab.tool_names()
    return "gravimetric" if any(name.startswith("balance_") for name in names) else "photometric"


def run_all(lab: Any, *, pipetting: str = "auto") -> dict[str, dict[str, Any]]:
    """Every run's record, in the order made (:data:`RUNS`): the reader's, the spectrometer's
    and the pipetting check by :func:`pipetting_method`."""
    check = "gravimetric" if pipetting_method(lab, pipetting) == "gravimetric" else "pipetting"
    return {name: _RUN[name](lab) for name in RUNS if name in (check, "reader", "spectrometer")}


def fit_records(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Fit whichever runs ``records`` holds (keys of :data:`RUNS`). Where both pipetting checks
    are there, the gravimetric one's values are the parameters and the photometric one's go to
    ``derived`` as ``<key>.photometric``."""
    fits: dict[str, dict[str, Any]] = {}
    if "reader" in records:
        fits["reader"] = fit_reader(records["reader"])
    if "pipetting" in records:
        fits["pipetting"] = fit_pipetting(records["pipetting"], fits.get("reader"))
    if "gravimetric" in records:
        fits["gravimetric"] = fit_gravimetric(records["gravimetric"])
        photometric = fits.get("pipetting")
        if photometric is not None:
            params = photometric.pop("parameters")
            photometric["derived"].update({f"{k}.photometric": v for k, v in params.items()})
    if "spectrometer" in records:
        fits["spectrometer"] = fit_spectrometer(records["spectrometer"])
    out: dict[str, Any] = {"parameters": {}, "derived": {}, "not_identified": {}}
    for fit in fits.values():
        for part in out:
            out[part].update(fit.get(part, {}))
    out["runs"] = {
        name: {k: record[k] for k in ("calls", "tools", "virtual_s", "method") if k in record}
        for name, record in records.items()
    }
    return out


def calibrate(lab: Any, *, keep_records: bool = False, pipetting: str = "auto") -> dict[str, Any]:
    """Run the whole protocol on ``lab`` and fit it (see the module docstring); ``pipetting``:
    the volume check's method (:data:`METHODS`)."""
    records = run_all(lab, pipetting=pipetting)
    result = fit_records(records)
    if keep_records:
        result["records"] = records
    return result
