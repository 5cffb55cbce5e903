"""Calibrate on part of a real plate, predict the held-out part with the twin itself.

:func:`gen5_holdout` splits a real Gen5 path-check plate (:mod:`.real_gen5`: a checkerboard),
fits the profile keys the calibration half identifies (maximum likelihood under the twin's
model, each with its 95 % interval), and predicts each held-out well's two reported values with
K replicate virtual labs: ``Lab.virtual(seed, profile=...)`` on the fitted profile (its fitted
values drawn per replicate from their intervals, :class:`~.predictive.Predictive`), each
plate's wells filled with water at their class's volume, moved into the reader and read at
977 and 900 nm through the tools, the reads rounded to the export's resolution. The groups:

- ``path check``: the 977 − 900 nm difference of each held-out well (the path);
- ``baseline``: its 900 nm read (the plate's blank, the well's offset, read noise, defects).

The default beside it is the published profile with only what the plate cannot tell the twin
taken from the calibration half: each class's volume (the water column that gives the class's
mean 977 − 900 nm difference under the published twin). Coverage and the two-sample test are
:func:`~.compare.compare_group`'s. A real plate's wells are one plate: the replicates are
plates, and a reading's coverage is of its well's predictive distribution over plates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labtools.simulators.calibration.fitted import fitted_profile
from labtools.simulators.fidelity.compare import compare_group
from labtools.simulators.fidelity.predictive import Predictive
from labtools.simulators.fidelity.real_gen5 import (
    CLASSES,
    Gen5Plate,
    Well,
    column_of_volume,
    delta_alpha,
    fit,
    read_plate,
    split,
    volume_of_column,
)
from labtools.simulators.profile import Parameter, Profile
from labtools.simulators.published import published

__all__ = ["FIRST_SEED", "GROUPS", "default_volumes", "gen5_holdout", "predict_plate"]

#: the first replicate's seed, far from the seeds labs and tests use [A: as fidelity's]
FIRST_SEED = 2_000_000
#: the stream of the PIT's tie-breaking draws [A: any fixed constant]
_PIT_STREAM = 0x7E5
GROUPS = ("path check", "baseline")
_PLATE = "plate_1"


def _observed(wells: Sequence[Well]) -> dict[str, dict[str, float]]:
    return {
        "path check": {w.name: w.difference for w in wells},
        "baseline": {w.name: w.r900 for w in wells},
    }


def predict_plate(
    profile: Profile,
    volumes_ul: Mapping[str, float],
    plate: Gen5Plate,
    wells: Sequence[Well],
    replicates: int,
    *,
    first_seed: int = FIRST_SEED,
    draw: bool = True,
) -> list[dict[str, dict[str, float]]]:
    """Each replicate's readings of ``wells`` (:data:`GROUPS`): the twin's plate filled as the
    real one (each well with water at its class's volume), read at 977 and 900 nm through the
    tools, each read rounded to the export's resolution. ``draw``: each replicate's fitted
    values drawn from their intervals (:class:`~.predictive.Predictive`); else ``profile``'s
    own values in every replicate (plates simulated from a fit's point estimate)."""
    from labtools.lab import Lab
    from labtools.simulators.world import Mixture

    predictive = Predictive(profile)
    names = {w.name for w in wells}
    out = []
    for seed in range(first_seed, first_seed + replicates):
        lab = Lab.virtual(seed, profile=predictive.profile(seed) if draw else profile)
        try:
            world = lab.shared["world"]
            for well in plate.wells:
                world.fill(f"{_PLATE}:{well.name}", Mixture.solution(volumes_ul[well.kind], {}))
            moved = lab.call("lh_move_plate", {"plate": _PLATE, "destination": "reader"})
            if not moved.ok:
                raise RuntimeError(f"the twin's plate did not move: {moved.error}")
            reads = {}
            for nm in (977, 900):
                result = lab.call(
                    "reader_read_absorbance",
                    {
                        "plate": _PLATE,
                        "wavelength": {"value": nm, "unit": "nanometer"},
                        "wells": [],
                    },
                )
                if not result.ok or result.data is None:
                    raise RuntimeError(f"the twin's read failed: {result.error}")
                values = result.data["values"]
                reads[nm] = {n: float(np.round(values[n] / plate.step) * plate.step) for n in names}
        finally:
            lab.close()
        out.append(
            {
                "path check": {n: reads[977][n] - reads[900][n] for n in names},
                "baseline": dict(reads[900]),
            }
        )
    return out


def default_volumes(calibration: Sequence[Well]) -> dict[str, float]:
    """Each class's volume (µL) under the published twin: the column whose mean 977 − 900 nm
    difference is the calibration wells' mean (the published gain error's mean is 0)."""
    dalpha = delta_alpha()
    out = {}
    for kind in CLASSES:
        here = [w.difference for w in calibration if w.kind == kind]
        if here:
            out[kind] = volume_of_column(float(np.mean(here)) * 10.0 / dalpha)
    return out


def fitted_twin(result: Mapping[str, Any], origin: str) -> Profile:
    """The published profile with ``result``'s fitted values laid over it, and the values the
    plate cannot tell apart from the blank fixed at their centre (``result["fixed"]``)."""
    profile = fitted_profile(result, origin=origin)
    base = published()
    fixed = {
        key: Parameter(key, base[key].unit, value, fitted_from=f"{origin}: {why}")
        for key, value in result["fixed"].items()
        for why in [result["not_identified"].get(key, "fixed")]
    }
    return profile.with_values(fixed, name=profile.name, description=profile.description)


def gen5_holdout(
    path: str | Path, *, replicates: int = 40, seed: int = 0, defects: bool = True
) -> dict[str, Any]:
    """The held-out half of a Gen5 path-check plate, predicted after calibration on the other
    half and by the published profile (module docstring)::

        {"dataset", "split", "calibration": {"parameters", "volumes_ul", ...},
         "calibrated": {"path check": compare_group(...), "baseline": ...},
         "default": {...}, "default_volumes_ul": {...}, "replicates"}
    """
    plate = read_plate(path)
    calibration, held_out = split(plate)
    result = fit(calibration, plate.step, defects=defects)
    volumes = {k: float(v["value"]) for k, v in result["volumes_ul"].items()}
    twin = fitted_twin(result, f"{Path(path).name}, calibration half")
    default = default_volumes(calibration)
    observed = _observed(held_out)
    rng = np.random.default_rng([seed, _PIT_STREAM])
    report: dict[str, Any] = {
        "dataset": plate.source,
        "split": "checkerboard: (row + column) even calibrates, odd is held out",
        "wells": {"calibration": len(calibration), "held_out": len(held_out)},
        "replicates": replicates,
        "calibration": {k: v for k, v in result.items() if k != "fixed"},
        "default_volumes_ul": default,
        "columns_mm": {k: column_of_volume(v) for k, v in volumes.items()},
    }
    for name, profile, used in (("calibrated", twin, volumes), ("default", published(), default)):
        predicted = predict_plate(profile, used, plate, held_out, replicates)
        report[name] = {
            group: compare_group(observed[group], [r[group] for r in predicted], rng)
            for group in GROUPS
        }
    return report
