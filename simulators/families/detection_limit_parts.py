"""The parts of the ``detection_limit`` family: the method (analyte, wavelength, volume), its
levels, and the method's true detection limit from the lab's hidden truth.

A *method* reads one analyte of :data:`~.parts.ANALYTES` in water in plate_1 (a Corning 96 flat
plate) at one wavelength: the band's peak, or its *shoulder* (the long-wavelength side where the
library's ε is :data:`SHOULDER_SHARE` of the peak's), in one of :data:`VOLUMES_UL`. Its limits,
as ICH Q2(R1) states them from the standard deviation of the response and the slope:
LOD = :data:`LOD_K` σ / S, LOQ = :data:`LOQ_K` σ / S.

- σ: the standard deviation of a blank's response, water in a fresh sound well of the plate
  read once at the wavelength: the reader's read noise (its noise floor and shot noise, at the
  level's factor and this reader unit's own, :data:`UNIT_NOISE`) and the well's optical offset
  (the published ``reader.absorbance.well_offset`` spread), in quadrature.
- S: the reading's change per µM: the lot's ε at the wavelength (``species.toml`` batches), the
  true path of the volume in the plate, the reader's gain.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from labtools.lab import Lab
from labtools.session import Budget
from labtools.simulators.families.levels import LEVEL as SHARED_LEVEL
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import ANALYTES, HELD_OUT_SPECIES, PEAK_NM, analyte
from labtools.simulators.profile import Prior
from labtools.simulators.published import published
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "HELD_OUT_COMBINATIONS",
    "LEVEL",
    "LOD_K",
    "LOQ_K",
    "SHOULDER_SHARE",
    "UNIT_NOISE",
    "VOLUMES_UL",
    "WAVELENGTHS",
    "Method",
    "blank_sd",
    "method",
    "prior_sd",
    "published_blank_sd",
    "slope_per_um",
    "structures",
]

#: ICH Q2(R1) §6.3 and §7.3: LOD = 3.3 σ / S, LOQ = 10 σ / S [L: ICH Q2(R1), 2005]
LOD_K, LOQ_K = 3.3, 10.0
#: the shoulder's ε as a share of the peak's (library spectrum) [A: a third, a wavelength a method
#: takes to keep clear of an interferent's band, with the band's slope steep there]
SHOULDER_SHARE = 1.0 / 3.0
WAVELENGTHS = ("peak", "shoulder")
#: the methods' volumes in a 360 µL Corning 96 flat well (µL) [A: a short, the usual and a long
#: path: 0.31, 0.61 and 0.89 cm]
VOLUMES_UL = (100, 200, 300)
#: a reader unit's read noise over the profile's (noise floor and shot noise alike), log-uniform
#: [A: units of one model differ, the lamp ages; vendors state a repeatability of ±0.003-0.005 OD
#: at low OD (BioTek Synergy HT ±0.005 OD [V: operator's manual], SpectraMax ±0.003 OD [L]), so
#: the published 0.001 OD floor times the level's factor is a typical unit, not every unit]
UNIT_NOISE = (0.5, 4.0)
#: held out of training (``test-ood`` only): a class measured on the shoulder at the shortest
#: path [A: each part is seen in training, this combination is not]
HELD_OUT_COMBINATIONS = frozenset({("fluorophore", "shoulder", 100)})
#: a blank well's transmitted fraction for the shot noise: the empty plate's nominal 0.04 OD [C]
BLANK_OD = 0.04
_LOG10_E = 0.4342944819032518


def _level(number: int, noise: float) -> Level:
    """The shared level's budget (its sample ranges do not apply: there is no sample) with this
    family's reader noise."""
    shared = SHARED_LEVEL[number]
    budget: Budget = shared.budget
    return Level(number, shared.od, shared.interferent_ratio, noise, budget)


#: the reader's noise factor per level [A: the blank's read noise then outweighs the well's
#: optical offset (0.0023 OD) at every level for most units, so that the unit's noise, hidden,
#: sets σ], and the shared budgets (96 to 24 wells: the blanks a budget affords)
LEVEL = {n: _level(n, f) for n, f in zip(range(1, 6), (3.0, 3.5, 4.0, 5.0, 6.0), strict=True)}


def structures() -> list[str]:
    """``<analyte>+<peak|shoulder>+<volume>ul``: analyte by analyte, each at the peak and (where
    the band has one inside the reader's range) its shoulder, at each volume."""
    out = []
    for key in ANALYTES:
        for where in WAVELENGTHS:
            if where == "shoulder" and _shoulder_nm(key) is None:
                continue
            out += [f"{key}+{where}+{v}ul" for v in VOLUMES_UL]
    return out


