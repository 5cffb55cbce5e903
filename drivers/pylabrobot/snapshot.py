"""A whole PyLabRobot liquid handler's belief, saved and put back (episodes of a simulated lab).

What an episode changes: every container's volume tracker, every tip spot's tip, the channels'
tips (with the tips' volumes), where each plate sits (``move_plate``), the gripper and the order
of the deck's name index. Saved as references and values, not through PLR's
``serialize_all_state``/``load_all_state``: those cost tens of ms on the virtual deck and, in
0.2.2, empty a mounted tip (see :mod:`labtools.drivers.pylabrobot.trackers`, whose private-attribute
access pins PLR to 0.2.2 here too).

Plates go back by re-parenting them directly: PLR's ``assign_child_resource`` checks every name
of the plate against the whole tree (~40 ms for a 96-well plate on the virtual deck, ~150 ms for a
384-well one), needless for a plate that never left the tree, whose names the deck still indexes.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtools.drivers.pylabrobot.internals import (
    arm_pickups,
    attach_to_parent,
    deck_index,
    detach_from_parent,
    restore_arm_pickups,
    restore_deck_index,
)
from labtools.drivers.pylabrobot.plr import (
    Container,
    Coordinate,
    LiquidHandler,
    Plate,
    Resource,
    TipSpot,
    TipTracker,
)
from labtools.drivers.pylabrobot.trackers import (
    TipState,
    TrackerSnapshot,
    clear_tip,
    restore_tip,
    tip_state,
)

__all__ = ["HandlerSnapshot"]


@dataclass(frozen=True)
class _Placement:
    """Where a plate sat: its parent, place among the parent's children, location in it and
    rotation (x, y, z degrees)."""

    plate: Plate
    parent: Resource | None
    index: int
    location: Coordinate | None
    rotation: tuple[float, float, float]

    @classmethod
    def of(cls, plate: Plate) -> _Placement:
        parent, turn = plate.parent, plate.rotation
        index = parent.children.index(plate) if parent is not None else 0
        return cls(plate, parent, index, plate.location, (turn.x, turn.y, turn.z))

    def moved(self) -> bool:
        plate, turn = self.plate, self.plate.rotation
        return (
            plate.parent is not self.parent
            or plate.location != self.location
            or (turn.x, turn.y, turn.z) != self.rotation
        )


class HandlerSnapshot:
    """The state of ``lh`` (a set-up or not yet set-up PLR ``LiquidHandler``) and its deck."""

    __slots__ = ("_arms", "_handler", "_head", "_head96", "_index", "_placements", "_trackers")

    def __init__(self, lh: LiquidHandler) -> None:
        resources = lh.deck.get_all_resources()
        self._handler = lh
        self._index = deck_index(lh.deck)  # PLR moves re-order the deck's name index
        self._trackers = TrackerSnapshot(
            containers=[r for r in resources if isinstance(r, Container)],
            spots=[r for r in resources if isinstance(r, TipSpot)],
        )
        self._head = _head_state(lh.head)
        self._head96 = _head_state(lh.head96)
        self._placements = [_Placement.of(r) for r in resources if isinstance(r, Plate)]
        self._arms = arm_pickups(lh)

    def restore(self) -> None:
        """Put everything back (fires no PLR callbacks, calls no backend)."""
        lh = self._handler
        self._trackers.restore()
        _restore_head(lh.head, self._head)
        _restore_head(lh.head96, self._head96)
        moved = sorted((p for p in self._placements if p.moved()), key=lambda p: p.index)
        for placement in moved:  # first lift every moved plate, so no site is taken twice
            _detach(placement.plate)
        for placement in moved:
            _seat(lh, placement)
        restore_deck_index(lh.deck, self._index)
        restore_arm_pickups(lh, self._arms)


def _head_state(head: dict[int, TipTracker]) -> dict[int, TipState]:
    return {channel: tip_state(tracker) for channel, tracker in head.items()}


def _restore_head(head: dict[int, TipTracker], saved: dict[int, TipState]) -> None:
    """Each channel as saved; channels that did not exist then (set up since) hold no tip."""
    for channel, tracker in head.items():
        state = saved.get(channel)
        if state is None:
            clear_tip(tracker)
        else:
            restore_tip(state, into=tracker)


def _detach(plate: Plate) -> None:
    """Take ``plate`` off its parent without telling the deck (its names stay indexed)."""
    parent = plate.parent
    if parent is None:
        return
    parent.children.remove(plate)
    detach_from_parent(plate, parent)
    plate.parent = None
    plate.location = None


def _seat(lh: LiquidHandler, placement: _Placement) -> None:
    """Put a detached plate back as saved: re-parented directly if the deck still indexes it,
    through PLR's ``assign_child_resource`` if it had left the tree (e.g. dropped in a trash)."""
    plate, parent = placement.plate, placement.parent
    turn = plate.rotation
    turn.x, turn.y, turn.z = placement.rotation
    if parent is None:
        return
    deck = lh.deck
    if not (deck.has_resource(plate.name) and deck.get_resource(plate.name) is plate):
        parent.assign_child_resource(plate, location=placement.location)
        return
    plate.parent = parent
    plate.location = placement.location
    parent.children.insert(placement.index, plate)
    attach_to_parent(plate, parent)
