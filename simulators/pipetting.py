"""Pipetting error by tip type: the published rows, the per-channel model and its hidden draws.

Delivery model (physics reference §2) [A], for one aspirate–dispense cycle with a fresh tip::

    V_del = V_set · (1 + β) + δ + ε,     ε ~ N(0, σ(V_set)²),     σ(V) = sqrt(a² + (c·V)²)

Each channel draws β (relative), δ (µL), a (µL) and c (relative) once per seed *and per tip
type* (:data:`TIP_CLASSES`, from ``simulators/data/pipetting.toml`` with the source of every
figure), held to two published rows of that tip: its ISO 8655-2 row at the nominal volume
(``S_nom``, ``R_nom`` µL) and its low row (the smallest volume a published row covers,
``S_low``, ``R_low`` µL):

- β ~ N(0, (S_nom / V_nom / 3)²), δ ~ N(0, (min(S_nom, S_low) / 3)²): the reference's
  ``N(0, (MPE_sys/3)²)``. The absolute part δ sets the error below the low row: about constant
  in µL, so the relative error grows as 1/V — 1 µL is ±5 % with a 10 µL tip and ±50 % with a
  300 µL one (3 SD).
- a ~ U(1/3, 2/3) · min(R_nom, R_low) and c ~ U(1/3, 2/3) · R_nom / V_nom: σ stays inside both
  rows' random limits for every channel.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import numpy as np

from labtools.simulators.profile.parameter import Parameter, Prior

__all__ = [
    "ISO_8655_2",
    "TIP_CLASSES",
    "ChannelModel",
    "IsoLimits",
    "TipClass",
    "draw_channel",
    "draw_film_fraction",
    "film_parameter",
    "tip_class",
    "tip_key",
    "tip_parameters",
]


@dataclass(frozen=True)
class IsoLimits:
    """Maximum permissible errors at one volume (µL): systematic (±) and random (SD)."""

    nominal_ul: float
    systematic_ul: float
    random_ul: float

    def passes(self, mean_error_ul: float, sd_ul: float) -> bool:
        """Whether a channel with this mean error and SD (µL) meets the limits."""
        return abs(mean_error_ul) <= self.systematic_ul and sd_ul <= self.random_ul


@dataclass(frozen=True)
class TipClass:
    """One tip type's rows: ``nominal`` (ISO 8655-2 limits held at the tip's nominal volume)
    and ``low`` (the limits at the smallest volume a published row covers for it)."""

    nominal_ul: float
    nominal: IsoLimits
    low: IsoLimits


@functools.cache
def _data() -> dict[str, Any]:
    text = resources.files("labtools.simulators").joinpath("data/pipetting.toml")
    return tomllib.loads(text.read_text("utf-8"))


def _iso_rows() -> dict[float, IsoLimits]:
    rows = (IsoLimits(**{k: float(v) for k, v in r.items()}) for r in _data()["iso_8655_2"]["rows"])
    return {row.nominal_ul: row for row in rows}


def _tip_classes() -> dict[float, TipClass]:
    out = {}
    for key, raw in _data()["tip"].items():
        nominal_ul = float(key)
        iso = ISO_8655_2[float(raw["iso_row"])]
        volume, systematic_pct, cv_pct = (float(x) for x in raw["low"])
        low = IsoLimits(volume, volume * systematic_pct / 100.0, volume * cv_pct / 100.0)
        row = IsoLimits(nominal_ul, iso.systematic_ul, iso.random_ul)
        out[nominal_ul] = TipClass(nominal_ul, row, low)
    return out


#: ISO 8655-2:2002 Table 1 rows by nominal volume (µL), single-channel air displacement
ISO_8655_2: dict[float, IsoLimits] = _iso_rows()
#: the tip types the channels are modelled for, by the tips' nominal volume (µL)
TIP_CLASSES: dict[float, TipClass] = _tip_classes()


def tip_class(nominal_ul: float) -> TipClass | None:
    """The modelled tip type of tips with this nominal volume (µL), if any."""
    return TIP_CLASSES.get(float(nominal_ul))


@dataclass(frozen=True)
class ChannelModel:
    """One channel's hidden delivery parameters with one tip type: ``beta`` (relative bias),
    ``delta_ul`` (absolute bias), ``a_ul`` and ``c`` (absolute and proportional SD terms)."""

    tip_ul: float
    beta: float
    delta_ul: float
    a_ul: float
    c: float

    def mean(self, volume_ul: float) -> float:
        """Expected delivered volume (µL) for a set volume, fresh tip."""
        return volume_ul * (1.0 + self.beta) + self.delta_ul

    def sigma(self, volume_ul: float) -> float:
        """SD of the delivered volume (µL) for a set volume."""
        return math.hypot(self.a_ul, self.c * volume_ul)

    def deliver(self, volume_ul: float, rng: np.random.Generator) -> float:
        """One draw of the delivered volume (µL); never negative (a piston cannot push back)."""
        return self.level(volume_ul, volume_ul, rng)

    def level(self, piston_ul: float, stroke_ul: float, rng: np.random.Generator) -> float:
        """What a tip really holds under the piston (µL, liquid and air) once the piston has
        moved ``stroke_ul`` to stand ``piston_ul`` from empty: the calibration at that position
        plus this stroke's random error. 0 at the empty position, never negative."""
        if piston_ul <= 0.0:
            return 0.0
        noise = self.sigma(stroke_ul) * float(rng.standard_normal())
        return max(0.0, self.mean(piston_ul) + noise)

    @property
    def limits(self) -> TipClass:
        return TIP_CLASSES[self.tip_ul]

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ChannelModel:
        return cls(**{k: float(v) for k, v in raw.items()})


