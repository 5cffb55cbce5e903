"""Plate moves without PyLabRobot's whole-plate copy.

PLR 0.2.2's ``LiquidHandler.drop_resource`` asks ``resource.rotated(z=…)`` for the plate as it
will sit on its destination, only to compute where it goes
(``get_default_child_location``, ``get_new_child_location``, ``compute_plate_location``,
``get_lid_location``: sizes, rotation, the wells' heights). ``Resource.rotated`` is
``copy()`` — ``deserialize(serialize())`` plus ``load_all_state`` of every well — ~10 ms for a
96-well plate and ~60 ms for a 384-well one on the virtual deck, all of an ``lh_move_plate``.

:func:`light_rotations` lets ``rotated`` return a *view* for the duration of one move: a shallow
copy of the plate (same class, the same children read through it, its own rotation, no parent),
which answers every geometric question the placement asks exactly as the deep copy
would, and is dropped after. The plate itself, its wells and their trackers are never touched;
tests/test_plate_moves.py holds the placement and PLR's whole belief to PLR's own copy's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from labtools.drivers.pylabrobot.plr import Resource

__all__ = ["light_rotations", "rotated_view"]


def rotated_view(resource: Resource, x: float = 0, y: float = 0, z: float = 0) -> Resource:
    """``resource`` turned by ``x``/``y``/``z`` degrees on top of its rotation, detached, for
    geometry only: what ``Resource.rotated`` returns, less the deep copy of its children (the
    view reads the resource's own children and shares its callbacks: never assign, rotate or
    fill it)."""
    view = copy.copy(resource)  # a new instance sharing the attributes' values
    turn = resource.rotation
    view.rotation = type(turn)(x=(turn.x + x) % 360, y=(turn.y + y) % 360, z=(turn.z + z) % 360)
    view.parent = None
    view.location = None
    return view


@contextmanager
def light_rotations(resource: Resource) -> Iterator[None]:
    """While the block runs, ``resource.rotated(...)`` returns a :func:`rotated_view`."""

    def rotated(x: float = 0, y: float = 0, z: float = 0) -> Any:
        return rotated_view(resource, x, y, z)

    own = vars(resource)
    own["rotated"] = rotated  # an instance attribute shadows the method
    try:
        yield
    finally:
        del own["rotated"]
