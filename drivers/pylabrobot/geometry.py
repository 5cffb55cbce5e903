"""Container geometry from PyLabRobot labware: cross-section and dead volume.

The dead volume is the liquid a tip cannot draw: what lies below the lowest liquid height the
tip can aspirate from. It comes from the labware's own geometry in PLR — its height→volume
function where it defines one, else its cross-section (size and shape) — never from a table.

``DEAD_HEIGHT_MM`` [A] is that lowest usable liquid height. 0.2 mm gives, through PLR's
geometry, ≈ 9 µL for a Corning 96 flat well (the physics reference's 5–10 µL for 96-well flat),
≈ 1.5 µL for a 384 V-bottom well (treated as a cylinder: an overestimate), ≈ 117 µL for a
12-column reservoir channel (PLR models it as a box; the reference quotes 1–3 mL for multichannel
use) and 20 µL for a 10 mm cuvette.
"""

from __future__ import annotations

import math

from labtools.drivers.pylabrobot.plr import Container, CrossSectionType

__all__ = ["DEAD_HEIGHT_MM", "cross_section_mm2", "dead_volume_ul"]

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
