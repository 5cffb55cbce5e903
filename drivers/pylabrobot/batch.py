"""``lh_transfer``'s planner: a batch of transfers → multi-channel steps, dry-run first.

**Schedule.** Transfers keep their order's meaning but not its sequence: each goes into the
earliest round after every earlier transfer it depends on (one fills a well the other draws
from or fills, or mixes in a well the other touches), with room (at most one transfer per
channel) and PLR-placeable containers (a round's sources, and its destinations, are all
different wells or all one trough the channels fit in side by side). A 2-fold serial dilution
given column by column becomes one round per column. In a round, channels are assigned back to
front (channel 0 to the backmost well), as a row of channels on one arm reaches them.

**Rounds.** A round is: drops and pick-ups as the tip policy says (one multi-channel call
each); per trip one multi-channel aspirate and one dispense (a volume above the tip's capacity
is split into equal trips, the same tip carrying them all); then ``mix_cycles`` multi-channel
aspirate/dispense cycles in the destinations. Tips picked up are dropped at the end.

**Dry run.** Every step is checked, in order, against :class:`~.multichannel.Belief` — PLR's
believed volumes and the tips the batch would mount — so sequential effects count (a well
filled by transfer 3 can feed transfer 4), and a failure anywhere refuses the whole batch with
the transfer it is about (``/transfers/17/volume``) before anything moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pint

from labtools.drivers.pylabrobot.checks import EPS_UL
from labtools.drivers.pylabrobot.geometry import Positions
from labtools.drivers.pylabrobot.multichannel import Belief, Handler, Step, TipSlot, fits
from labtools.drivers.pylabrobot.plr import Container, TipSpot
from labtools.errors import (
    Interlock,
    InvalidArguments,
    NotSupported,
    OutOfRange,
    PreconditionFailed,
    ToolError,
)
from labtools.instruments import TipType
from labtools.instruments.liquid_handler import TransferNote
from labtools.units import magnitude

__all__ = ["MAX_TRANSFERS", "Move", "Plan", "plan", "schedule"]

UL = "microliter"
#: transfers one batch may hold (a 1536-well plate's worth)
MAX_TRANSFERS = 1536


@dataclass(frozen=True, eq=False)
class Move:
    """One transfer of the batch, resolved: ``index`` in the caller's list, volume in µL."""

    index: int
    source: Container
    source_ref: str
    destination: Container
    destination_ref: str
    ul: float
    volume: pint.Quantity


@dataclass
class Plan:
    """The steps a batch takes, and what the result reports."""

    steps: list[Step] = field(default_factory=list)
    rounds: int = 0
    trips: int = 0
    tips_used: int = 0
    ul: float = 0.0
    notes: list[TransferNote] = field(default_factory=list)


