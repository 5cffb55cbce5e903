"""Container geometry from PyLabRobot labware: cross-section, dead volume and position.

The dead volume is the liquid a tip cannot draw: what lies below the lowest liquid height the
tip can aspirate from. It comes from the labware's own geometry in PLR — its height→volume
function where it defines one, else its cross-section (size and shape) — never from a table.

``DEAD_HEIGHT_MM`` [A] is that lowest usable liquid height. 0.2 mm gives, through PLR's
geometry, ≈ 9 µL for a Corning 96 flat well (the physics reference's 5–10 µL for 96-well flat),
≈ 1.5 µL for a 384 V-bottom well (treated as a cylinder: an overestimate), ≈ 117 µL for a
12-column reservoir channel (PLR models it as a box; the reference quotes 1–3 mL for multichannel
use) and 20 µL for a 10 mm cuvette.

:class:`Positions` gives containers' absolute y (front to back) for ordering a batch's channels,
each labware's place looked up once.
"""

from __future__ import annotations

import math

from labtools.drivers.pylabrobot.plr import Container, CrossSectionType, Resource

__all__ = ["DEAD_HEIGHT_MM", "Positions", "cross_section_mm2", "dead_volume_ul"]

DEAD_HEIGHT_MM = 0.2


def cross_section_mm2(container: Container) -> float:
    """The container's horizontal cross-section (mm²): a circle or a rectangle of its size."""
    x, y = container.get_size_x(), container.get_size_y()
    if getattr(container, "cross_section_type", None) is CrossSectionType.CIRCLE:
        return math.pi * x * y / 4.0
    return x * y


def dead_volume_ul(container: Container, height_mm: float = DEAD_HEIGHT_MM) -> float:
    """Liquid (µL) below ``height_mm`` above the container's inner bottom.

    Uses PLR's ``compute_volume_from_height`` when the labware has one, otherwise the
    cross-section times the height.
    """
    if container.supports_compute_height_volume_functions():
        try:
            return float(container.compute_volume_from_height(height_mm))
        except (NotImplementedError, ValueError):
            pass
    return cross_section_mm2(container) * height_mm


class Positions:
    """Absolute y (mm) of resources' front-left-bottom corners, as PLR's
    ``get_absolute_location().y`` gives it, with each parent's absolute location and rotation
    looked up once: PLR walks the whole tree on every call (~0.4 ms for a well on a carrier)."""

    def __init__(self) -> None:
        self._frames: dict[int, tuple[float, tuple[float, float, float]]] = {}

    def y(self, resource: Resource) -> float:
        """PLR's composition, ``parent + R(parent) · location`` rounded to 0.1 µm as PLR's
        ``Coordinate`` rounds (the anchor at the resource's own front-left-bottom corner adds
        nothing), with the parent's frame cached."""
        parent, location = resource.parent, resource.location
        if parent is None or parent.location is None or location is None:
            return float(resource.get_absolute_location().y)
        frame = self._frames.get(id(parent))
        if frame is None:
            row = parent.get_absolute_rotation().get_rotation_matrix()[1]
            origin = float(parent.get_absolute_location().y)
            frame = self._frames[id(parent)] = (origin, (row[0], row[1], row[2]))
        origin, (a, b, c) = frame
        return round(origin + round(a * location.x + b * location.y + c * location.z, 4), 4)
