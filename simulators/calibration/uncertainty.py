"""A fitted value's distribution, read from its value and 95 % interval.

:func:`uncertainty` gives the shape (``log``, ``bound`` or ``linear``: the rules are in
:mod:`labtools.simulators.fidelity.predictive`, which draws twin replicates from it) whose 2.5 %
and 97.5 % points are the interval's ends and whose median is the value; pooling days
(:mod:`.pool`) and the scheduler (:mod:`.schedule`) read a fit's sd from it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from labtools.simulators.calibration.estimates import Z95

__all__ = ["BOUND_SHARE", "Z95", "Uncertainty", "uncertainty"]

#: a value this close to an end of its interval (as a share of the interval's width) is at a
#: bound: a physical limit the fit stopped at (a contact angle of 90°, a film volume of 0)
#: [A: a likelihood skewed that far is a limit in every fit of the calibration package]
BOUND_SHARE = 0.05

Shape = Literal["linear", "log", "bound"]


@dataclass(frozen=True)
class Uncertainty:
    """A fitted value's distribution: median ``center`` and each side's sd, on ``shape``'s
    scale (``log``: of ``ln x``); ``bound``: the half-normal's sd and the side it opens to."""

    shape: Shape
    center: float
    sd_low: float
    sd_high: float
    #: physical limits the interval reaches (module docstring): draws stop there
    floor: float | None = None
    ceiling: float | None = None

    def draw(self, rng: np.random.Generator) -> float:
        u = float(rng.standard_normal())
        if self.shape == "bound":
            sd = self.sd_high if self.sd_high > 0.0 else -self.sd_low
            return self.center + abs(u) * sd
        x = self.center + u * (self.sd_high if u > 0.0 else self.sd_low)
        x = math.exp(x) if self.shape == "log" else x
        x = x if self.floor is None else max(x, self.floor)
        return x if self.ceiling is None else min(x, self.ceiling)

    def density(self, x: np.ndarray) -> np.ndarray:
        """The distribution's density at ``x`` (on the parameter's own scale)."""
        x = np.asarray(x, dtype=float)
        if self.shape == "bound":
            half = max(self.sd_low, self.sd_high)
            side = (x - self.center) * (1.0 if self.sd_high > 0.0 else -1.0)
            return np.where(side >= 0.0, 2.0 * stats.norm.pdf(side, 0.0, half), 0.0)
        if self.shape == "log":
            with np.errstate(divide="ignore", invalid="ignore"):
                u = np.log(np.where(x > 0.0, x, np.nan)) - self.center
            jacobian = np.where(x > 0.0, 1.0 / np.where(x > 0.0, x, 1.0), 0.0)
        else:
            u, jacobian = x - self.center, np.ones_like(x)
        sd = np.where(u > 0.0, self.sd_high, self.sd_low)
        with np.errstate(divide="ignore", invalid="ignore"):
            pdf = np.where(sd > 0.0, stats.norm.pdf(u / np.where(sd > 0, sd, 1.0)) / sd, 0.0)
        out = np.nan_to_num(pdf * jacobian)
        out = out if self.floor is None else np.where(x >= self.floor, out, 0.0)
        return out if self.ceiling is None else np.where(x <= self.ceiling, out, 0.0)

    @property
    def linear_sd(self) -> float:
        """About the distribution's sd on the parameter's own scale."""
        if self.shape == "log":
            return math.exp(self.center) * self.sd
        if self.shape == "bound":
            return max(self.sd_low, self.sd_high)
        return self.sd

    def z(self, value: float, truth: float) -> float:
        """``(value − truth) / sd`` on this scale, the sd of the side ``truth`` lies on."""
        if self.shape == "log":
            if truth <= 0.0:
                return math.inf
            a, b = math.log(value), math.log(truth)
        else:
            a, b = value, truth
        if self.shape == "bound":
            sd = max(self.sd_high, self.sd_low)
        else:
            sd = self.sd_low if b < a else self.sd_high
            sd = sd or max(self.sd_low, self.sd_high)
        if sd == 0.0:
            return 0.0 if a == b else math.copysign(math.inf, a - b)
        return (a - b) / sd

    @property
    def sd(self) -> float:
        """One sd for combining with another (the mean of the two sides, on the scale)."""
        return 0.5 * (self.sd_low + self.sd_high)


def uncertainty(value: float, ci95: tuple[float, float]) -> Uncertainty:
    """The distribution :mod:`this module <labtools.simulators.fidelity.predictive>` draws a
    fitted ``value`` from, given its 95 % interval (module docstring)."""
    low, high = min(ci95), max(ci95)
    low, high = min(low, value), max(high, value)  # an interval always holds its value
    width = high - low
    if width == 0.0:
        return Uncertainty("linear", value, 0.0, 0.0)
    if min(value - low, high - value) <= BOUND_SHARE * width:
        up = value - low <= high - value
        end = low if up else high
        return Uncertainty("bound", end, 0.0 if up else width / Z95, width / Z95 if up else 0.0)
    if low > 0.0:
        log_skew = abs(math.log(high / value) - math.log(value / low))
        linear_skew = abs((high - value) - (value - low)) / value
        if log_skew < linear_skew:
            lv = math.log(value)
            return Uncertainty("log", lv, (lv - math.log(low)) / Z95, (math.log(high) - lv) / Z95)
    floor = low if low == round(low) else None
    ceiling = high if high == round(high) else None
    sd_low, sd_high = (value - low) / Z95, (high - value) / Z95
    return Uncertainty("linear", value, sd_low, sd_high, floor, ceiling)
