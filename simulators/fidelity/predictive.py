"""A twin's predictive lab: its fitted values drawn per seed from their uncertainty.

A calibrated twin's profile fixes each fitted value and keeps its 95 % interval (``ci95``). Its
*predictive* lab draws, for every replicate seed, each such value from a distribution whose
2.5 % and 97.5 % points are the interval's ends and whose median is the fitted value, so twin
replicates carry the fit's parameter uncertainty as well as the simulator's noise and sample
truth. Three shapes, chosen per parameter from its value and interval:

- ``log``: a positive value with a positive interval more symmetric on the log scale than on
  the linear one (the fits report scales such as the noise floor and stray light that way):
  ``exp`` of a two-piece normal on ``ln``;
- ``bound``: a value at an end of its interval, or within :data:`BOUND_SHARE` of its width
  (a physical bound, such as a tip's film volume at 0 or a contact angle at 90°, where the
  fit stopped): the bound plus a half-normal towards the interval, 95 % of it inside;
- ``linear``: a two-piece normal, each half a half-normal of its side's width / 1.96.

An end of the interval that is a whole number exactly (0 for a volume or a rate, 90° for a
contact angle) is taken for a physical limit the fit clipped its interval to, and no draw
passes it [A: the fits clip to such limits; a likelihood interval ends there by no chance].

The two-piece normal puts half its mass on each side of the value (the median), so its 2.5 %
and 97.5 % quantiles are the interval's ends exactly [C]. The fits' own intervals are
likelihood intervals (``simulators/calibration/estimates.py``); reading them as the
quantiles of a distribution of the true value is the usual large-sample reading [A].

Where the twin's base profile gives the parameter an unbounded prior (a normal or log-normal:
the published unit-to-unit spread of a pipette's bias, a dye lot's ε), the draw is from the
posterior — that prior times the fit's likelihood — by sampling-importance-resampling: M
candidates from the narrower of the two, one kept with weights the other's density [V: Rubin
1988, "Using the SIR algorithm to simulate posterior distributions", Bayesian Statistics 3].
A fit that hardly identifies a parameter (a 1000 µL tip's bias from 20 and 60 µL deliveries)
then draws what the population allows, not a 60 % bias. Bounded priors (uniform,
log-uniform) are not combined: a real instrument may lie outside the published range (a
reader's UV stray light 10× the published bound), and a bounded prior would hide it.

A spread fitted as ``<key>_sd`` is a prior whose width was fitted (``fitted_profile`` rescales
the per-plate prior); its sd is drawn the same way and the prior rescaled.

The draws are fixed values laid over the twin profile, so the simulator's own per-seed priors
(what the calibration did not identify) still draw from the seed's streams as they always do,
and profile constants (read once as the profile's expected value, not drawn) vary too: a
``Prior`` on a constant would give its mean, which is why the predictive lab is a profile per
seed and not one profile of priors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from scipy import stats

from labtools.simulators.profile import Parameter, Prior, Profile

__all__ = ["Predictive", "Uncertainty", "prior_sd", "uncertainty"]

#: the two-sided 95 % normal quantile [C: scipy.stats.norm.ppf(0.975)]
Z95 = float(stats.norm.ppf(0.975))
#: the stream of a replicate's parameter draws: ``default_rng([seed, PARAMETER_STREAM])``, apart
#: from every stream the simulator draws from its seed [A: any fixed constant]
PARAMETER_STREAM = 0x51D

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


def prior_sd(prior: Prior) -> float | None:
    """The sd of a symmetric uniform or a normal prior (the spreads ``fitted_profile`` fits)."""
    if prior.kind == "uniform" and prior.a == -prior.b:
        return abs(prior.b * prior.scale) / math.sqrt(3.0)
    if prior.kind == "normal":
        return prior.b
    return None


def _with_sd(prior: Prior, sd: float) -> Prior:
    if prior.kind == "normal":
        return replace(prior, b=sd)
    half = math.sqrt(3.0) * sd / prior.scale
    return replace(prior, a=-half, b=half)


#: SIR candidates per draw [A: enough when the two distributions overlap at all]
CANDIDATES = 256


def _prior_density(prior: Prior, x: np.ndarray) -> np.ndarray:
    if prior.kind == "normal":
        return np.asarray(stats.norm.pdf(x, prior.a, prior.b))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(stats.lognorm.pdf(x, prior.b, scale=math.exp(prior.a)))


def _prior_sd_any(prior: Prior) -> float:
    if prior.kind == "normal":
        return prior.b
    return math.exp(prior.a) * prior.b  # about, for a narrow log-normal


def _posterior_draw(spread: Uncertainty, prior: Prior, rng: np.random.Generator) -> float:
    """One draw of ``prior`` × the fit's likelihood (module docstring: SIR)."""
    if _prior_sd_any(prior) < spread.linear_sd:
        candidates = prior.draws(rng, CANDIDATES)
        weights = spread.density(candidates)
    else:
        candidates = np.array([spread.draw(rng) for _ in range(CANDIDATES)])
        weights = _prior_density(prior, candidates)
    total = float(weights.sum())
    if not np.isfinite(total) or total <= 0.0:
        return float(candidates[0])  # no overlap at all: the proposal's own draw
    return float(rng.choice(candidates, p=weights / total))


class Predictive:
    """The predictive lab of ``twin``: :meth:`profile` gives replicate ``seed``'s profile, for
    ``Lab.virtual(seed, profile=predictive.profile(seed))``. ``combine``: draw from the
    posterior with the base profile's unbounded priors (module docstring); ``False`` draws
    from the fit alone."""

    def __init__(self, twin: Profile, *, combine: bool = True) -> None:
        self.twin = twin
        self.combine = combine
        found: dict[str, Uncertainty] = {}
        for key in sorted(twin.parameters):
            parameter = twin.parameters[key]
            if parameter.ci95 is None:
                continue
            if parameter.prior is None:
                assert parameter.value is not None  # one of the two
                found[key] = uncertainty(parameter.value, parameter.ci95)
            elif (sd := prior_sd(parameter.prior)) is not None and sd > 0.0:
                found[key] = uncertainty(sd, parameter.ci95)
        #: each uncertain parameter's distribution, by key (sorted: the order drawn)
        self.uncertain = found

    def values(self, seed: int) -> dict[str, Parameter]:
        """Replicate ``seed``'s draws of every uncertain parameter."""
        rng = np.random.default_rng([seed, PARAMETER_STREAM])
        out = {}
        note = f"drawn from the fit's uncertainty for twin replicate {seed}"
        for key, spread in self.uncertain.items():
            parameter = self.twin.parameters[key]
            base = parameter.draws_like
            if self.combine and base is not None and base.kind in ("normal", "log_normal"):
                drawn = _posterior_draw(spread, base, rng)
            else:
                drawn = spread.draw(rng)
            if parameter.prior is not None:
                prior = _with_sd(parameter.prior, max(drawn, 0.0))
                out[key] = Parameter(key, parameter.unit, prior=prior, fitted_from=note)
            else:
                out[key] = Parameter(key, parameter.unit, drawn, fitted_from=note)
        return out

    def profile(self, seed: int) -> Profile:
        """The twin with replicate ``seed``'s draws laid over it (the same seed, the same
        profile)."""
        return self.twin.with_values(self.values(seed), name=f"{self.twin.name}, replicate {seed}")
