"""The twin's belief made the real lab's: volumes, tips and plate places, copied before a call.

A :class:`DeckMirror` pairs a real :class:`PLRLiquidHandler` with its twin once, by resource
name (the two decks are built from the same configuration), and :meth:`~DeckMirror.sync`
copies, in one pass over the pairs, what PLR believes on the real deck onto the twin's:

- every container's volume tracker (committed and pending volume);
- every tip spot's tip, and each channel's tip (its origin and the volume it holds), committed
  and pending alike (PLR's ``has_tip`` reads the pending one) — the twin keeps its own tip
  objects, made by its own spots;
- where each plate sits (a plate the real lab moved is re-seated on the twin's site of that
  name: rare, and only then through PLR's assignment);
- what the physics backend knows of the mounted tips (a tip the twin did not pick up itself
  holds water of the believed volume).

Nothing is copied back, and no backend is called. The cost is a few hundred nanoseconds per
container and tip spot (``bench/shadow.py`` measures it); in the common case, where the twin ran
the same calls as the real lab, every value is already equal and nothing changes.
"""

from __future__ import annotations

import copy
from typing import Any

from labtools.drivers.pylabrobot.internals import set_tip_fields, tip_fields
from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.drivers.pylabrobot.plr import Container, Deck, Plate, TipSpot
from labtools.instrument import Instrument
from labtools.simulators.liquid_handling import (
    BackendSnapshot,
    PhysicsLiquidHandlerBackend,
    TipLoad,
)
from labtools.simulators.world import Mixture

__all__ = ["DeckMirror", "mirrors"]


def mirrors(real: dict[str, Instrument], twin: dict[str, Instrument]) -> dict[str, DeckMirror]:
    """A mirror for each real instrument whose belief the twin can follow: the liquid handlers,
    and the plate readers on their decks (whose plate is a place on the deck). Instruments
    without one are not shadowed."""
    out: dict[str, DeckMirror] = {}
    by_deck: dict[int, DeckMirror] = {}
    for name, inst in real.items():
        other = twin.get(name)
        if isinstance(inst, PLRLiquidHandler) and isinstance(other, PLRLiquidHandler):
            out[name] = by_deck[id(inst.plr.deck)] = DeckMirror(inst, other)
    for name, inst in real.items():
        other = twin.get(name)
        if isinstance(inst, PLRPlateReader) and isinstance(other, PLRPlateReader):
            deck = _deck_of(inst.reader)
            if deck is not None and id(deck) in by_deck:
                out[name] = by_deck[id(deck)]
    return out


_NO_TIP = (None, None, None)


def _held(tip: Any, pending: Any) -> Any:
    """The tip a channel holds as PLR answers ``has_tip``: the pending one, else the committed."""
    return pending if pending is not None else tip


def _deck_of(resource: Any) -> Deck | None:
    while resource is not None and not isinstance(resource, Deck):
        resource = resource.parent
    return resource


class DeckMirror:
    """Copies a real liquid handler's belief onto its twin (see the module docstring)."""

    def __init__(self, real: PLRLiquidHandler, twin: PLRLiquidHandler) -> None:
        self.real, self.twin = real, twin
        theirs = twin.plr.deck
        pairs = [
            (r, theirs.get_resource(r.name))
            for r in real.plr.deck.get_all_resources()
            if theirs.has_resource(r.name)
        ]
        self._volumes = [
            (r.tracker, t.tracker)
            for r, t in pairs
            if isinstance(r, Container) and isinstance(t, Container)
        ]
        self._spots = [
            (r.tracker, t) for r, t in pairs if isinstance(r, TipSpot) and isinstance(t, TipSpot)
        ]
        self._spot_of = {id(r): t for r, t in pairs if isinstance(r, TipSpot)}
        self._plates = [(r, t) for r, t in pairs if isinstance(r, Plate) and isinstance(t, Plate)]

    def sync(self) -> None:
        """Make the twin believe what the real handler believes now."""
        for mine, theirs in self._volumes:
            theirs.volume = mine.volume
            theirs.pending_volume = mine.pending_volume
        for mine, spot in self._spots:
            tip, pending, _ = tip_fields(mine)
            twin_tip, twin_pending, _ = tip_fields(spot.tracker)
            if (tip is None, pending is None) != (twin_tip is None, twin_pending is None):
                made = spot.make_tip() if tip is not None or pending is not None else None
                set_tip_fields(
                    spot.tracker,
                    made if tip is not None else None,
                    made if pending is not None else None,
                    spot,
                )
        for plate, twin_plate in self._plates:
            self._seat(plate, twin_plate)
        if self._sync_head():
            self._sync_backend()

    def _sync_head(self) -> bool:
        """Each twin channel's tip as the real channel's — the committed tip and the pending one
        (PLR's ``has_tip`` reads the pending one) — and its volume; whether any tip changed."""
        changed = False
        real_head = self.real.plr.head
        for channel, theirs in self.twin.plr.head.items():
            mine = real_head.get(channel)
            tip, pending, real_origin = tip_fields(mine) if mine is not None else _NO_TIP
            twin_tip, twin_pending, twin_origin = tip_fields(theirs)
            held = _held(tip, pending)
            if held is None:
                if twin_tip is not None or twin_pending is not None:
                    set_tip_fields(theirs, None, None, None)
                    changed = True
                continue
            origin = self._spot_of.get(id(real_origin))
            twin_held = _held(twin_tip, twin_pending)
            if (
                twin_held is None
                or twin_origin is not origin
                or (tip is None) != (twin_tip is None)
                or (pending is None) != (twin_pending is None)
            ):
                twin_held = origin.make_tip() if origin is not None else copy.deepcopy(held)
                committed = twin_held if tip is not None else None
                set_tip_fields(
                    theirs, committed, twin_held if pending is not None else None, origin
                )
                changed = True
            volumes = (held.tracker.volume, held.tracker.pending_volume)
            if (twin_held.tracker.volume, twin_held.tracker.pending_volume) != volumes:
                twin_held.tracker.volume, twin_held.tracker.pending_volume = volumes
                changed = True
        return changed

    def _sync_backend(self) -> None:
        """The physics backend's tip loads for the twin's mounted tips: kept where it mounted
        that tip itself, water of the believed volume where the tip came from the real lab."""
        backend = self.twin.plr.backend
        if not isinstance(backend, PhysicsLiquidHandlerBackend):
            return
        saved = backend.snapshot()
        loads: dict[int, TipLoad] = {}
        for channel, tracker in self.twin.plr.head.items():
            tip = _held(*tip_fields(tracker)[:2])
            if tip is None:
                continue
            load = saved.loads.get(channel)
            volume = float(tip.tracker.volume)
            if load is None or load.tip is not tip:
                load = TipLoad(tip, Mixture.solution(volume, {}), volume, volume)
            else:
                load.believed_ul = volume
            loads[channel] = load
        backend.restore(BackendSnapshot(loads, saved.racked))

    def _seat(self, plate: Plate, twin_plate: Plate) -> None:
        parent = plate.parent
        twin_parent = twin_plate.parent
        where = parent.name if parent is not None else None
        if where == (twin_parent.name if twin_parent is not None else None):
            return
        deck = self.twin.plr.deck
        if twin_parent is not None:
            twin_plate.unassign()
        if where is not None and deck.has_resource(where):
            deck.get_resource(where).assign_child_resource(twin_plate, location=plate.location)
