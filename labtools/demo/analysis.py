"""Fitting a standard curve and reading an unknown off it, with its uncertainty."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: a replicate further than this many robust sds (1.4826 × the median absolute residual) from
#: the curve, or from its group's median, is taken for a defect well (a bubble, a scratch, a
#: meniscus defect: 2.4 % of a plate's wells, the published profile) and left out [A]
OUTLIER_Z = 6.0


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

    @classmethod
    def fit_robust(
        cls, concentrations: Sequence[float], absorbances: Sequence[float]
    ) -> tuple[StandardCurve, list[int]]:
        """:meth:`fit` after leaving out, one at a time, the point furthest from the curve while
        it lies more than :data:`OUTLIER_Z` robust sds off; the curve and the indices left out."""
        c, a = np.asarray(concentrations, dtype=float), np.asarray(absorbances, dtype=float)
        kept = np.ones(a.size, bool)
        while True:
            curve = cls.fit(list(c[kept]), list(a[kept]))
            off = np.where(kept, np.abs(a - (curve.intercept + curve.slope * c)), 0.0)
            scale = robust_sd(off[kept])
            if kept.sum() <= 3 or off.max() <= OUTLIER_Z * scale:
                return curve, [int(i) for i in np.flatnonzero(~kept)]
            kept[int(np.argmax(off))] = False

    def consistent(self, absorbances: Sequence[float]) -> list[bool]:
        """Which replicates of one sample lie within :data:`OUTLIER_Z` of the curve's robust
        residual sd from their median (all of them where there are fewer than three)."""
        a = np.asarray(absorbances, dtype=float)
        if a.size < 3:
            return [True] * a.size
        return [bool(x) for x in np.abs(a - np.median(a)) <= OUTLIER_Z * self.residual_sd]

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


def robust_sd(values: np.ndarray) -> float:
    """1.4826 × the median absolute value (the sd of a normal's residuals, robust to a few
    far-off ones); a floor of 1e-4 OD (the reader's reported resolution)."""
    return max(1.4826 * float(np.median(np.abs(values))), 1e-4)
