"""Real runs as units: one run of one kind on a fresh day of a lab, and its fit on its own.

A *real run* is what a lab spends instrument time on: one kind of run (:data:`RUN_KINDS`) made
through the lab's tools on a day of its own (a real lab with a fresh deck: new plates, tips and
stocks; a virtual one as ``Lab.virtual(day_seed, profile=hidden)``: the same instruments with the
day's noise, plates and samples). The kinds split :mod:`.calibrate`'s protocol into the parts a
lab can make one at a time:

- ``gravimetric:<tip µL>``: the gravimetric check (ISO 8655-6, :func:`.gravimetric.
  gravimetric_run`) with one tip type at its two test volumes, every channel;
- ``reader``: the path check, dye series and blanks (:func:`.protocol.reader_run`);
- ``spectrometer``: the dark series (:func:`.protocol.spectrometer_run`).

The photometric check (ISO 8655-7, ``pipetting``) is not a unit here: its fit needs the
reader's, so it cannot be made on its own [A: a lab with a balance weighs].

:data:`FIXED_ORDER` is the fixed protocol: :data:`.calibrate.RUNS`' order (gravimetric, reader,
spectrometer) with the gravimetric check's tips in the order :func:`.gravimetric.gravimetric_run`
makes them, repeated from the start once all are made. Each record's cost is its ``calls`` and
``virtual_s``; on the virtual lab [C: measured, ``python -m bench.sweet_spot``]:
``gravimetric:10`` 196 calls and 390 s, ``gravimetric:50`` 203 and 462 s, ``gravimetric:300``
222 and 772 s, ``gravimetric:1000`` 256 and 1,504 s, ``reader`` 91 and 635 s,
``spectrometer`` 12 and 5 s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from labtools.errors import InvalidArguments
from labtools.simulators.calibration.calibrate import fit_records
from labtools.simulators.calibration.gravimetric import GRAVIMETRIC_TESTS, gravimetric_run
from labtools.simulators.calibration.protocol import reader_run, spectrometer_run

__all__ = [
    "FIXED_ORDER",
    "RUN_KINDS",
    "OpenDay",
    "available_kinds",
    "fit_run",
    "fixed_sequence",
    "make_run",
]

#: every kind of real run, in the fixed protocol's order (module docstring)
RUN_KINDS: tuple[str, ...] = (
    *(f"gravimetric:{tip:g}" for tip in sorted(GRAVIMETRIC_TESTS)),
    "reader",
    "spectrometer",
)
FIXED_ORDER = RUN_KINDS
#: a lab for each day: ``open_day(k)`` opens the lab the ``k``-th real run (from 0) is made on
OpenDay = Callable[[int], Any]
#: the tools a kind needs of a lab (the first of each family it calls)
_NEEDS = {
    "gravimetric": "balance_weigh",
    "reader": "reader_read_absorbance",
    "spectrometer": "spec_acquire_dark",
}


def _check(kind: str) -> None:
    if kind not in RUN_KINDS:
        raise InvalidArguments(
            f"no run kind {kind!r}", field="kind", hint=f"kinds: {', '.join(RUN_KINDS)}"
        )


def available_kinds(lab: Any) -> list[str]:
    """The kinds ``lab`` can make (its tools), in :data:`RUN_KINDS`' order."""
    names = set(lab.tool_names())
    return [kind for kind in RUN_KINDS if _NEEDS[kind.partition(":")[0]] in names]


def make_run(lab: Any, kind: str) -> dict[str, Any]:
    """One real run of ``kind`` on ``lab`` (a fresh day's lab): its record, with ``kind``."""
    _check(kind)
    family, _, tip = kind.partition(":")
    if family == "gravimetric":
        record = gravimetric_run(lab, tests={float(tip): GRAVIMETRIC_TESTS[float(tip)]})
    elif family == "reader":
        record = reader_run(lab)
    else:
        record = spectrometer_run(lab)
    return {**record, "kind": kind}


def fit_run(record: dict[str, Any]) -> dict[str, Any]:
    """One record fitted on its own (:func:`.calibrate.fit_records`' shape); a fit that fails
    numerically gives no parameters and says why in ``failed`` (the run's cost is still spent).

    A one-tip gravimetric run of the small tips fills the vessel so little that the evaporation's
    dependence on the fill is not identified, and the balance fit's Hessian can be singular
    (1 of 20 days with 10 µL tips, 3 of 20 with 50 µL on one stand-in lab [C: measured])."""
    name = str(record["run"])
    try:
        with np.errstate(all="ignore"):
            fit = fit_records({name: record})
    except (ValueError, np.linalg.LinAlgError, ArithmeticError) as error:
        fit = {
            "parameters": {},
            "derived": {},
            "not_identified": {},
            "failed": f"{type(error).__name__}: {error}",
        }
    fit["kind"] = record.get("kind", name)
    fit["cost"] = {k: record.get(k) for k in ("calls", "virtual_s")}
    return fit


def fixed_sequence(n: int, kinds: Sequence[str] = FIXED_ORDER) -> list[str]:
    """The fixed protocol's first ``n`` runs: ``kinds`` in order, cycling."""
    return [kinds[i % len(kinds)] for i in range(n)]
