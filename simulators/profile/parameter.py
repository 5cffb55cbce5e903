"""One profile parameter: a fixed value (measured, fitted or published) or a prior drawn per seed.

A parameter carries its unit (a pint unit name; ``dimensionless`` for ratios, OD and counts) and
where it comes from: ``source`` (a published figure, with its evidence tag) or ``fitted_from``
(a calibration), and, when fitted, its 95 % interval ``ci95``. A prior is drawn once per seed
from the hidden-truth stream of whatever uses it, exactly as the simulators drew it before
profiles existed, so the published profile reproduces every earlier reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

__all__ = ["KINDS", "Kind", "Parameter", "Prior", "ProfileError"]

Kind = Literal["uniform", "log_uniform", "normal", "log_normal"]
#: prior families and their two arguments, as the TOML spells them
KINDS: dict[str, tuple[str, str]] = {
    "uniform": ("low", "high"),
    "log_uniform": ("low", "high"),
    "normal": ("mean", "sd"),
    "log_normal": ("mu", "sigma"),
}


class ProfileError(ValueError):
    """A profile that cannot be read: names the key and what is wrong."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


@dataclass(frozen=True)
class Prior:
    """A distribution over a parameter's value.

    ``uniform``: U(low, high) · scale; ``log_uniform``: exp U(ln low, ln high); ``normal``:
    N(mean, sd²); ``log_normal``: exp N(mu, sigma²), so ``mu = 0`` is a factor about 1.
    ``scale`` multiplies a uniform draw (a bound given relative to another figure, kept exact).
    """

    kind: Kind
    a: float
    b: float
    scale: float = 1.0
    #: draw ``log_uniform`` with numpy's exp and log (the film fraction always has): numpy's
    #: and the C library's exp differ in the last bit for a few per cent of arguments
    numpy_exp: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ProfileError("", f"unknown prior {self.kind!r}; one of {sorted(KINDS)}")
        if not all(math.isfinite(x) for x in (self.a, self.b, self.scale)):
            raise ProfileError("", "a prior's arguments must be finite numbers")
        if self.kind in ("uniform", "log_uniform") and not self.a <= self.b:
            raise ProfileError("", f"low {self.a:g} is above high {self.b:g}")
        if self.kind == "log_uniform" and self.a <= 0.0:
            raise ProfileError("", "a log-uniform prior needs low > 0")
        if self.kind in ("normal", "log_normal") and self.b < 0.0:
            raise ProfileError("", "a standard deviation cannot be negative")

    def draw(self, rng: np.random.Generator) -> float:
        """One value (consumes the same draws from ``rng`` whatever the arguments)."""
        a, b = self.a, self.b
        if self.kind == "uniform":
            return float(rng.uniform(a, b) * self.scale)
        if self.kind == "log_uniform":
            if self.numpy_exp:
                return float(np.exp(rng.uniform(np.log(a), np.log(b))))
            return float(math.exp(rng.uniform(math.log(a), math.log(b))))
        if self.kind == "normal":
            return float(rng.normal(a, b))
        return float(math.exp(rng.normal(a, b)))

    def draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent values at once (per-well parameters)."""
        a, b = self.a, self.b
        if self.kind == "uniform":
            return rng.uniform(a, b, size=size) * self.scale
        if self.kind == "log_uniform":
            return np.exp(rng.uniform(math.log(a), math.log(b), size=size))
        if self.kind == "normal":
            return rng.normal(a, b, size=size)
        return np.exp(rng.normal(a, b, size=size))

    @property
    def mean(self) -> float:
        """The prior's mean (what a twin without calibration expects)."""
        a, b = self.a, self.b
        if self.kind == "uniform":
            return 0.5 * (a + b) * self.scale
        if self.kind == "log_uniform":
            return (b - a) / math.log(b / a) if b > a else a
        if self.kind == "normal":
            return a
        return math.exp(a + 0.5 * b * b)

    @property
    def sd(self) -> float:
        """The prior's standard deviation (the unit-to-unit spread it stands for)."""
        from scipy import stats

        a, b = self.a, self.b
        if self.kind == "uniform":
            return abs(b - a) * abs(self.scale) / math.sqrt(12.0)
        if self.kind == "log_uniform":
            return float(stats.loguniform(a, b).std()) if b > a else 0.0
        if self.kind == "normal":
            return b
        return float(stats.lognorm(b, scale=math.exp(a)).std())

    def to_toml(self) -> dict[str, Any]:
        first, second = KINDS[self.kind]
        out: dict[str, Any] = {"prior": self.kind, first: self.a, second: self.b}
        if self.scale != 1.0:
            out["scale"] = self.scale
        return out


