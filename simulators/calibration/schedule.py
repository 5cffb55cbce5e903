"""The next real run: the one with the largest expected information about a task's reward.

Given the fits of the runs made so far (:func:`.real_runs.fit_run`, pooled by :mod:`.pool`),
each candidate kind of run (:data:`.real_runs.RUN_KINDS` the lab can make) is scored by a
linear-Gaussian expected information gain, with per parameter ``p``:

- ``w_p``: the key's weight for the task (:func:`.relevance.key_weights`: its group's share of
  the expert's reward variance across the prior), the mean over tasks when none is named;
- ``I_p``: the information one run of that kind gives about ``p`` (``1/sd²`` of one run's fit,
  on the parameter's own scale): the mean over the runs of that kind already made on the lab,
  else simulated once — the run made on the published twin (``Lab.virtual(DESIGN_SEED)``) and
  fitted (:func:`design_information`, cached);
- ``σ_p``: the current sd of ``p``: the pooled fit's, or the published prior's (its per-unit
  spread) where no run has fitted it; a profile constant (no spread: nothing an instrument
  departs from in the twin's own model) carries no weight.

Two criteria (:data:`CRITERIA`):

- ``reward`` (the default): the information about the task's reward itself, the reward taken
  linear in the parameters, ``r = Σ g_p θ_p`` with ``g_p² = w_p / σ0_p²`` (``σ0_p`` the prior's
  spread, so that ``Σ g_p² σ0_p²`` is the reward's variance across the prior)::

      EIG(run) = ½ ln(Σ_p g_p² σ_p² / Σ_p g_p² σ_p² / (1 + I_p σ_p²))

- ``parameters``: the weighted sum of each parameter's own gain,
  ``Σ_p w_p · ½ ln(1 + I_p σ_p²)``. It values a tenfold narrowing alike at any width, and so
  keeps choosing the group with the largest weight: on ``enzyme_inhibition`` (weights 87 % on
  the 1000 µL tips, 12 % on the 300 µL ones) it made the 300 µL run 2 times in 16 on each of
  12 stand-in labs, ``reward`` 4-6 times (both the same first 5-7 runs) [C: python -m
  bench.sweet_spot].

Each term is the information a Gaussian observation of precision ``I_p`` gives about a Gaussian
of variance ``σ_p²`` [V: Lindley 1956, "On a measure of the information provided by an
experiment", Ann. Math. Stat. 27]; parameters are treated as independent [A]. Ties (all zero: a
task that depends on none of the fitted parameters) go to the fixed protocol's order
(:data:`.real_runs.FIXED_ORDER`), counted from the runs made.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from labtools.simulators.calibration.pool import pool_fits
from labtools.simulators.calibration.real_runs import (
    FIXED_ORDER,
    RUN_KINDS,
    OpenDay,
    fit_run,
    make_run,
)
from labtools.simulators.calibration.relevance import key_weights, relevance
from labtools.simulators.calibration.uncertainty import uncertainty
from labtools.simulators.profile import Prior, Profile

__all__ = [
    "CRITERIA",
    "DESIGN_SEED",
    "POLICIES",
    "calibrate_budget",
    "design_information",
    "expected_gains",
    "prior_spread",
    "task_weights",
]

#: the virtual day a candidate is simulated on for its information [A: apart from the seeds of
#: tests and benchmarks]
DESIGN_SEED = 60_000
#: what a run's information is about: the task's reward, or its parameters one by one
CRITERIA = ("reward", "parameters")
POLICIES = (*CRITERIA, "fixed")


def _sd(entry: Mapping[str, Any]) -> float:
    """A fit's sd on the parameter's own scale."""
    return uncertainty(
        float(entry["value"]), (float(entry["ci95"][0]), float(entry["ci95"][1]))
    ).linear_sd


def prior_spread(prior: Prior | None) -> float:
    """A prior's sd (0 for none: a profile constant)."""
    return 0.0 if prior is None else prior.sd


@functools.lru_cache(maxsize=len(RUN_KINDS))
def design_information(kind: str) -> dict[str, float]:
    """``{key: 1/sd²}`` of one ``kind`` run made on the published twin and fitted (cached)."""
    from labtools.lab import Lab

    with Lab.virtual(DESIGN_SEED) as lab:
        fit = fit_run(make_run(lab, kind))
    out = {}
    for key, entry in fit["parameters"].items():
        sd = _sd(entry)
        if sd > 0.0:
            out[key] = 1.0 / (sd * sd)
    return out


def task_weights(task: str | Sequence[str] | None, kinds: Sequence[str]) -> dict[str, float]:
    """Key weights (:func:`.relevance.key_weights`) for ``task``, the mean over several (all
    registered tasks for ``None``), over the keys the ``kinds`` fit."""
    from labtools.session.registry import task_ids

    keys = sorted({key for kind in kinds for key in design_information(kind)})
    tasks = task_ids() if task is None else [task] if isinstance(task, str) else list(task)
    each = [key_weights(relevance(t, keys)) for t in tasks]
    return {key: statistics.fmean(w.get(key, 0.0) for w in each) for key in keys}