def plan(
    handler: Handler,
    transfers: Sequence[Any],
    tip_rack: str,
    tips: str,
    channels: Sequence[int],
    mix_cycles: int,
    mix_volume: pint.Quantity,
) -> Plan:
    """The checked plan of a batch, or the tool error of its first step that would fail."""
    if not transfers:
        raise InvalidArguments(
            "give at least one transfer", field="/transfers", hint="e.g. one source to one well"
        )
    if len(transfers) > MAX_TRANSFERS:
        raise InvalidArguments(
            f"{len(transfers)} transfers in one batch",
            field="/transfers",
            hint=f"at most {MAX_TRANSFERS}",
        )
    moves = [_move(handler, i, t) for i, t in enumerate(transfers)]
    chans = _channels(handler, channels, tips)
    rack_type, spots = _rack(handler, tip_rack, chans) if tips != "mounted" else (None, [])
    mix_ul = magnitude(mix_volume, UL) if mix_cycles > 0 else 0.0
    rounds = schedule(handler, moves, chans, mixing=mix_cycles > 0)
    belief = Belief(handler._dead_volume, handler._suggest_tips)
    if tips == "mounted":
        for ch in chans:
            tip = handler.plr.head[ch].get_tip()
            belief.tips[ch] = TipSlot(
                handler._tip_type(tip, "/channels"), tip.tracker.get_used_volume()
            )
    out = Plan(rounds=len(rounds), ul=sum(m.ul for m in moves))
    last_source: dict[int, Container] = {}  # channel → what its batch tip last drew
    mounted: list[int] = []  # channels holding a tip of this batch, in pick-up order
    used = 0
    for round_ in rounds:
        pairs = list(zip(chans, round_, strict=False))
        if tips != "mounted":
            if tips == "new":
                fresh = [ch for ch, _ in pairs]
            elif tips == "per_source":
                fresh = [ch for ch, m in pairs if last_source.get(ch) is not m.source]
            else:  # reuse
                fresh = [ch for ch, _ in pairs if ch not in mounted]
            stale = [ch for ch in fresh if ch in mounted]
            if stale:
                out.steps.append(Step("drop", stale, what="tip change"))
                mounted = [ch for ch in mounted if ch not in stale]
            if fresh:
                taken = spots[used : used + len(fresh)]
                used += len(fresh)
                out.steps.append(Step("pick_up", sorted(fresh), spots=taken, what="tips"))
                for ch in fresh:
                    belief.tips[ch] = TipSlot(rack_type)  # type: ignore[arg-type]  # a rack's type
                mounted += fresh
        _trips(out, belief, pairs, handler.limits.max_trips)
        _imprecise(out, handler, belief, pairs)
        for ch, m in pairs:
            last_source[ch] = m.source
        for _ in range(mix_cycles):
            _mix(out, belief, pairs, mix_ul, mix_volume)
        if tips == "new":
            out.steps.append(Step("drop", [ch for ch, _ in pairs], what="used tips"))
            mounted = []
    if mounted:
        out.steps.append(Step("drop", sorted(mounted), what="used tips"))
    if used > len(spots):
        raise Interlock(
            f"the batch needs {used} tips; {tip_rack} has {len(spots)}",
            field="/tip_rack",
            hint="split the batch, or use 'reuse' or 'per_source'; tip racks: "
            + handler.view.tips_hint(),
        )
    out.tips_used = used
    out.notes = sorted([*out.notes, *_notes(moves, belief)], key=lambda n: n["transfer"])
    return out


def schedule(
    handler: Handler, moves: Sequence[Move], chans: Sequence[int], *, mixing: bool
) -> list[list[Move]]:
    """Rounds of at most ``len(chans)`` transfers (see the module docstring), each round's
    transfers ordered back to front.

    Linear in the batch: a transfer's earliest round comes from the last round each container
    was filled or drawn from, a round answers whether a transfer joins it from two id sets, each
    (container, channel count) is fitted once, and rounds that can no longer take a container
    (full, or holding it where it cannot be shared) are skipped for good.
    """
    rounds: list[_Round] = []
    filled: dict[int, int] = {}  # id(container) → the last round a transfer fills it in
    drawn: dict[int, int] = {}  # id(container) → the last round a transfer draws from it
    skip: dict[tuple[str, int], int] = {}  # (side, id(container)) → first round that may take it
    fitted: dict[tuple[int, int], bool] = {}
    first_open = 0  # every round before it is full

    def fit(container: Container, n: int) -> bool:
        key = (id(container), n)
        found = fitted.get(key)
        if found is None:
            found = fitted[key] = fits(handler, container, chans[:n])
        return found

    for t in moves:
        # after every transfer filling its source or drawing from its destination, and when
        # mixing every one filling its destination (two draws from one well, or two fills,
        # commute)
        after = max(filled.get(id(t.source), -1), drawn.get(id(t.destination), -1))
        if mixing:
            after = max(after, filled.get(id(t.destination), -1))
        while first_open < len(rounds) and len(rounds[first_open].moves) >= len(chans):
            first_open += 1
        keys = (("source", id(t.source)), ("destination", id(t.destination)))
        ptr = [max(first_open, skip.get(key, 0)) for key in keys]
        r = max(after + 1, *ptr)
        while r < len(rounds):
            blocked = rounds[r].blocks(t, len(chans), fit)
            if not blocked:
                break
            for j, (side, _) in enumerate(keys):
                if side in blocked and ptr[j] == r:  # every round up to r blocks it there
                    ptr[j] = r + 1
            r += 1
        skip.update(zip(keys, ptr, strict=True))
        if r == len(rounds):
            rounds.append(_Round())
        rounds[r].add(t)
        filled[id(t.destination)] = max(filled.get(id(t.destination), -1), r)
        drawn[id(t.source)] = max(drawn.get(id(t.source), -1), r)
    where = Positions()

    def back_to_front(move: Move) -> tuple[float, float, int]:
        return (-where.y(move.source), -where.y(move.destination), move.index)

    return [sorted(round_.moves, key=back_to_front) for round_ in rounds]


