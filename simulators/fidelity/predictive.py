"""A twin's predictive lab: its fitted values drawn per seed from their uncertainty.

A calibrated twin's profile fixes each fitted value and keeps its 95 % interval (``ci95``). Its
*predictive* lab draws, for every replicate seed, each such value from a distribution whose
2.5 % and 97.5 % points are the interval's ends and whose median is the fitted value, so twin
replicates carry the fit's parameter uncertainty as well as the simulator's noise and sample
truth. Three shapes, chosen per parameter from its value and interval
(:func:`labtools.simulators.calibration.uncertainty.uncertainty`):

- ``log``: a positive value with a positive interval more symmetric on the log scale than on
  the linear one (the fits report scales such as the noise floor and stray light that way):
  ``exp`` of a two-piece normal on ``ln``;
- ``bound``: a value at an end of its interval, or within
  :data:`~labtools.simulators.calibration.uncertainty.BOUND_SHARE` of its width
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
from dataclasses import replace

import numpy as np
from scipy import stats

from labtools.simulators.calibration.uncertainty import Uncertainty, uncertainty
from labtools.simulators.profile import Parameter, Prior, Profile

__all__ = ["Predictive", "Uncertainty", "prior_sd", "uncertainty"]

#: the stream of a replicate's parameter draws: ``default_rng([seed, PARAMETER_STREAM])``, apart
#: from every stream the simulator draws from its seed [A: any fixed constant]
PARAMETER_STREAM = 0x51D


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
