"""Plate-to-plate and well-to-well variation beyond :class:`~.params.PlateTruth`: each plate's
path scale and each well's path, and defect wells (all off in ``published-1``, where none of
this is drawn; ``published-2``, the default, has defect wells and no path spread).

- **Path spread** (``ReaderConstants.path_plate_sd``, ``path_well_sd_mm``): a plate's liquid
  columns are scaled by one factor ``N(1, plate_sd²)`` (its wells' diameter, a plate lot) and
  each well's moved by ``N(0, well_sd²)`` mm; they hold for absorbance and fluorescence alike.
- **Defect wells** (``outlier_fraction``, ``outlier_od``, ``outlier_path_loss``): a fraction of
  a plate's wells carry a defect that stays with the well for that plate, across reads (a
  bubble, a scratch, dust; a real plate shows them so: the fpcountr Spark water plate's low
  wells): an extra optical density ``N(0, outlier_od²)`` and a path shortened by
  ``loss · |N(0, 1)|`` (at most all of it). Read noise stays independent from read to read.

Each is drawn once per plate from its own hidden key (``<reader>/plate/<name>/<items>/path``,
``…/defects``), so turning one on moves no other draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labtools.simulators.plate_reading.params import ReaderConstants

__all__ = [
    "Defects",
    "PathSpread",
    "defects_on",
    "draw_defects",
    "draw_path_spread",
    "spread_on",
]


@dataclass(frozen=True)
class PathSpread:
    """One plate's path scale and each well's path shift (mm), in plate item order."""

    scale: float
    well_mm: np.ndarray

    def apply(self, column_mm: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Liquid columns (mm) of plate items ``items`` with the plate's spread (never < 0)."""
        return np.maximum(column_mm * self.scale + self.well_mm[items], 0.0)


@dataclass(frozen=True)
class Defects:
    """Each well's defect: extra OD and relative path shortfall (0 for a sound well)."""

    od: np.ndarray
    path_loss: np.ndarray


def spread_on(constants: ReaderConstants) -> bool:
    """Whether plates have a path spread (else none is drawn)."""
    return constants.path_plate_sd != 0.0 or constants.path_well_sd_mm != 0.0


def defects_on(constants: ReaderConstants) -> bool:
    """Whether plates have defect wells (else none is drawn)."""
    return constants.outlier_fraction > 0.0


def draw_path_spread(
    rng: np.random.Generator, items: int, constants: ReaderConstants
) -> PathSpread:
    """One plate's path spread: a scale, then ``items`` well shifts."""
    plate_sd, well_sd = constants.path_plate_sd, constants.path_well_sd_mm
    if not (np.isfinite(plate_sd) and np.isfinite(well_sd) and plate_sd >= 0 and well_sd >= 0):
        raise ValueError(f"path spreads must be sds >= 0, not {plate_sd} and {well_sd} mm")
    scale = float(rng.normal(1.0, plate_sd))
    return PathSpread(scale=max(scale, 0.0), well_mm=rng.normal(0.0, well_sd, size=items))


def draw_defects(rng: np.random.Generator, items: int, constants: ReaderConstants) -> Defects:
    """One plate's defect wells: which (uniform draws), their OD and their path shortfall
    (one normal each per item, drawn whatever the fraction, so the count stays fixed)."""
    fraction, od, loss = (
        constants.outlier_fraction,
        constants.outlier_od,
        constants.outlier_path_loss,
    )
    scales = np.array([od, loss])
    if not (0.0 <= fraction <= 1.0 and np.all(np.isfinite(scales)) and np.all(scales >= 0)):
        raise ValueError(
            f"defect wells need a fraction in 0-1 and scales >= 0, not {fraction}, {od}, {loss}"
        )
    hit = rng.random(items) < fraction
    extra = rng.normal(0.0, od, size=items)
    shortfall = np.minimum(loss * np.abs(rng.standard_normal(items)), 1.0)
    return Defects(od=np.where(hit, extra, 0.0), path_loss=np.where(hit, shortfall, 0.0))