@dataclass(eq=False)
class _Round:
    """The transfers of one round, and the ids of its sources and of its destinations: on each
    side either all different, or (two or more transfers) all one container."""

    moves: list[Move] = field(default_factory=list)
    sources: set[int] = field(default_factory=set)
    destinations: set[int] = field(default_factory=set)

    def blocks(
        self, t: Move, channels: int, fit: Callable[[Container, int], bool]
    ) -> tuple[str, ...]:
        """The sides ("source", "destination") on which ``t`` cannot join; empty if it can.
        Either side blocks a full round. A side that blocks a container once always will."""
        n = len(self.moves)
        if n >= channels:
            return ("source", "destination")
        out = []
        for side, ids, container in (
            ("source", self.sources, t.source),
            ("destination", self.destinations, t.destination),
        ):
            if id(container) not in ids:
                if len(ids) < n:  # the side shares one other container
                    out.append(side)
            elif len(ids) > 1 or not fit(container, n + 1):
                out.append(side)
        return tuple(out)

    def add(self, t: Move) -> None:
        self.moves.append(t)
        self.sources.add(id(t.source))
        self.destinations.add(id(t.destination))


def _trips(out: Plan, belief: Belief, pairs: list[tuple[int, Move]], max_trips: int) -> None:
    """The round's aspirate/dispense steps, one pair per trip, dry-run."""
    counts = []
    trip_volumes: list[pint.Quantity] = []  # one trip's volume in the caller's unit (for errors)
    for ch, m in pairs:
        capacity = belief.tips[ch].tip_type.volume.high
        k = max(1, math.ceil(m.ul / capacity - 1e-9))
        if k > max_trips:
            raise OutOfRange(
                f"transfer {m.index}: {m.ul:g} µL would take {k} trips with a {capacity:g} µL tip",
                field=f"/transfers/{m.index}/volume",
                hint=f"at most {max_trips} trips: {capacity * max_trips:g} µL",
            )
        counts.append(k)
        trip_volumes.append(m.volume if k == 1 else m.volume * (1.0 / k))
        out.trips += k
        if k > 1:
            out.notes.append(
                {"transfer": m.index, "note": f"split into {k} trips of {m.ul / k:.4g} µL"}
            )
    for trip in range(max(counts)):
        active = [
            (ch, m, k, volume)
            for (ch, m), k, volume in zip(pairs, counts, trip_volumes, strict=True)
            if k > trip
        ]
        for kind in ("aspirate", "dispense"):
            step = Step(kind, [a[0] for a in active], what=f"transfer {active[0][1].index}")
            for ch, m, k, volume in active:
                ul, at = m.ul / k, f"/transfers/{m.index}/volume"
                well = m.source if kind == "aspirate" else m.destination
                ref = m.source_ref if kind == "aspirate" else m.destination_ref
                _dry(belief, kind, ch, well, ref, ul, volume, at, m)
                step.containers.append(well)
                step.volumes.append(ul)
            out.steps.append(step)


def _imprecise(out: Plan, handler: Handler, belief: Belief, pairs: list[tuple[int, Move]]) -> None:
    """Notes on transfers below the volume their tip pipettes precisely, with the rack to use."""
    for ch, m in pairs:
        tip_type = belief.tips[ch].tip_type
        capacity = tip_type.volume.high
        trip = m.ul / max(1, math.ceil(m.ul / capacity - 1e-9))
        precise = handler._precise_from(tip_type)
        if trip < precise - EPS_UL:
            better = handler._suggest_tips(trip, UL)
            out.notes.append(
                {
                    "transfer": m.index,
                    "note": f"{trip:.4g} µL is below the {precise:g} µL a {tip_type.name} tip "
                    "pipettes precisely: expect a larger relative error"
                    + (f"; {better}" if better else ""),
                }
            )


