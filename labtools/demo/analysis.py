"""Fitting a standard curve and reading an unknown off it, with its uncertainty."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StandardCurve:
    """``A = intercept + slope · c`` fitted by least squares to replicate standards."""

    slope: float
    intercept: float
    covariance: np.ndarray  # of (intercept, slope)
    residual_sd: float
    r_squared: float
    points: int

    @classmethod
    def fit(cls, concentrations: list[float], absorbances: list[float]) -> StandardCurve:
        c = np.asarray(concentrations, dtype=float)
        a = np.asarray(absorbances, dtype=float)
        design = np.column_stack([np.ones_like(c), c])
        coef, *_ = np.linalg.lstsq(design, a, rcond=None)
        residuals = a - design @ coef
        dof = max(len(a) - 2, 1)
        s2 = float(residuals @ residuals) / dof
        covariance = s2 * np.linalg.inv(design.T @ design)
        total = float(((a - a.mean()) ** 2).sum())
        r2 = 1.0 - float(residuals @ residuals) / total if total > 0 else 0.0
        return cls(float(coef[1]), float(coef[0]), covariance, math.sqrt(s2), r2, len(a))

    def invert(self, absorbances: list[float]) -> tuple[float, float]:
        """Concentration for the mean of replicate readings, and its standard deviation.

        The variance combines the replicates' scatter with the curve's parameter covariance
        (first-order propagation through c = (A - b0) / b1).
        """
        a = np.asarray(absorbances, dtype=float)
        mean = float(a.mean())
        c = (mean - self.intercept) / self.slope
        var_mean = self.residual_sd**2 / len(a)
        if len(a) > 1:
            var_mean = max(var_mean, float(a.var(ddof=1)) / len(a))
        gradient = np.array([-1.0 / self.slope, -c / self.slope])
        var_c = var_mean / self.slope**2 + float(gradient @ self.covariance @ gradient)
        return c, math.sqrt(var_c)
