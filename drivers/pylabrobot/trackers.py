"""PLR's tip and volume trackers: the process-wide switches, and undo for one call.

**Switches.** PLR 0.2.2 keeps tip and volume tracking as module-level globals of
``pylabrobot.resources.tip_tracker`` / ``volume_tracker``, off by default and shared by every
``LiquidHandler`` in the process. The adapter turns both on in ``setup()`` (its belief — the
volumes ``get_deck`` reports, the tips left — lives in those trackers) and never turns them off,
since another lab in the same process may rely on them. :func:`require_tracking` refuses to act
if something else switched them off meanwhile, instead of silently losing track.

**Undo.** PLR 0.2.2 queues tracker changes before it calls the backend and has no rollback when
its own queueing raises (a rejected aspirate leaves the well's *pending* volume changed). The
adapter validates first, so PLR should never refuse; if it or the backend still fails,
:class:`TrackerSnapshot` puts back the trackers the call touched. It reads and writes tracker
attributes directly (``volume``/``pending_volume``, and through
:mod:`labtools.drivers.pylabrobot.internals` the tip fields private to PLR 0.2.2) — the reason
for the version pin. A snapshot of the few trackers one call touches costs a few µs; a
whole-deck ``serialize_all_state`` costs ms and, in 0.2.2, loses the volume of a mounted tip.
The same snapshots of every tracker on a deck rewind it between episodes
(:mod:`labtools.drivers.pylabrobot.snapshot`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from labtools.drivers.pylabrobot.internals import set_tip_fields, tip_fields
from labtools.drivers.pylabrobot.plr import (
    Container,
    TipSpot,
    TipTracker,
    does_tip_tracking,
    does_volume_tracking,
    set_tip_tracking,
    set_volume_tracking,
)
from labtools.errors import InstrumentError

__all__ = [
    "TipState",
    "TrackerSnapshot",
    "clear_tip",
    "enable_tracking",
    "require_tracking",
    "restore_tip",
    "tip_state",
]


def enable_tracking() -> None:
    """Turn on PLR's process-wide tip and volume tracking (see the module docstring)."""
    set_tip_tracking(True)
    set_volume_tracking(True)


def require_tracking() -> None:
    """Raise :class:`InstrumentError` if PLR's tracking was switched off after setup."""
    if not (does_volume_tracking() and does_tip_tracking()):
        raise InstrumentError(
            "PyLabRobot tip/volume tracking was switched off in this process; the liquid "
            "handler's volumes and tips can no longer be trusted",
            hint="do not call pylabrobot.resources.set_*_tracking(False) or no_*_tracking() "
            "while a lab is running",
        )


class TrackerSnapshot:
    """The state of the trackers one call may touch, restorable without side effects.

    ``containers``: wells whose volume may change; ``spots``: tip spots; ``head``: the channel
    tip trackers (a mounted tip's volume is saved with it).
    """

    __slots__ = ("_head", "_spots", "_volumes")

    def __init__(
        self,
        containers: Iterable[Container] = (),
        spots: Iterable[TipSpot] = (),
        head: Iterable[TipTracker] = (),
    ) -> None:
        self._volumes = [
            (c.tracker, c.tracker.volume, c.tracker.pending_volume) for c in containers
        ]
        self._spots = [tip_state(s.tracker) for s in spots]
        self._head = [tip_state(t) for t in head]

    def committed_heads(self) -> list[int]:
        """Indices (into ``head``) of the channel tip trackers whose committed state is no longer
        the saved one: a tip mounted or dropped, or the mounted tip's volume changed. After a
        backend failure these are the channels PLR committed as done (a ``ChannelizedError``
        naming only the others, or the tip presence the backend reports)."""
        changed = []
        for i, (tracker, tip, _, _, tip_volume, _) in enumerate(self._head):
            now = tip_fields(tracker)[0]
            if now is not tip or (tip_volume is not None and tip.tracker.volume != tip_volume[0]):
                changed.append(i)
        return changed

    def restore(self) -> None:
        """Put every saved attribute back (fires no PLR callbacks)."""
        for tracker, volume, pending in self._volumes:
            tracker.volume, tracker.pending_volume = volume, pending
        for state in (*self._spots, *self._head):
            restore_tip(state)


TipState = tuple[Any, ...]


def tip_state(tracker: TipTracker) -> TipState:
    """A tip tracker's tip (mounted or pending), the tip's origin and the tips' volumes."""
    tip, pending, origin = tip_fields(tracker)
    tip_volume = (tip.tracker.volume, tip.tracker.pending_volume) if tip is not None else None
    pending_volume = (
        (pending.tracker.volume, pending.tracker.pending_volume)
        if pending is not None and pending is not tip
        else None
    )
    return tracker, tip, pending, origin, tip_volume, pending_volume


def restore_tip(state: TipState, into: TipTracker | None = None) -> None:
    """Put a :func:`tip_state` back, into its own tracker or into ``into``."""
    tracker, tip, pending, origin, tip_volume, pending_volume = state
    tracker = into if into is not None else tracker
    set_tip_fields(tracker, tip, pending, origin)
    if tip is not None and tip_volume is not None:
        tip.tracker.volume, tip.tracker.pending_volume = tip_volume
    if pending is not None and pending_volume is not None:
        pending.tracker.volume, pending.tracker.pending_volume = pending_volume


def clear_tip(tracker: TipTracker) -> None:
    """Leave ``tracker`` without a tip, as a new one is (fires no callbacks)."""
    set_tip_fields(tracker, None, None, None)