def _mix(
    out: Plan, belief: Belief, pairs: list[tuple[int, Move]], ul: float, volume: pint.Quantity
) -> None:
    """One mixing cycle in the round's destinations: a multi-channel aspirate and dispense."""
    for kind in ("aspirate", "dispense"):
        step = Step(kind, [ch for ch, _ in pairs], what="mixing")
        for ch, m in pairs:
            _dry(belief, kind, ch, m.destination, m.destination_ref, ul, volume, "/mix_volume", m)
            step.containers.append(m.destination)
            step.volumes.append(ul)
        out.steps.append(step)


def _dry(
    belief: Belief,
    kind: str,
    channel: int,
    well: Container,
    ref: str,
    ul: float,
    volume: pint.Quantity,
    at: str,
    move: Move,
) -> None:
    """One channel's part of a step on the dry-run belief; its refusal names the transfer."""
    try:
        if kind == "aspirate":
            belief.draw(channel, well, ref, ul, volume, at)
        else:
            belief.expel(channel, well, ref, ul, volume, at)
    except ToolError as error:
        error.message = (
            f"transfer {move.index} ({move.source_ref} → {move.destination_ref}): {error.message}"
        )
        raise


def _notes(moves: Sequence[Move], belief: Belief) -> list[TransferNote]:
    """Notes on wells the batch leaves below their dead volume (liquid no tip can draw)."""
    last = {id(move.destination): move for move in moves}
    notes: list[TransferNote] = []
    for container, holds in belief.touched():
        m = last.get(id(container))
        dead = belief.dead(container)
        if m is not None and EPS_UL < holds < dead - EPS_UL:
            notes.append(
                {
                    "transfer": m.index,
                    "note": f"{m.destination_ref} holds {holds:.4g} µL, below its dead volume "
                    f"({dead:.3g} µL): no tip can draw it",
                }
            )
    return notes


def _move(handler: Handler, i: int, raw: Any) -> Move:
    source, source_ref = handler.view.container(raw["source"], f"/transfers/{i}/source")
    dest, dest_ref = handler.view.container(raw["destination"], f"/transfers/{i}/destination")
    volume = raw["volume"]
    return Move(i, source, source_ref, dest, dest_ref, magnitude(volume, UL), volume)


def _channels(handler: Handler, channels: Sequence[int], tips: str) -> list[int]:
    """The channels the batch uses: those given (each once, with a tip for 'mounted', without
    one otherwise), or all that qualify."""
    want_tip = tips == "mounted"
    need = "a tip" if want_tip else "no tip"
    if channels:
        seen: set[int] = set()
        for i, ch in enumerate(channels):
            if ch in seen:
                raise InvalidArguments(
                    f"channel {ch} is listed twice", field=f"/channels/{i}", hint="list each once"
                )
            seen.add(ch)
            tracker = handler.plr.head.get(ch)
            if tracker is None or tracker.has_tip != want_tip:
                raise PreconditionFailed(
                    f"channel {ch} {'has no tip' if want_tip else 'already has a tip'}",
                    field=f"/channels/{i}",
                    hint=f"tips '{tips}' uses channels with {need}"
                    + ("" if want_tip else "; drop it first (lh_drop_tips)"),
                )
        return sorted(channels)
    chosen = [
        ch
        for ch in range(handler.limits.channels)
        if (t := handler.plr.head.get(ch)) is not None and t.has_tip == want_tip
    ]
    if not chosen:
        raise PreconditionFailed(
            f"no channel has {need}",
            field="/channels",
            hint="pick up tips first (lh_pick_up_tips)"
            if want_tip
            else "drop tips first (lh_drop_tips)",
        )
    return chosen


def _rack(handler: Handler, name: str, chans: Sequence[int]) -> tuple[TipType, list[TipSpot]]:
    """The tip rack's type and its spots that still hold tips, in pick-up order."""
    rack = handler.view.tip_rack(name, "/tip_rack")
    spots = handler.view.next_tips(rack, rack.num_items)
    if not spots:
        raise Interlock(
            f"{rack.name} has no tips left",
            field="/tip_rack",
            hint=f"tip racks: {handler.view.tips_hint()}",
        )
    tip = spots[0].get_tip()
    tip_type = handler._tip_type(tip, "/tip_rack")
    for i, ch in enumerate(chans):
        if not handler.plr.backend.can_pick_up_tip(ch, tip):
            raise NotSupported(
                f"channel {ch} cannot take {tip_type.name} tips",
                field=f"/channels/{i}",
                hint="use other channels or another tip rack",
            )
    return tip_type, spots
