"""Where each well of a PyLabRobot plate sits, what world container it is, and its path length.

A :class:`PlateLayout` is built once per plate (PLR's identifier lookups are slow) and maps a
PLR ``Well`` to its item index, grid row and column, and its world container (the key of
:mod:`labtools.drivers.pylabrobot.naming`, ``"<plate>:<id>"``).

Path length is the liquid height at the well centre, from the well's geometry in PLR:

- ``"plr"`` (default): PLR's own ``compute_height_from_volume`` where the labware defines it
  (sampled at PLR's own table points), else the cross-section. PLR describes
  ``cor_96_wellplate_360uL_Fb`` as tapering from 6.35 mm at the bottom to 6.86 mm at the top;
  its table gives h(200 µL) = 6.19 mm [V: pylabrobot 0.2.2 ``resources/corning/plates.py``]
  (a 6.35 → 6.86 mm frustum gives 6.03 mm [C]). A PathCheck-style read, (A₉₇₇ − A₉₀₀) of the
  well over that of a 1 cm cell [V: Molecular Devices PathCheck application note], measures
  this height through water's own band. Above PLR's top point the height grows with the top
  cross-section.
- ``"cross_section"``: ``L = V / A`` with ``A`` the cross-section from PLR's size and
  cross-section type (the well as a cylinder of its top diameter: 200 µL → 0.541 cm [C]).

Meniscus (``contact_angle_deg``, off by default): a concave spherical cap of contact angle θ in
a well of radius r at the surface lowers the centre below the mean height h by
``d/2 − d³/(6 r²)``, ``d = r (1 − sin θ) / cos θ`` [C: geometry]. Off by default because water
in polystyrene plates is nearly flat (source in ``ReaderConstants.meniscus_contact_angle_deg``).
A path offset (``path_offset_mm``, 0 by default) lowers the centre further, by a constant
(the published profile's ``reader.path.offset``).
Round- and V-bottom wells without PLR functions are treated as cylinders [A].
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

__all__ = ["PathModel", "PlateLayout", "build_layout", "layout_of", "meniscus_drop_mm"]

log = logging.getLogger(__name__)

PathModel = Literal["plr", "cross_section"]


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
    #: height of the well's inner bottom above the plate's underside (mm): PLR's well offset
    #: plus its bottom thickness; focal heights are measured from the underside
    bottom_mm: float
    #: well radius at the top (mm), for the meniscus
    radius_mm: float
    path_model: PathModel
    #: meniscus contact angle (degrees), ``None`` for a flat surface
    contact_angle_deg: float | None
    #: for ``"plr"``: volumes (µL) and heights (mm) sampled from PLR's h(V), else empty
    table_ul: np.ndarray
    table_mm: np.ndarray
    #: how far (mm) the surface's centre lies below the table's height, beside the meniscus
    path_offset_mm: float = 0.0

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

    def height_mm(self, volume_ul: np.ndarray) -> np.ndarray:
        """Mean liquid height (mm) for true volumes in µL (1 µL = 1 mm³)."""
        if not self.table_ul.size:
            return volume_ul / self.area_mm2
        top_ul, top_mm = self.table_ul[-1], self.table_mm[-1]
        return np.where(
            volume_ul <= top_ul,
            np.interp(volume_ul, self.table_ul, self.table_mm),
            top_mm + (volume_ul - top_ul) / self.area_mm2,
        )

    def column_mm(self, volume_ul: np.ndarray) -> np.ndarray:
        """Liquid height at the well centre (mm), meniscus and path offset included when set."""
        height = self.height_mm(volume_ul)
        flat = self.contact_angle_deg is None or self.contact_angle_deg == 90.0
        if flat and self.path_offset_mm == 0.0:
            return height
        drop = 0.0 if flat else meniscus_drop_mm(self.radius_mm, self.contact_angle_deg or 90.0)
        return np.maximum(height - (drop + self.path_offset_mm), 0.0)

    def path_cm(self, volume_ul: np.ndarray) -> np.ndarray:
        """Vertical path through the liquid at the well centre (cm)."""
        return self.column_mm(volume_ul) / 10.0


def meniscus_drop_mm(radius_mm: float, contact_angle_deg: float) -> float:
    """How far a concave spherical meniscus lowers the centre below the mean height (mm), for
    a contact angle in 0–90° (90°: flat, 0)."""
    theta = math.radians(contact_angle_deg)
    if not 0.0 <= contact_angle_deg <= 90.0:
        raise ValueError(f"contact angle must be within 0-90 degrees, not {contact_angle_deg}")
    if contact_angle_deg == 90.0:
        return 0.0
    cap = radius_mm * (1.0 - math.sin(theta)) / math.cos(theta)
    return cap / 2.0 - cap**3 / (6.0 * radius_mm**2)


def _area_mm2(well: Well) -> float:
    x, y = well.get_size_x(), well.get_size_y()
    if well.cross_section_type == CrossSectionType.CIRCLE:
        return math.pi * (x / 2.0) * (y / 2.0)
    return x * y


def _plr_table(well: Well) -> tuple[np.ndarray, np.ndarray]:
    """PLR's h(V) sampled at its own table points and on a grid up to the well's volume, or
    empty arrays where PLR defines none."""
    if not well.supports_compute_height_volume_functions():
        return np.empty(0), np.empty(0)
    top = float(well.max_volume)
    knots = [float(v) for v in (well.height_volume_data or {}).values()]
    volumes = np.unique(np.concatenate([np.linspace(0.0, top, 97), knots]))
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


def _floor_mm(well: Well) -> float:
    """The well's floor thickness (mm), 0 where PLR's labware does not define it."""
    try:
        return float(well.material_z_thickness or 0.0)
    except NotImplementedError:  # PLR raises for labware without the figure
        return 0.0


def build_layout(
    plate: Plate,
    path_model: PathModel,
    contact_angle_deg: float | None = None,
    path_offset_mm: float = 0.0,
) -> PlateLayout:
    """Index a plate once (≈1 ms for 96 wells, ≈10 ms for 384)."""
    if contact_angle_deg is not None:
        meniscus_drop_mm(1.0, contact_angle_deg)  # checks the range
    if not math.isfinite(path_offset_mm):
        raise ValueError(f"the path offset must be a finite number of mm, not {path_offset_mm}")
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
        bottom_mm=float(first.location.z if first.location else 0.0) + _floor_mm(first),
        radius_mm=float(first.get_size_x()) / 2.0,
        path_model=path_model,
        contact_angle_deg=contact_angle_deg,
        table_ul=table_ul,
        table_mm=table_mm,
        path_offset_mm=float(path_offset_mm),
    )


def layout_of(
    cache: dict[str, PlateLayout],
    plate: Plate,
    path_model: PathModel,
    contact_angle_deg: float | None = None,
    path_offset_mm: float = 0.0,
) -> PlateLayout:
    """The cached layout of ``plate`` (rebuilt if another plate now has its name)."""
    layout = cache.get(plate.name)
    if layout is None or layout.plate is not plate:
        layout = cache[plate.name] = build_layout(
            plate, path_model, contact_angle_deg, path_offset_mm
        )
    return layout