@dataclass(frozen=True)
class Parameter:
    """A profile entry: ``value`` (fixed) or ``prior`` (drawn per seed), never both shown.

    ``draws_like``: for a value laid over a prior of the base profile, that prior, still
    drawn (and discarded) so that every other parameter of the seed stays what it was: fixing
    one value never moves another.
    """

    key: str
    unit: str
    value: float | None = None
    prior: Prior | None = None
    source: str = ""
    fitted_from: str = ""
    ci95: tuple[float, float] | None = None
    draws_like: Prior | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if (self.value is None) == (self.prior is None):
            raise ProfileError(self.key, "give either value or prior")
        if self.value is not None and not math.isfinite(self.value):
            raise ProfileError(self.key, f"value must be a finite number, not {self.value!r}")
        if self.ci95 is not None:
            low, high = self.ci95
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ProfileError(self.key, f"ci95 must be [low, high], not {list(self.ci95)}")

    @property
    def fixed(self) -> bool:
        return self.value is not None

    def draw(self, rng: np.random.Generator) -> float:
        """This seed's value: the fixed value, or a draw from the prior."""
        if self.prior is not None:
            return self.prior.draw(rng)
        if self.draws_like is not None:
            self.draws_like.draw(rng)
        assert self.value is not None  # one of the two, checked when built
        return self.value

    def draws(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` values (per-well): drawn, or the fixed value repeated."""
        if self.prior is not None:
            return self.prior.draws(rng, size)
        if self.draws_like is not None:
            self.draws_like.draws(rng, size)
        return np.full(size, self.value, dtype=float)

    @property
    def expected(self) -> float:
        """The value a twin predicts with: the fixed value, or the prior's mean."""
        return self.value if self.value is not None else self.prior.mean  # type: ignore[union-attr]

    def laid_over(self, base: Parameter) -> Parameter:
        """This parameter in place of ``base``: a fixed value keeps drawing like the base."""
        if self.prior is None and base.prior is not None:
            return replace(self, draws_like=base.prior)
        if self.prior is None:
            return replace(self, draws_like=base.draws_like)
        return self

    def in_unit(self, unit: str) -> Parameter:
        """This parameter expressed in ``unit``, a pint unit of the same dimension (a multiplicative
        conversion: a unit with an offset, or of another dimension, is a :class:`ProfileError`)."""
        if self.unit == unit:
            return replace(self, unit=unit)
        from labtools.units import ureg

        try:
            factor = float(ureg.Quantity(1.0, self.unit).to(unit).magnitude)
            zero = float(ureg.Quantity(0.0, self.unit).to(unit).magnitude)
        except Exception as error:  # pint's undefined-unit and dimensionality errors
            raise ProfileError(
                self.key, f"unit {self.unit!r} is not a unit of {unit!r} ({error})"
            ) from None
        if zero != 0.0:
            raise ProfileError(self.key, f"give {unit!r} itself: {self.unit!r} has an offset")

        def scaled(x: float) -> float:
            return x * factor

        prior = self.prior
        if prior is not None:
            if prior.kind == "log_normal":
                prior = replace(prior, a=prior.a + math.log(factor))
            elif prior.kind == "normal":
                prior = replace(prior, a=scaled(prior.a), b=abs(scaled(prior.b)))
            elif prior.kind == "log_uniform":
                prior = replace(prior, a=scaled(prior.a), b=scaled(prior.b))
            else:
                prior = replace(prior, scale=prior.scale * factor)
        ci95 = self.ci95 and (scaled(self.ci95[0]), scaled(self.ci95[1]))
        value = None if self.value is None else scaled(self.value)
        return replace(self, unit=unit, value=value, prior=prior, ci95=ci95)

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value} if self.prior is None else self.prior.to_toml()
        out["unit"] = self.unit
        if self.ci95 is not None:
            out["ci95"] = list(self.ci95)
        if self.fitted_from:
            out["fitted_from"] = self.fitted_from
        if self.source:
            out["source"] = self.source
        return out
