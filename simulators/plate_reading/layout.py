"""Where each well of a PyLabRobot plate sits, what world container it is, and its path length.

A :class:`PlateLayout` is built once per plate (PLR's identifier lookups are slow) and maps a
PLR ``Well`` to its item index, grid row and column, and its world container (the key of
:mod:`labtools.drivers.pylabrobot.naming`, ``"<plate>:<id>"``).

Path length is the liquid height at the well centre, computed from the well's geometry in PLR:

- ``"cross_section"`` (default): ``L = V / A`` with ``A`` the well's cross-section from PLR's
  size and cross-section type (Corning 96 flat: ⌀ 6.86 mm [V: Opentrons labware JSON, physics
  reference §3]; 200 µL → 0.541 cm [C]).
- ``"plr"``: PLR's own ``compute_height_from_volume`` where the labware defines it, else the
  cross-section. For ``cor_96_wellplate_360uL_Fb`` PLR's table describes a tapered well
  (h(200 µL) = 6.19 mm vs 5.41 mm for the ⌀ 6.86 mm cylinder) and overshoots its own well depth
  at the nominal 360 µL (10.95 > 10.67 mm), so it is not the default.

No meniscus correction is applied: no source was found for its size; physics reference §3 gives
Δ ≈ 0.01–0.03 cm [A]. Round- and V-bottom wells are treated as cylinders [A].
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pylabrobot.resources import Plate, Well
from pylabrobot.resources.well import CrossSectionType

from labtools.drivers.pylabrobot.naming import grid_position, item_key, items_by_identifier

__all__ = ["PathModel", "PlateLayout", "layout_of"]

log = logging.getLogger(__name__)

PathModel = Literal["cross_section", "plr"]


@dataclass(frozen=True, eq=False)
class PlateLayout:
    """One plate's wells in PLR item order (column-major), with their grid positions."""

    plate: Plate
    rows: int
    cols: int
    identifiers: tuple[str, ...]
    keys: tuple[str, ...]
    row: np.ndarray
    col: np.ndarray
    index: dict[str, int]
    area_mm2: float
    depth_mm: float
    path_model: PathModel
    #: for ``"plr"``: volumes (µL) and heights (mm) sampled from PLR's h(V), else empty
    table_ul: np.ndarray
    table_mm: np.ndarray

    def indices(self, wells: list[Well]) -> np.ndarray:
        """Item indices of ``wells``; ``ValueError`` for a well of another plate."""
        index = self.index
        try:
            return np.fromiter((index[w.name] for w in wells), dtype=np.intp, count=len(wells))
        except KeyError as exc:
            raise ValueError(f"well {exc.args[0]!r} is not on plate {self.plate.name!r}") from None

    def keys_of(self, items: np.ndarray) -> list[str]:
        """World container keys of plate items ``items``."""
        keys = self.keys
        return [keys[i] for i in items.tolist()]

    def path_cm(self, volume_ul: np.ndarray) -> np.ndarray:
        """Liquid height at the well centre (cm) for true volumes in µL (1 µL = 1 mm³)."""
        linear = volume_ul / self.area_mm2
        if self.table_ul.size:
            inside = volume_ul <= self.table_ul[-1]
            height = np.where(
                inside,
                np.interp(volume_ul, self.table_ul, self.table_mm),
                self.table_mm[-1] + (volume_ul - self.table_ul[-1]) / self.area_mm2,
            )
        else:
            height = linear
        return height / 10.0


def _area_mm2(well: Well) -> float:
    x, y = well.get_size_x(), well.get_size_y()
    if well.cross_section_type == CrossSectionType.CIRCLE:
        return math.pi * (x / 2.0) * (y / 2.0)
    return x * y


def _plr_table(well: Well) -> tuple[np.ndarray, np.ndarray]:
    """PLR's h(V) sampled on a grid up to its range, or empty arrays where it is undefined."""
    top = float(well.max_volume)
    volumes = np.linspace(0.0, top, 97)
    heights = []
    for v in volumes:
        try:
            heights.append(float(well.compute_height_from_volume(float(v))))
        except (NotImplementedError, ValueError):
            break
    if len(heights) < 2:
        return np.empty(0), np.empty(0)
    table_ul, table_mm = volumes[: len(heights)], np.asarray(heights)
    if np.any(np.diff(table_mm) < 0):
        log.warning("PLR h(V) of %s is not monotonic; using its cross-section", well.name)
        return np.empty(0), np.empty(0)
    return table_ul, table_mm


def build_layout(plate: Plate, path_model: PathModel) -> PlateLayout:
    """Index a plate once (≈1 ms for 96 wells, ≈10 ms for 384)."""
    by_identifier = items_by_identifier(plate)
    identifiers = tuple(by_identifier)
    wells = list(by_identifier.values())
    rows, cols = [], []
    for ident in identifiers:
        try:
            row, col = grid_position(ident)
        except ValueError:
            raise ValueError(
                f"plate {plate.name!r}: cannot place well {ident!r} on a grid"
            ) from None
        rows.append(row)
        cols.append(col)
    first = wells[0]
    table_ul, table_mm = _plr_table(first) if path_model == "plr" else (np.empty(0),) * 2
    return PlateLayout(
        plate=plate,
        rows=plate.num_items_y,
        cols=plate.num_items_x,
        identifiers=identifiers,
        keys=tuple(item_key(plate.name, i) for i in identifiers),
        row=np.asarray(rows, dtype=np.intp),
        col=np.asarray(cols, dtype=np.intp),
        index={w.name: i for i, w in enumerate(wells)},
        area_mm2=_area_mm2(first),
        depth_mm=float(first.get_size_z()),
        path_model=path_model,
        table_ul=table_ul,
        table_mm=table_mm,
    )


def layout_of(cache: dict[str, PlateLayout], plate: Plate, path_model: PathModel) -> PlateLayout:
    """The cached layout of ``plate`` (rebuilt if another plate now has its name)."""
    layout = cache.get(plate.name)
    if layout is None or layout.plate is not plate:
        layout = cache[plate.name] = build_layout(plate, path_model)
    return layout