def _information(kind: str, fits: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``I_p`` of one ``kind`` run: measured on the lab's own runs of it where there are any."""
    made = [f for f in fits if f.get("kind") == kind and f.get("parameters")]
    if not made:
        return design_information(kind)
    out: dict[str, list[float]] = {}
    for fit in made:
        for key, entry in fit["parameters"].items():
            sd = _sd(entry)
            if sd > 0.0:
                out.setdefault(key, []).append(1.0 / (sd * sd))
    return {key: statistics.fmean(values) for key, values in out.items()}


def _sigma(key: str, pooled: Mapping[str, Any], prior: Profile) -> float:
    """``σ_p``: the pooled fit's sd, or the published prior's spread where unfitted."""
    if key in pooled:
        return _sd(pooled[key])
    return prior_spread(prior[key].prior) if key in prior else 0.0


def expected_gains(
    fits: Sequence[Mapping[str, Any]],
    weights: Mapping[str, float],
    kinds: Sequence[str],
    prior: Profile,
    criterion: str = "reward",
) -> dict[str, float]:
    """Each candidate kind's expected information gain (nats, module docstring) given the runs
    made (``fits``): about the task's reward (``reward``) or the weighted sum over its
    parameters (``parameters``)."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    pooled = pool_fits(fits)["parameters"] if fits else {}
    relevant = {}  # key: (w_p, σ_p, g_p² σ_p²)
    for key, w in weights.items():
        spread = prior_spread(prior[key].prior) if key in prior else 0.0
        if w > 0.0 and spread > 0.0:
            sigma = _sigma(key, pooled, prior)
            relevant[key] = (w, sigma, w * (sigma / spread) ** 2)
    variance = sum(v[2] for v in relevant.values())  # the reward's, in the weights' units
    gains = {}
    for kind in kinds:
        total, reduced = 0.0, 0.0
        for key, info in _information(kind, fits).items():
            if key not in relevant:
                continue
            w, sigma, part = relevant[key]
            total += w * 0.5 * math.log1p(info * sigma * sigma)
            reduced += part * (1.0 - 1.0 / (1.0 + info * sigma * sigma))
        if criterion == "parameters":
            gains[kind] = total
        else:
            left = variance - reduced
            gains[kind] = 0.5 * math.log(variance / left) if variance > 0 and left > 0 else 0.0
    return gains


def _choose(gains: Mapping[str, float], made: int) -> str:
    """The largest gain; ties by the fixed protocol's order from the ``made``-th run on."""
    order = [FIXED_ORDER[(made + i) % len(FIXED_ORDER)] for i in range(len(FIXED_ORDER))]
    rank = {kind: i for i, kind in enumerate(order)}
    best = max(gains.values())
    tied = [k for k, g in gains.items() if g >= best - 1e-12 * max(abs(best), 1.0)]
    return min(tied, key=lambda k: rank.get(k, len(rank)))


def next_run(
    fits: Sequence[Mapping[str, Any]],
    weights: Mapping[str, float],
    kinds: Sequence[str],
    prior: Profile,
    criterion: str = "reward",
) -> dict[str, Any]:
    """``{"next": kind, "criterion", "eig": {kind: nats}}`` (``labtools calibrate --next``'s
    answer)."""
    gains = expected_gains(fits, weights, kinds, prior, criterion)
    return {"next": _choose(gains, len(fits)), "criterion": criterion, "eig": gains}


def calibrate_budget(
    open_day: OpenDay,
    budget: int,
    kinds: Sequence[str],
    *,
    task: str | Sequence[str] | None = None,
    policy: str = "reward",
    fits: Sequence[Mapping[str, Any]] = (),
    keep_records: bool = False,
) -> dict[str, Any]:
    """``budget`` real runs more, each on its own day (``open_day(k)``, ``k`` counted from the
    runs in ``fits``), chosen by ``policy`` (a criterion of :data:`CRITERIA`: :func:`next_run`;
    ``fixed``: the fixed protocol's order), then every run pooled: ``{"result": pool_fits'
    shape, "schedule": [{"kind", "eig"}], "fits": [...]}`` (and ``records``)."""
    from labtools.simulators.published import published

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    prior = published()
    weights = task_weights(task, kinds) if policy in CRITERIA else {}
    done = list(fits)
    schedule: list[dict[str, Any]] = []
    records = []
    for _ in range(budget):
        if policy in CRITERIA:
            step = next_run(done, weights, kinds, prior, policy)
        else:
            fixed = [k for k in FIXED_ORDER if k in kinds]
            step = {"next": fixed[len(done) % len(fixed)], "eig": None}
        lab = open_day(len(done))
        try:
            record = make_run(lab, step["next"])
        finally:
            lab.close()
        done.append(fit_run(record))
        schedule.append({"kind": step["next"], "eig": step["eig"]})
        if keep_records:
            records.append(record)
    out: dict[str, Any] = {"result": pool_fits(done), "schedule": schedule, "fits": done}
    if keep_records:
        out["records"] = records
    return out
