"""Per-parameter z-scores of a twin's fitted values.

Where the lab's truth is known (a virtual lab: a stand-in real lab built from a hidden
profile, or the published lab with its seed's draws), each fitted value's z is
``(fitted − truth) / sd``, the sd that of the fit's uncertainty on the side the truth lies
(:class:`~labtools.simulators.fidelity.predictive.Uncertainty`, on its log scale for scale
parameters). For a real lab, whose truth nobody knows, the lab's own fit of the same runs
stands in: ``z = (lab's fit − twin's) / √(sd_lab² + sd_twin²)``, both on the twin's scale.
Under a calibrated fit either z is about N(0, 1) over parameters (not independent: the fits
share data and nuisance parameters).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from labtools.simulators.fidelity.predictive import (
    Predictive,
    Uncertainty,
    prior_sd,
    uncertainty,
)
from labtools.simulators.profile import Parameter, Profile

__all__ = ["lab_truth", "summary", "z_against_fit", "z_against_truth"]


def lab_truth(lab: Any) -> tuple[Profile, dict[str, float]] | None:
    """A virtual lab's profile and its seed's draws of every per-seed prior, by profile key;
    ``None`` for a lab that simulates nothing (its truth is not known)."""
    from labtools.simulators.stand_in import drawn_values

    world = getattr(lab, "shared", {}).get("world")
    if world is None or not hasattr(world, "profile"):
        return None
    backend = lab.shared.get("reader_backend")
    if backend is not None:
        _ = backend.truth  # else drawn at the first read
    return world.profile, drawn_values(world.hidden_truth())


def _truth_of(
    key: str, profile: Profile, drawn: Mapping[str, float], twin: Profile
) -> float | None:
    if key in drawn:
        return drawn[key]
    if key not in profile:
        return None
    parameter = profile[key]
    if parameter.value is not None:
        return parameter.value
    if twin[key].prior is not None and parameter.prior is not None:  # a fitted spread
        return prior_sd(parameter.prior)
    return None


def z_against_truth(
    predictive: Predictive, profile: Profile, drawn: Mapping[str, float]
) -> dict[str, dict[str, Any]]:
    """``{key: {"fitted", "truth", "ci95", "z", "inside"}}`` for every fitted parameter of the
    twin whose truth the lab knows."""
    out = {}
    for key, spread in predictive.uncertain.items():
        parameter = predictive.twin.parameters[key]
        truth = _truth_of(key, profile, drawn, predictive.twin)
        if truth is None:
            continue
        fitted = _fitted(parameter, spread)
        low, high = parameter.ci95 or (math.nan, math.nan)
        out[key] = {
            "fitted": fitted,
            "truth": truth,
            "ci95": [low, high],
            "z": spread.z(fitted, truth),
            "inside": bool(low <= truth <= high),
        }
    return out


def z_against_fit(predictive: Predictive, fit: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{key: {"twin", "lab", "z"}}``: the lab's own fit (``fit_records``' shape) of every
    parameter the twin has fitted, against the twin's value."""
    out = {}
    for key, spread in predictive.uncertain.items():
        entry = fit.get("parameters", {}).get(key)
        if entry is None:
            continue
        own = uncertainty(float(entry["value"]), (float(entry["ci95"][0]), float(entry["ci95"][1])))
        twin, lab = _fitted(predictive.twin.parameters[key], spread), float(entry["value"])
        if spread.shape == "log" and (lab <= 0.0 or twin <= 0.0):
            continue
        a, b = (math.log(lab), math.log(twin)) if spread.shape == "log" else (lab, twin)
        sd_lab = _on_scale(own, lab, log=spread.shape == "log")
        sd = math.hypot(sd_lab, spread.sd)
        out[key] = {"twin": twin, "lab": lab, "z": (a - b) / sd if sd > 0 else 0.0}
    return out


def _on_scale(own: Uncertainty, value: float, *, log: bool) -> float:
    """``own``'s sd on the log scale or the linear one (by the delta method across them)."""
    if (own.shape == "log") == log:
        return own.sd
    return own.sd / abs(value) if log else own.sd * abs(value)


def _fitted(parameter: Parameter, spread: Uncertainty) -> float:
    """The twin's fitted value (a fitted spread's sd)."""
    if parameter.value is not None:
        return parameter.value
    return math.exp(spread.center) if spread.shape == "log" else spread.center


def summary(zs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Over parameters: how many, the share of 95 % intervals holding the truth (when known),
    mean and sd of z, the share with |z| ≤ 1.96, and a KS test of the finite z against
    N(0, 1) (:func:`scipy.stats.kstest`; the parameters are not independent)."""
    z = np.array([v["z"] for v in zs.values()], dtype=float)
    finite = z[np.isfinite(z)]
    out: dict[str, Any] = {"parameters": len(z)}
    inside = [v["inside"] for v in zs.values() if "inside" in v]
    if inside:
        out["inside_ci95"] = float(np.mean(inside))
    if finite.size:
        out.update(
            z_mean=float(finite.mean()),
            z_sd=float(finite.std(ddof=1)) if finite.size > 1 else None,
            within_1_96=float(np.mean(np.abs(z) <= 1.96)),
            ks_p=float(stats.kstest(finite, "norm").pvalue),
        )
    return out
