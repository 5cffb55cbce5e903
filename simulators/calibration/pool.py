"""Several real runs' fits as one: the instrument's parameters are shared across days.

Each run's fit gives a parameter's value and 95 % interval, a likelihood interval
(:mod:`.estimates`). Pooled, each run's likelihood is stood in for by the two-piece normal
that :func:`~labtools.simulators.fidelity.predictive.uncertainty` reads from its value and
interval (on the log scale for a scale parameter, a half-normal from a physical limit where
the fit stopped at one; a side clipped at such a limit takes the other side's sd), whose
``−ln L`` rises by ``χ²₁(0.95)/2`` exactly at the interval's ends;
the runs are independent days, so the pooled ``−ln L`` is their sum. The pooled value is its
minimum (:func:`scipy.optimize.minimize_scalar`), the interval where it has risen by
``χ²₁(0.95)/2`` (:func:`.estimates.profile_ci`): inverse-variance pooling where every run's
likelihood is a symmetric normal, and the skewed and bounded ones kept as they are
[A: each run's likelihood is near its two-piece normal; the coverage is measured in
``tests/test_schedule.py`` and ``python -m bench.sweet_spot``].

Per-plate parameters are never pooled: the fits report a per-plate prior's spread
(``<key>_sd``), which is the instrument's and is pooled like the others. A parameter of the
day rather than the instrument (the draft shield's humidity) is pooled too, which reads it as
the days' common value [A].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from scipy import optimize

from labtools.simulators.calibration.estimates import Estimate, entry, profile_ci
from labtools.simulators.calibration.uncertainty import Uncertainty, uncertainty

__all__ = ["pool_fits", "pooled_entry"]

#: −ln L beyond a physical limit or on the wrong side of zero (a large finite number, so the
#: root finders still bracket) [A]
_OUTSIDE = 1e6


def _nll(spread: Uncertainty, x: float) -> float:
    """One run's approximate −ln L at ``x`` (the parameter's own scale)."""
    if spread.shape == "log":
        if x <= 0.0:
            return _OUTSIDE
        t = math.log(x) - spread.center
    elif spread.shape == "bound":
        opens_up = spread.sd_high > 0.0
        t = (x - spread.center) * (1.0 if opens_up else -1.0)
        if t < 0.0:
            return _OUTSIDE * (1.0 + abs(t))
        sd = max(spread.sd_low, spread.sd_high)
        return 0.5 * (t / sd) ** 2
    else:
        if (spread.floor is not None and x < spread.floor) or (
            spread.ceiling is not None and x > spread.ceiling
        ):
            return _OUTSIDE
        t = x - spread.center
    sd = spread.sd_high if t > 0.0 else spread.sd_low
    if sd <= 0.0:
        return 0.0 if t == 0.0 else _OUTSIDE
    return 0.5 * (t / sd) ** 2


def _spread(fit: Mapping[str, Any]) -> Uncertainty:
    """A run's two-piece normal; a side whose end is a physical limit the fit clipped its
    interval to (a whole number: :mod:`~labtools.simulators.fidelity.predictive`) says only that
    the likelihood had not risen that far, so that side takes the other side's sd (at least)
    and keeps the limit [A]."""
    spread = uncertainty(float(fit["value"]), (float(fit["ci95"][0]), float(fit["ci95"][1])))
    if spread.shape != "linear":
        return spread
    low, high = spread.sd_low, spread.sd_high
    if spread.floor is not None:
        low = max(low, high)
    if spread.ceiling is not None:
        high = max(low, high)
    return replace(spread, sd_low=low, sd_high=high)


def pooled_entry(entries: Sequence[Mapping[str, Any]]) -> Estimate:
    """One parameter's fits from several runs (each ``{"value", "unit", "ci95", ...}``) as one
    (module docstring). One entry is returned as it is."""
    if not entries:
        raise ValueError("nothing to pool")
    if len(entries) == 1:
        return dict(entries[0])
    spreads = [_spread(e) for e in entries]

    def nll(x: float) -> float:
        return sum(_nll(s, x) for s in spreads)

    values = [float(e["value"]) for e in entries]
    lows = [min(float(e["ci95"][0]), float(e["value"])) for e in entries]
    highs = [max(float(e["ci95"][1]), float(e["value"])) for e in entries]
    lo, hi = min(values), max(values)
    if hi > lo:
        found = optimize.minimize_scalar(
            nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9 * max(hi - lo, 1e-300)}
        )
        best = min((float(found.x), lo, hi), key=nll)
    else:
        best = lo
    width = max(highs) - min(lows)
    if width <= 0.0:
        return entry(best, str(entries[0]["unit"]), best, best, _how(len(entries)))
    floors = [s.floor for s in spreads if s.floor is not None]
    floors += [s.center for s in spreads if s.shape == "bound" and s.sd_high > 0.0]
    ceilings = [s.ceiling for s in spreads if s.ceiling is not None]
    ceilings += [s.center for s in spreads if s.shape == "bound" and s.sd_high == 0.0]
    search = (max([min(lows) - width, *floors]), min([max(highs) + width, *ceilings]))
    low, high = profile_ci(nll, best, *search, rtol=1e-6)
    return entry(best, str(entries[0]["unit"]), low, high, _how(len(entries)))


def _how(n: int) -> str:
    return (
        f"pooled over {n} runs: the sum of each run's two-piece normal likelihood "
        "(its value and interval), profile interval"
    )


def pool_fits(fits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fits of several runs (:func:`.real_runs.fit_run`'s) as one result in
    :func:`.calibrate.fit_records`' shape: every parameter pooled over the runs that fit it;
    ``derived`` and ``not_identified`` from the latest run that has each key; ``runs``: each
    kind's count and cost; ``failed``: the runs whose fit failed."""
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    derived: dict[str, Any] = {}
    not_identified: dict[str, Any] = {}
    runs: dict[str, dict[str, float]] = {}
    failed = []
    for i, fit in enumerate(fits):
        for key, value in fit.get("parameters", {}).items():
            by_key.setdefault(key, []).append(value)
        derived.update(fit.get("derived", {}))
        not_identified.update(fit.get("not_identified", {}))
        kind = str(fit.get("kind", "?"))
        cost = runs.setdefault(kind, {"runs": 0, "calls": 0, "virtual_s": 0.0})
        cost["runs"] += 1
        for what in ("calls", "virtual_s"):
            cost[what] += float(fit.get("cost", {}).get(what) or 0.0)
        if "failed" in fit:
            failed.append({"run": i, "kind": kind, "why": fit["failed"]})
    parameters = {key: pooled_entry(values) for key, values in sorted(by_key.items())}
    for key in parameters:
        not_identified.pop(key, None)
    return {
        "parameters": parameters,
        "derived": derived,
        "not_identified": not_identified,
        "runs": runs,
        "failed": failed,
    }
