"""Fidelity as a number: the same protocol on a lab and on its twin, compared reading by reading.

:func:`fidelity` runs the calibration protocol (:func:`~labtools.simulators.calibration.run_all`,
the tool calls an agent makes) on ``lab`` — real or virtual — and on K replicates of the twin's
predictive lab (:class:`~labtools.simulators.fidelity.predictive.Predictive`: the twin's fitted
values drawn per replicate from their uncertainty, ``Lab.virtual(seed_k, profile=...)``), lines
their readings up by call and well (:mod:`.readings`) and reports (JSON-able)::

    {"lab", "twin", "replicates", "pipetting", "twin_seeds": [first, last],
     "groups": {"<group>": {"readings", "censored", "coverage": {"50", "90", "95"},
                            "pit_mean", "width90_median", "test": {...}}, ...},
     "overall": {... the same over every reading ...},
     "parameters": {"against": "truth" | "lab fit" | None, "summary": {...}, "z": {key: ...}},
     "rewards": {"tasks": {task: {...}}, "max_abs_gap_twin", "max_abs_gap_default"}
                | {"skipped": "why"},
     "runs": {"lab": {run: calls}}}

Coverage and the two-sample test: :mod:`.compare`; z-scores: :mod:`.parameters`; reward gaps:
:mod:`.rewards`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labtools.errors import InvalidArguments
from labtools.simulators.calibration import fit_records, run_all
from labtools.simulators.calibration.calibrate import pipetting_method
from labtools.simulators.fidelity.compare import compare_group
from labtools.simulators.fidelity.parameters import (
    lab_truth,
    summary,
    z_against_fit,
    z_against_truth,
)
from labtools.simulators.fidelity.predictive import Predictive
from labtools.simulators.fidelity.readings import readings
from labtools.simulators.fidelity.rewards import reward_gaps
from labtools.simulators.profile import Profile
from labtools.simulators.published import load_profile

__all__ = ["REWARD_SEEDS", "TWIN_SEED", "fidelity", "twin_replicates"]

#: the first twin replicate's seed: replicates are seeds TWIN_SEED … TWIN_SEED + K − 1, far from
#: the small seeds labs and tests use, so no replicate shares a lab's noise [A]
TWIN_SEED = 1_000_000
#: the seeds each task's expert plays on every profile (evaluation seeds, under the evaluation
#: secret) [A: three, a few seconds a task]
REWARD_SEEDS = (0, 1, 2)
#: the stream of the PIT's tie-breaking draws [A: any fixed constant]
_PIT_STREAM = 0xF1D


def twin_replicates(
    twin: Profile, replicates: int, *, first_seed: int = TWIN_SEED, pipetting: str = "auto"
) -> list[dict[str, dict[str, float]]]:
    """The protocol's readings (:func:`.readings.readings`) on each of ``replicates`` twin
    replicates of ``twin``'s predictive lab."""
    from labtools.lab import Lab

    predictive = Predictive(twin)
    out = []
    for seed in range(first_seed, first_seed + replicates):
        lab = Lab.virtual(seed, profile=predictive.profile(seed))
        try:
            out.append(readings(run_all(lab, pipetting=pipetting)))
        finally:
            lab.close()
    return out


def _tasks(tasks: Sequence[str] | None) -> list[str]:
    from labtools.session.registry import task_ids

    known = task_ids()
    if tasks is None:
        return known
    if isinstance(tasks, str):
        raise InvalidArguments("tasks must be a list of task ids, not one string", field="tasks")
    unknown = [t for t in tasks if t not in known]
    if unknown:
        raise InvalidArguments(
            f"no task {unknown[0]!r}", field="tasks", hint=f"tasks: {', '.join(known)}"
        )
    return list(tasks)


def fidelity(
    lab: Any,
    twin_profile: Profile | str | Path,
    *,
    replicates: int = 20,
    tasks: Sequence[str] | None = None,
    reward_seeds: Sequence[int] = REWARD_SEEDS,
    seed: int = 0,
    fit_lab: bool | None = None,
    pipetting: str = "auto",
) -> dict[str, Any]:
    """How closely ``twin_profile``'s twin reproduces ``lab`` (module docstring).

    ``replicates``: twin replicates (K ≥ 2; the coverage's resolution is about 1/K of a
    reading, the Monte Carlo p-value's 1/(K+1)); ``tasks``: task ids for the reward gap (all
    built-in tasks by default, ``()`` for none); ``seed``: of the PIT's tie-breaking;
    ``fit_lab``: fit the lab's own runs for the z-scores (by default only when its truth is
    unknown: a real lab); ``pipetting``: the volume check's method on both
    (:data:`labtools.simulators.calibration.calibrate.METHODS`; ``auto``: gravimetric where
    the lab has a balance). Bad arguments raise :class:`~labtools.errors.InvalidArguments`
    before any call is made.
    """
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 2:
        raise InvalidArguments(
            f"replicates must be a whole number ≥ 2, not {replicates!r}", field="replicates"
        )
    chosen = _tasks(tasks)
    method = pipetting_method(lab, pipetting)
    twin = load_profile(twin_profile)
    predictive = Predictive(twin)
    records = run_all(lab, pipetting=method)
    truth = lab_truth(lab)
    ours = readings(records)
    theirs = twin_replicates(twin, replicates, pipetting=method)
    rng = np.random.default_rng([seed, _PIT_STREAM])
    groups = {
        group: compare_group(values, [r.get(group, {}) for r in theirs], rng)
        for group, values in ours.items()
    }
    merged = {name: v for values in ours.values() for name, v in values.items()}
    pooled = [{n: v for g in r.values() for n, v in g.items()} for r in theirs]
    report: dict[str, Any] = {
        "lab": truth[0].name if truth else str(getattr(lab, "name", "lab")),
        "twin": twin.name,
        "replicates": replicates,
        "pipetting": method,
        "twin_seeds": [TWIN_SEED, TWIN_SEED + replicates - 1],
        "groups": groups,
        "overall": compare_group(merged, pooled, rng),
        "parameters": _parameters(predictive, records, truth, fit_lab),
        "rewards": _rewards(truth, twin, chosen, reward_seeds),
        "runs": {"lab": {name: r.get("calls") for name, r in records.items()}},
    }
    return report


def _parameters(
    predictive: Predictive, records: Any, truth: Any, fit_lab: bool | None
) -> dict[str, Any]:
    if not predictive.uncertain:
        return {"against": None, "summary": summary({}), "z": {}, "note": "nothing fitted"}
    if truth is not None and not fit_lab:
        z = z_against_truth(predictive, *truth)
        return {"against": "truth", "summary": summary(z), "z": z}
    if fit_lab is False:
        return {"against": None, "summary": summary({}), "z": {}, "note": "not asked"}
    z = z_against_fit(predictive, fit_records(records))
    return {"against": "lab fit", "summary": summary(z), "z": z}


def _rewards(
    truth: Any, twin: Profile, tasks: Sequence[str], seeds: Sequence[int]
) -> dict[str, Any]:
    if not tasks:
        return {"skipped": "no tasks asked"}
    if truth is None:
        return {
            "skipped": "the lab's profile is not known (a real lab): its tasks cannot be played"
        }
    gaps = reward_gaps(truth[0], twin, tasks, seeds)
    return {
        "tasks": gaps,
        "max_abs_gap_twin": max(abs(g["gap_twin"]) for g in gaps.values()),
        "max_abs_gap_default": max(abs(g["gap_default"]) for g in gaps.values()),
    }