def held_out(structure: str) -> bool:
    """Whether ``structure`` is in the ``test-ood`` split only: a held-out species
    (:data:`~.parts.HELD_OUT_SPECIES`) or a held-out combination
    (:data:`HELD_OUT_COMBINATIONS`)."""
    m = method(structure)
    if m.key in HELD_OUT_SPECIES:
        return True
    return (analyte(m.key).kind, m.where, m.volume_ul) in HELD_OUT_COMBINATIONS


@dataclass(frozen=True)
class Method:
    """One structure's method: analyte ``key`` read at ``wavelength_nm`` (``where``: peak or
    shoulder) in ``volume_ul``."""

    key: str
    where: str
    volume_ul: int
    wavelength_nm: float

    @property
    def library_epsilon(self) -> float:
        """The library's ε at the wavelength (M⁻¹ cm⁻¹): not the lot's."""
        return float(SpeciesLibrary.default()[self.key].absorptivity(self.wavelength_nm))


@functools.cache
def method(structure: str) -> Method:
    """The method ``structure`` names (``ValueError`` if it names none)."""
    parts = structure.split("+")
    if len(parts) != 3 or parts[0] not in ANALYTES or parts[1] not in WAVELENGTHS:
        raise ValueError(f"{structure!r} names no method")
    volume = int(parts[2].removesuffix("ul")) if parts[2].endswith("ul") else -1
    if volume not in VOLUMES_UL:
        raise ValueError(f"{structure!r} names no method volume")
    key, where = parts[0], parts[1]
    nm = analyte(key).peak_nm if where == "peak" else _shoulder_nm(key)
    if nm is None:
        raise ValueError(f"{key} has no shoulder inside {PEAK_NM[1]:g} nm")
    return Method(key, where, volume, float(nm))


@functools.cache
def _shoulder_nm(key: str) -> float | None:
    """The first whole nm above ``key``'s peak where the library's ε falls to
    :data:`SHOULDER_SHARE` of the peak's (``None`` if it does not by :data:`~.parts.PEAK_NM`'s
    top)."""
    a = analyte(key)
    grid = np.arange(a.peak_nm, PEAK_NM[1] + 0.5, 1.0)
    spectrum = np.asarray(SpeciesLibrary.default()[key].absorptivity(grid), dtype=float)
    below = np.nonzero(spectrum <= SHOULDER_SHARE * a.epsilon)[0]
    return float(grid[below[0]]) if below.size else None


# -- the truth ---------------------------------------------------------------------------------
def prior_sd(prior: Prior | None) -> float:
    """The standard deviation of a uniform or normal prior (0 for a fixed value)."""
    if prior is None:
        return 0.0
    if prior.kind == "uniform":
        return abs(prior.b - prior.a) * prior.scale / math.sqrt(12.0)
    if prior.kind == "normal":
        return prior.b
    raise ValueError(f"no sd for a {prior.kind} prior here")


def published_blank_sd(factor: float) -> float:
    """σ (OD) as the published profile gives it, its read noise times ``factor``: what a
    blank's would be on a reader the package describes (no measurement)."""
    profile = published()
    floor = profile.expected("reader.absorbance.noise_floor") * factor
    shot = _LOG10_E / profile.expected("reader.absorbance.snr0") * factor
    offset = prior_sd(profile["reader.absorbance.well_offset"].prior)
    return math.sqrt(floor**2 + shot**2 / 10.0**-BLANK_OD + offset**2)


def blank_sd(lab: Lab) -> float:
    """σ (OD): a blank's response in a fresh sound well, read once: the reader's read noise as
    its constants stand (the level's and the unit's factors in them) at a blank's transmission,
    and the well's optical offset (the profile's spread, through the reader's gain)."""
    backend = lab.shared["reader_backend"]
    k = backend.constants
    transmitted = 10.0**-BLANK_OD
    read = k.od_noise_floor**2 + (_LOG10_E / k.snr0) ** 2 / transmitted
    offset = prior_sd(backend.world.profile["reader.absorbance.well_offset"].prior)
    gain = 1.0 + backend.truth.gain_error
    return math.sqrt(read + (gain * offset) ** 2)


def slope_per_um(lab: Lab, m: Method) -> float:
    """S (OD per µM): the lot's ε at the wavelength, the true path of the volume in plate_1 (the
    plate's geometry; the mean over its wells where the profile spreads them), the reader's
    gain."""
    backend = lab.shared["reader_backend"]
    world = backend.world
    epsilon = float(world.species[m.key].absorptivity(m.wavelength_nm))
    plate: Any = lab.shared["deck"].deck.get_resource("plate_1")
    wells = plate.get_all_items()
    volume = np.full(len(wells), float(m.volume_ul))
    path = float(np.mean(backend.path_cm(plate, volume, wells)))
    return epsilon * path * (1.0 + backend.truth.gain_error) * 1e-6