def tip_key(tip_ul: float) -> str:
    """The profile key segment of a tip type: ``tip_300`` for 300 µL tips."""
    return f"tip_{tip_ul:g}"


_DERIVED = "[C] pipetting.toml: the tip type's ISO 8655-2 row at its nominal volume and its low row"


def tip_parameters(tip_ul: float) -> dict[str, Parameter]:
    """The published priors of a tip type's channels (keys ``liquid_handler.tip_<n>.beta``,
    ``.delta``, ``.a``, ``.c``): the module docstring's draws."""
    tip = TIP_CLASSES[tip_ul]
    nominal, low = tip.nominal, tip.low
    prefix = f"liquid_handler.{tip_key(tip_ul)}"
    random_ul = min(nominal.random_ul, low.random_ul)
    rows = {
        "beta": (
            "dimensionless",
            Prior("normal", 0.0, nominal.systematic_ul / tip_ul / 3.0),
            "N(0, (S_nom / V_nom / 3)^2), relative bias",
        ),
        "delta": (
            "microliter",
            Prior("normal", 0.0, min(nominal.systematic_ul, low.systematic_ul) / 3.0),
            "N(0, (min(S_nom, S_low) / 3)^2), absolute bias",
        ),
        "a": (
            "microliter",
            Prior("uniform", 1 / 3, 2 / 3, random_ul),
            "U(1/3, 2/3) min(R_nom, R_low), absolute SD term",
        ),
        "c": (
            "dimensionless",
            Prior("uniform", 1 / 3, 2 / 3, nominal.random_ul / tip_ul),
            "U(1/3, 2/3) R_nom / V_nom, relative SD term",
        ),
    }
    return {
        f"{prefix}.{name}": Parameter(
            f"{prefix}.{name}", unit, prior=prior, source=f"{_DERIVED}: {note}"
        )
        for name, (unit, prior, note) in rows.items()
    }


def film_parameter() -> Parameter:
    """The published prior of ``liquid_handler.film_fraction``."""
    low, high = (float(x) for x in _data()["film_fraction"])
    return Parameter(
        "liquid_handler.film_fraction",
        "dimensionless",
        prior=Prior("log_uniform", low, high, numpy_exp=True),
        source=f"pipetting.toml: {_data()['sources']['film_fraction']}",
    )


def draw_channel(
    rng: np.random.Generator,
    tip_ul: float,
    *,
    profile: Mapping[str, Parameter] | None = None,
    channel: int | None = None,
) -> dict[str, float]:
    """A channel with tips of nominal volume ``tip_ul`` (a key of :data:`TIP_CLASSES`), as a
    dict: β, δ, a and c from ``profile`` (the published priors by default: the module
    docstring's draws), the values of ``channel`` where the profile has them."""
    each = f"channel_{channel}." if channel is not None else ""
    prefix = f"liquid_handler.{each}{tip_key(tip_ul)}"
    source = profile if profile is not None else _general(tip_parameters(tip_ul))
    return ChannelModel(
        tip_ul=tip_ul,
        beta=source[f"{prefix}.beta"].draw(rng),
        delta_ul=source[f"{prefix}.delta"].draw(rng),
        a_ul=source[f"{prefix}.a"].draw(rng),
        c=source[f"{prefix}.c"].draw(rng),
    ).to_dict()


def _general(parameters: dict[str, Parameter]) -> Mapping[str, Parameter]:
    from labtools.simulators.profile import Profile

    return Profile("published pipetting", parameters)


def draw_film_fraction(
    rng: np.random.Generator, profile: Mapping[str, Parameter] | None = None
) -> float:
    """Fraction of the liquid a tip last drew left as a film when it empties: ``f_in`` ≈
    0.1–1 % (physics reference §2) [A], drawn log-uniformly (``liquid_handler.film_fraction``
    of ``profile``)."""
    key = "liquid_handler.film_fraction"
    return (profile[key] if profile is not None else film_parameter()).draw(rng)
