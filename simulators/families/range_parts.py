"""The parts of the ``range`` family: the qualification (dye, wavelengths, volume), its levels,
and the reader's true stray light from the lab's hidden truth.

A *qualification* reads one analyte of :data:`~.parts.ANALYTES` in water in plate_1 (a Corning
96 flat plate) at its band's peak, in one of :data:`VOLUMES_UL`, up to the top of the reader's
stated range. The reader's stray light ``s`` caps the transmitted fraction,
``T_meas = (T + s) / (1 + s)`` (:mod:`~labtools.simulators.plate_reading.absorbance`), so a
reading falls short of the true absorbance by ``log10(1 + s 10^A)``: the upper end of the
linear range is where that shortfall reaches a stated share (:func:`linear_limit_od`).

Each analyte needs a *reference* wavelength on the long-wavelength side of its band where the
library's ε is :data:`REF_SHARE` of the peak's: a well read there is well inside the linear
range, so it tells the well's true absorbance at the peak (the ratio is the dye's, the same in
every well) whatever the pipetting delivered.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from labtools.lab import Lab
from labtools.session import Budget
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, PEAK_NM, analyte
from labtools.simulators.plate_reading.absorbance import stray_light
from labtools.simulators.published import published
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "REF_SHARE",
    "SHORTFALL",
    "VOLUMES_UL",
    "Qualification",
    "held_out",
    "linear_limit_od",
    "published_stray",
    "qualification",
    "structures",
    "true_stray",
]

#: the reference wavelength's ε as a share of the peak's (library spectrum) [A: a half: a
#: well read at 3.7 OD at the peak reads 1.9 OD there, inside the accurate range, and a well's
#: own optical offset, the same at both wavelengths, weighs once in the ratio]
REF_SHARE = 0.5
#: the shortfall that ends the linear range, as a share of the true absorbance [A: 5 %, the
#: usual limit of a photometric linearity test]
SHORTFALL = 0.05
#: the volumes in a 360 µL Corning 96 flat well (µL) [A: a short, the usual and a long path:
#: 0.31, 0.61 and 0.89 cm]
VOLUMES_UL = (100, 200, 300)
#: held out of training (``test-ood`` only): a class qualified at the longest path [A: each
#: part is seen in training, this combination is not]
HELD_OUT_COMBINATIONS = frozenset({("cofactor", 300)})


def _level(number: int, noise: float) -> Level:
    """The shared level's budget (its sample ranges do not apply: there is no sample) with
    this family's reader noise."""
    shared = SHARED_LEVEL[number]
    budget: Budget = shared.budget
    return Level(number, shared.od, shared.interferent_ratio, noise, budget)


#: the reader's noise factor per level [A: at the top of the range the shot noise, 0.015 OD a
#: read at 3.7 OD on the profile's reader, sets how well the shortfall is read; twice it with
#: the smallest budget's 24 wells and 60 calls still reads s to about 10 %], and the shared
#: budgets (96 to 24 wells, 150 to 60 calls: the reads a budget affords)
LEVEL = {n: _level(n, f) for n, f in zip(range(1, 6), (1.0, 1.25, 1.5, 1.75, 2.0), strict=True)}


@dataclass(frozen=True)
class Qualification:
    """One structure: analyte ``key`` read at ``peak_nm`` (reference ``ref_nm``) in
    ``volume_ul``."""

    key: str
    volume_ul: int
    peak_nm: float
    ref_nm: float


def structures() -> list[str]:
    """``<analyte>+<volume>ul``: each analyte with a reference wavelength inside the reader's
    range, at each volume."""
    return [f"{k}+{v}ul" for k in ANALYTES if _ref_nm(k) is not None for v in VOLUMES_UL]


def held_out(structure: str) -> bool:
    """Whether ``structure`` is in the ``test-ood`` split only: a held-out species
    (:data:`~.parts.HELD_OUT_SPECIES`) or a held-out combination
    (:data:`HELD_OUT_COMBINATIONS`)."""
    q = qualification(structure)
    if q.key in HELD_OUT_SPECIES:
        return True
    return (analyte(q.key).kind, q.volume_ul) in HELD_OUT_COMBINATIONS


@functools.cache
def qualification(structure: str) -> Qualification:
    """The qualification ``structure`` names (``ValueError`` if it names none)."""
    parts = structure.split("+")
    if len(parts) != 2 or parts[0] not in ANALYTES or not parts[1].endswith("ul"):
        raise ValueError(f"{structure!r} names no qualification")
    try:
        volume = int(parts[1].removesuffix("ul"))
    except ValueError:
        raise ValueError(f"{structure!r} names no volume") from None
    if volume not in VOLUMES_UL:
        raise ValueError(f"{structure!r} names no qualification volume")
    ref = _ref_nm(parts[0])
    if ref is None:
        raise ValueError(f"{parts[0]} has no reference wavelength inside {PEAK_NM[1]:g} nm")
    return Qualification(parts[0], volume, analyte(parts[0]).peak_nm, ref)


@functools.cache
def _ref_nm(key: str) -> float | None:
    """The first whole nm above ``key``'s peak where the library's ε falls to
    :data:`REF_SHARE` of the peak's (``None`` if it does not by :data:`~.parts.PEAK_NM`'s
    top)."""
    a = analyte(key)
    grid = np.arange(a.peak_nm, PEAK_NM[1] + 0.5, 1.0)
    spectrum = np.asarray(SpeciesLibrary.default()[key].absorptivity(grid), dtype=float)
    below = np.nonzero(spectrum <= REF_SHARE * a.epsilon)[0]
    return float(grid[below[0]]) if below.size else None


# -- the truth ---------------------------------------------------------------------------------
def true_stray(lab: Lab, q: Qualification) -> float:
    """The reader unit's stray-light fraction at the peak wavelength (its visible level and,
    where the profile draws one, its rise towards the UV): hidden, per seed."""
    backend = lab.shared["reader_backend"]
    value = stray_light(backend.truth, backend.constants, np.array([q.peak_nm]))
    return float(np.asarray(value, dtype=float).ravel()[0])


def published_stray(q: Qualification) -> tuple[float, float]:
    """What the package says of the stray light at the peak with no measurement: the median
    unit's (the published priors' geometric centres) and the sd of its logarithm (the
    log-uniform spreads', in quadrature)."""
    profile = published()
    prior = profile["reader.absorbance.stray_light"].prior
    assert prior is not None and prior.kind == "log_uniform"
    centre = math.sqrt(prior.a * prior.b)
    sd = math.log(prior.b / prior.a) / math.sqrt(12.0)
    ratio = profile["reader.absorbance.stray_light_uv_ratio"].prior
    if ratio is not None and ratio.kind == "log_uniform":
        length = profile.expected("reader.absorbance.stray_light_uv_length")
        start = profile.expected("reader.absorbance.stray_light_uv_wavelength")
        rise = math.exp(-max(q.peak_nm - start, 0.0) / length)
        centre *= 1.0 + (math.sqrt(ratio.a * ratio.b) - 1.0) * rise
    return centre, sd


def linear_limit_od(s: float) -> float:
    """The true absorbance (OD, the plate's included) at which a reading falls
    :data:`SHORTFALL` short, ``log10(1 + s 10^A) = SHORTFALL · A`` (bisection)."""
    low, high = 0.5, 12.0
    for _ in range(80):
        mid = 0.5 * (low + high)
        if math.log10(1.0 + s * 10.0**mid) > SHORTFALL * mid:
            high = mid
        else:
            low = mid
    return 0.5 * (low + high)
