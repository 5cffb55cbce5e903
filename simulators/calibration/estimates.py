"""Fitted values with their 95 % intervals, and the likelihood tools the fits share.

Intervals come from the likelihood, one of two ways, said per parameter:

- the observed information (the Gauss–Newton ``JᵀJ`` of standardised residuals, or the
  numerical Hessian of the negative log-likelihood from :func:`scipy.differentiate.hessian`),
  on a scale where the likelihood is near quadratic (log for positive scales); nuisance
  parameters are estimated jointly, so their uncertainty widens the interval;
- the profile likelihood (``2 ΔNLL = χ²₁(0.95)``, roots by :func:`scipy.optimize.brentq`) for
  one-dimensional fits near a boundary, where a quadratic would mislead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize, stats
from scipy.differentiate import hessian

__all__ = [
    "Z95",
    "Estimate",
    "entry",
    "log_ci",
    "normal_ci",
    "observed_covariance",
    "profile_ci",
]

#: the two-sided 95 % normal quantile
Z95 = float(stats.norm.ppf(0.975))
#: χ²₁ at 95 %: the profile likelihood's drop
CHI2_95 = float(stats.chi2.ppf(0.95, 1))

Estimate = dict[str, Any]


def entry(value: float, unit: str, low: float, high: float, how: str) -> Estimate:
    """One fitted parameter: ``{"value", "unit", "ci95": [low, high], "interval": how}``."""
    low, high = (float(low), float(high)) if low <= high else (float(high), float(low))
    return {"value": float(value), "unit": unit, "ci95": [low, high], "interval": how}


def normal_ci(value: float, sd: float) -> tuple[float, float]:
    return value - Z95 * sd, value + Z95 * sd


def observed_covariance(nll: Callable[[np.ndarray], float], at: np.ndarray) -> np.ndarray:
    """The inverse of the negative log-likelihood's Hessian at ``at`` (its minimum)."""

    def vectorised(x: np.ndarray) -> np.ndarray:
        flat = x.reshape(x.shape[0], -1)
        out = np.apply_along_axis(nll, 0, flat)
        return out.reshape(x.shape[1:])

    result = hessian(vectorised, np.asarray(at, dtype=float), initial_step=0.05)
    matrix = np.asarray(result.ddf, dtype=float)
    matrix = 0.5 * (matrix + matrix.T)
    return np.linalg.pinv(matrix)


def profile_ci(
    nll: Callable[[float], float], best: float, low: float, high: float, rtol: float = 1e-3
) -> tuple[float, float]:
    """Where the one-parameter ``nll`` rises by ``χ²₁(0.95)/2`` above its value at ``best``,
    searched within [``low``, ``high``] (an end where it never rises that far is returned),
    to ``rtol`` of the search range."""
    xtol = rtol * (high - low)
    floor = nll(best)

    def excess(x: float) -> float:
        return nll(x) - floor - CHI2_95 / 2.0

    lo = optimize.brentq(excess, low, best, xtol=xtol) if excess(low) > 0 else low
    hi = optimize.brentq(excess, best, high, xtol=xtol) if excess(high) > 0 else high
    return float(lo), float(hi)


def log_ci(log_value: float, log_sd: float) -> tuple[float, float, float]:
    """Value and interval of a positive parameter fitted on the log scale."""
    lo, hi = normal_ci(log_value, log_sd)
    return math.exp(log_value), math.exp(lo), math.exp(hi)
