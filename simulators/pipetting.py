"""Pipetting error: ISO 8655-2 limits, the per-channel delivery model and its hidden parameters.

Delivery model (physics reference §2) [A], for one aspirate–dispense cycle with a fresh tip::

    V_del = V_set · (1 + β) + δ + ε,     ε ~ N(0, σ(V_set)²),     σ(V) = sqrt(a² + (c·V)²)

Each channel draws β (relative), δ (µL), a (µL) and c (relative) once per seed, scaled to the
ISO 8655-2 row of its nominal class so that most channels pass it:

- β ~ N(0, (MPE_sys / V_nom / 3)²) and δ ~ N(0, (MPE_sys / 3)²) — the reference's
  ``N(0, (MPE_sys/3)²)``, the relative part at the nominal volume. At V_nom the systematic error
  has SD √2·MPE_sys/3 (97 % of channels pass); at 10 % of V_nom it is ≈ MPE_sys/3 (99.7 %).
- a ~ U(1/6, 1/3) · MPE_rand and c ~ U(1/3, 2/3) · MPE_rand / V_nom: for the 200 µL class,
  a = 0.10–0.20 µL and c = 0.10–0.20 % (the reference's "good 20–200 µL channel"), so
  σ ≤ 0.75 · MPE_rand at every volume up to V_nom: every channel passes the random limit.

ISO 8655-2 maximum permissible errors (single-channel air displacement; the absolute MPE at the
nominal volume applies at every selectable volume) from the physics reference: the 1000 µL row
[V] (published table), the others the 2002 Table 1 values [L].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["ISO_8655_2", "ChannelModel", "IsoLimits", "draw_channel", "draw_film_fraction"]


@dataclass(frozen=True)
class IsoLimits:
    """ISO 8655-2 maximum permissible errors of one nominal volume (µL)."""

    nominal_ul: float
    systematic_ul: float
    random_ul: float

    def passes(self, mean_error_ul: float, sd_ul: float) -> bool:
        """Whether a channel with this mean error and SD (µL) at some volume meets the limits."""
        return abs(mean_error_ul) <= self.systematic_ul and sd_ul <= self.random_ul


ISO_8655_2: dict[float, IsoLimits] = {
    row.nominal_ul: row
    for row in (
        IsoLimits(2.0, 0.08, 0.04),
        IsoLimits(10.0, 0.12, 0.08),
        IsoLimits(20.0, 0.20, 0.10),
        IsoLimits(100.0, 0.8, 0.3),
        IsoLimits(200.0, 1.6, 0.6),
        IsoLimits(1000.0, 8.0, 3.0),
    )
}


@dataclass(frozen=True)
class ChannelModel:
    """One channel's hidden delivery parameters: ``beta`` (relative bias), ``delta_ul``
    (absolute bias), ``a_ul`` and ``c`` (absolute and proportional SD terms)."""

    class_ul: float
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
        return max(0.0, self.mean(volume_ul) + self.sigma(volume_ul) * float(rng.standard_normal()))

    @property
    def limits(self) -> IsoLimits:
        return ISO_8655_2[self.class_ul]

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ChannelModel:
        return cls(**{k: float(v) for k, v in raw.items()})


def draw_channel(rng: np.random.Generator, class_ul: float) -> dict[str, float]:
    """A channel of nominal class ``class_ul`` (a key of :data:`ISO_8655_2`), as a dict."""
    iso = ISO_8655_2[class_ul]
    return ChannelModel(
        class_ul=class_ul,
        beta=float(rng.normal(0.0, iso.systematic_ul / class_ul / 3.0)),
        delta_ul=float(rng.normal(0.0, iso.systematic_ul / 3.0)),
        a_ul=float(rng.uniform(1 / 6, 1 / 3) * iso.random_ul),
        c=float(rng.uniform(1 / 3, 2 / 3) * iso.random_ul / class_ul),
    ).to_dict()


def draw_film_fraction(rng: np.random.Generator) -> float:
    """Fraction of the last aspirated liquid left as a film in a tip after it empties:
    ``f_in`` ≈ 0.1–1 % (physics reference §2) [A], drawn log-uniformly."""
    return float(np.exp(rng.uniform(np.log(1e-3), np.log(1e-2))))
