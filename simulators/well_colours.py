"""The colour of every filled container on a virtual deck, from what it really holds.

Seen from above, light crosses the liquid column: the path is the liquid height at the
container's true volume (PyLabRobot's height-volume function where the labware defines one,
else the volume over the cross-section), and the colour is the transmitted colour of the
world's mixture over that path (:mod:`labtools.simulators.world.colour`). This is what the live
view (:mod:`labtools.view`) draws: the world's truth, shown to a person watching, never returned
by a tool.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labtools.drivers.pylabrobot.naming import ContainerNames
from labtools.drivers.pylabrobot.plr import Container, Deck
from labtools.errors import UnknownResource
from labtools.simulators.world import World
from labtools.simulators.world.colour import WAVELENGTHS_NM, hex_colour, srgb

__all__ = ["WellColours", "height_mm"]


def height_mm(container: Container, volume_ul: float) -> float:
    """Liquid height (mm) of ``volume_ul`` in ``container``: PLR's own function where the
    labware has one, else the volume over the cross-section (1 µL = 1 mm³)."""
    if container.supports_compute_height_volume_functions():
        try:
            return float(container.compute_height_from_volume(volume_ul))
        except (NotImplementedError, ValueError):  # past PLR's table: the cross-section
            pass
    x, y = container.get_size_x(), container.get_size_y()
    circle = getattr(container, "cross_section_type", None)
    area = math.pi * x * y / 4.0 if getattr(circle, "name", "") == "CIRCLE" else x * y
    return volume_ul / area if area > 0 else 0.0


class WellColours:
    """``well_colours()``: container key → ``"#rrggbb"`` for every container of ``deck`` that
    holds liquid in ``world`` (the live view's hook). Containers are looked up once each."""

    def __init__(self, deck: Deck, world: World) -> None:
        self.deck, self.world = deck, world
        self._names = ContainerNames(deck)
        self._found: dict[str, Container | None] = {}
        self._memo: dict[tuple[Any, ...], str] = {}

    def _container(self, key: str) -> Container | None:
        if key not in self._found:
            try:
                self._found[key] = self._names.resolve(key, "")[0]
            except UnknownResource:
                self._found[key] = None  # the spill, or a container off this deck
        return self._found[key]

    def well_colours(self) -> dict[str, str]:
        """The transmitted colour (sRGB hex) of each filled container on the deck."""
        world = self.world
        out: dict[str, str] = {}
        for key in list(world.containers()):
            container = self._container(key)
            mixture = world.peek(key)
            if container is None or mixture.volume_ul <= 0.0:
                continue
            volume = mixture.volume_ul
            memo = (key, volume, *sorted(mixture.amounts.items()))
            colour = self._memo.get(memo)
            if colour is None:
                path_cm = height_mm(container, volume) / 10.0
                absorbance = mixture.absorbance(WAVELENGTHS_NM, path_cm, world.species)
                colour = hex_colour(srgb(np.asarray(absorbance)))
                if len(self._memo) > 4096:
                    self._memo.clear()
                self._memo[memo] = colour
            out[key] = colour
        return out
