"""Multi-channel operations: a dry run on a copy of PLR's belief, then one PLR call per step.

:class:`Belief` overlays the volumes an operation (or a whole batch) would leave on PLR's
trackers without touching them, and what each channel's tip would hold; every step is checked
against it (:mod:`~labtools.drivers.pylabrobot.checks`) before anything moves. :class:`Step` is
one multi-channel PLR call — ``pick_up_tips``, ``aspirate``, ``dispense`` or ``drop_tips`` with
``use_channels`` — and :func:`run` executes it; if PLR or the backend fails, the trackers it
touched are restored and the channels the backend reports done are recorded again, so the belief
holds what really moved. :func:`run_steps` runs a sequence of steps; :func:`items` resolves and
dry-runs the items of ``lh_aspirate``, ``lh_dispense`` and ``lh_mix``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import pint

from labtools.drivers.pylabrobot.checks import Suggest, check_draw, check_expel, check_tip_range
from labtools.drivers.pylabrobot.deck_view import DeckView
from labtools.drivers.pylabrobot.errors import tool_error
from labtools.drivers.pylabrobot.internals import channel_spread_offsets
from labtools.drivers.pylabrobot.plr import ChannelsDoNotFitError, Container, Tip, TipSpot
from labtools.drivers.pylabrobot.trackers import TrackerSnapshot, require_tracking
from labtools.errors import Interlock, InvalidArguments, OutOfRange, PreconditionFailed, ToolError
from labtools.instruments import LiquidHandlerLimits, TipType
from labtools.units import magnitude

__all__ = [
    "Belief",
    "Handler",
    "Item",
    "Step",
    "TipSlot",
    "belief_for",
    "fits",
    "items",
    "run",
    "run_steps",
    "spread",
]

Kind = Literal["pick_up", "aspirate", "dispense", "drop"]
UL = "microliter"


class Handler(Protocol):
    """What the multi-channel steps and the batch planner use of ``Handler``."""

    plr: Any  # the PLR front end
    view: DeckView
    limits: LiquidHandlerLimits

    def _dead_volume(self, container: Container) -> float: ...

    def _tip_type(self, tip: Tip, field: str = ...) -> TipType: ...

    def _suggest_tips(self, ul: float, unit: str) -> str: ...

    def _precise_from(self, tip_type: TipType) -> float: ...


@dataclass
class TipSlot:
    """What a channel's tip is and holds (µL), in a dry run."""

    tip_type: TipType
    holds: float = 0.0


class Belief:
    """PLR's believed well volumes (µL) with a dry run's changes on top; PLR is never touched.

    ``dead``: a container's dead volume (µL). ``tips``: channel → its tip in the dry run.
    ``suggest``: words the tip rack to use when a volume is outside a tip's range.
    """

    def __init__(self, dead: Callable[[Container], float], suggest: Suggest | None = None) -> None:
        self._dead = dead
        self._suggest = suggest
        self._volumes: dict[int, tuple[Container, float]] = {}
        self.tips: dict[int, TipSlot] = {}

    def holds(self, container: Container) -> float:
        found = self._volumes.get(id(container))
        return found[1] if found is not None else container.tracker.get_used_volume()

    def dead(self, container: Container) -> float:
        return self._dead(container)

    def touched(self) -> list[tuple[Container, float]]:
        """The containers the dry run changed, with the volume (µL) it leaves in each."""
        return list(self._volumes.values())

    def draw(
        self,
        channel: int,
        container: Container,
        ref: str,
        ul: float,
        volume: pint.Quantity,
        at: str,
    ) -> None:
        """Aspirate ``ul`` on ``channel`` from ``container`` (``at``: the volume's pointer)."""
        slot = self.tips[channel]
        check_tip_range(ul, volume, slot.tip_type, at, suggest=self._suggest)
        holds = self.holds(container)
        check_draw(
            ul,
            volume,
            channel=channel,
            tip_type=slot.tip_type,
            tip_holds=slot.holds,
            well=ref,
            well_holds=holds,
            dead=self.dead(container),
            field=at,
        )
        slot.holds += ul
        self._volumes[id(container)] = (container, holds - ul)

    def expel(
        self,
        channel: int,
        container: Container,
        ref: str,
        ul: float,
        volume: pint.Quantity,
        at: str,
    ) -> None:
        """Dispense ``ul`` on ``channel`` into ``container``."""
        slot = self.tips[channel]
        holds = self.holds(container)
        check_expel(
            ul,
            volume,
            channel=channel,
            tip_holds=slot.holds,
            well=ref,
            well_holds=holds,
            well_capacity=container.tracker.max_volume,
            field=at,
        )
        slot.holds = max(slot.holds - ul, 0.0)
        self._volumes[id(container)] = (container, holds + ul)


@dataclass
class Step:
    """One multi-channel PLR call. ``containers``/``volumes`` (µL) for aspirate and dispense,
    ``spots`` for a pick-up; ``what`` names it in an error ("transfer 3")."""

    kind: Kind
    channels: list[int]
    containers: list[Container] = field(default_factory=list)
    volumes: list[float] = field(default_factory=list)
    spots: list[TipSpot] = field(default_factory=list)
    what: str = ""


#: the hint of a call that failed after part of it ran: the belief holds what did
_SEE_THE_DECK = "lh_get_deck shows the volumes and tips now"


async def run(handler: Handler, step: Step) -> None:
    """Execute ``step`` as one PLR call with ``use_channels``. If PLR or the backend fails, the
    trackers it touched are restored, then the channels the backend reports done (PLR commits
    them: those a ``ChannelizedError`` does not name, or that the tip presence shows) are
    recorded again — so the belief holds what really moved — and PLR's exception becomes a tool
    error that names them."""
    plr = handler.plr
    require_tracking()
    head = [plr.head[ch] for ch in step.channels]
    snap = TrackerSnapshot(containers=step.containers, spots=step.spots, head=head)
    try:
        if step.kind == "pick_up":
            await plr.pick_up_tips(step.spots, use_channels=step.channels)
        elif step.kind == "drop":
            trash = plr.deck.get_trash_area()
            await plr.drop_tips(
                [trash] * len(step.channels), use_channels=step.channels, allow_nonzero_volume=True
            )
        else:
            call = plr.aspirate if step.kind == "aspirate" else plr.dispense
            await call(
                step.containers,
                vols=step.volumes,
                use_channels=step.channels,
                spread=spread(step.containers),
            )
    except Exception as exc:
        done = snap.committed_heads()
        snap.restore()
        for i in done:
            _record(handler, step, i)
        channels = ", ".join(map(str, step.channels))
        label = f" ({step.what})" if step.what else ""
        error = tool_error(exc, f"{step.kind} on channels {channels}{label}")
        if done:
            moved = ", ".join(str(step.channels[i]) for i in done)
            error.message += f"; channel(s) {moved} completed it, and the belief records that"
            error.hint = _SEE_THE_DECK
        raise error from exc


def _record(handler: Handler, step: Step, i: int) -> None:
    """Record in PLR's trackers that channel ``step.channels[i]`` did its part of ``step``
    (through PLR's own tracker operations, one channel at a time: PLR 0.2.2 commits a shared
    container's queue whole when any one channel succeeds)."""
    tracker = handler.plr.head[step.channels[i]]
    if step.kind == "pick_up":
        spot = step.spots[i]
        tip = spot.get_tip()
        if not spot.tracker.is_disabled:
            spot.tracker.remove_tip(commit=True)
        tracker.add_tip(tip, origin=spot, commit=True)
        return
    if step.kind == "drop":
        tracker.remove_tip(commit=True)
        return
    container, ul, tip = step.containers[i], step.volumes[i], tracker.get_tip()
    well = None if container.tracker.is_disabled else container.tracker
    if step.kind == "aspirate":
        if well is not None:
            well.remove_liquid(ul)
        tip.tracker.add_liquid(ul)
    else:
        tip.tracker.remove_liquid(ul)
        if well is not None:
            well.add_liquid(ul)
    for changed in (well, tip.tracker):
        if changed is not None:
            changed.commit()


async def run_steps(handler: Handler, steps: Sequence[Step]) -> None:
    """Run ``steps`` in order; a failure after the first says that the earlier steps ran (the
    belief holds them, as the world does)."""
    for n, step in enumerate(steps):
        try:
            await run(handler, step)
        except ToolError as error:
            if n:
                error.message += f" (step {n + 1} of {len(steps)}; earlier steps ran)"
                error.hint = _SEE_THE_DECK
            raise


def spread(containers: Sequence[Container]) -> str:
    """PLR's placement: channels sharing one container (or one channel in a container with
    no-go zones) are spread across it ("wide"); otherwise each goes to its container's centre."""
    first = containers[0]
    if all(c is first for c in containers) and (len(containers) > 1 or first.no_go_zones):
        return "wide"
    return "custom"


def fits(handler: Handler, container: Container, channels: Sequence[int]) -> bool:
    """Whether PLR can place ``channels`` side by side in ``container`` (its own spread)."""
    if len(channels) < 2:
        return True
    try:
        channel_spread_offsets(handler.plr, container, channels, "wide")
    except (ChannelsDoNotFitError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class Item:
    """One resolved item of a multi-channel call."""

    channel: int
    container: Container
    ref: str
    ul: float
    volume: pint.Quantity


def items(handler: Handler, raw: Sequence[Any]) -> list[Item]:
    """The items of a multi-channel call, resolved and checked for shape: channels in range
    and each once, wells known, tips mounted, several channels in one well only when every
    item names it and they fit. Volumes are checked by the caller's dry run."""
    if not raw:
        raise InvalidArguments("give at least one item", field="/items", hint="e.g. one channel")
    limits = handler.limits
    if len(raw) > limits.channels:
        raise InvalidArguments(
            f"{len(raw)} items for {limits.channels} channels",
            field="/items",
            hint=f"at most {limits.channels} items, one per channel",
        )
    out: list[Item] = []
    seen: set[int] = set()
    for i, item in enumerate(raw):
        channel = item["channel"]
        if not limits.channel.contains(channel):
            raise OutOfRange(
                f"channel {channel} does not exist",
                field=f"/items/{i}/channel",
                hint=f"channels: {limits.channel.describe()}",
            )
        if channel in seen:
            raise InvalidArguments(
                f"channel {channel} is listed twice",
                field=f"/items/{i}/channel",
                hint="one item per channel",
            )
        seen.add(channel)
        volume = item["volume"]
        if not limits.volume.contains(volume):
            unit = str(volume.units)
            raise OutOfRange(
                f"{volume.magnitude:g} {unit} is outside what any tip takes",
                field=f"/items/{i}/volume",
                hint=f"allowed: {limits.volume.describe(unit)}",
            )
        container, ref = handler.view.container(item["well"], f"/items/{i}/well")
        tracker = handler.plr.head.get(channel)
        if tracker is None or not tracker.has_tip:
            raise PreconditionFailed(
                f"channel {channel} has no tip",
                field=f"/items/{i}/channel",
                hint="pick one up first (lh_pick_up_tips)",
            )
        out.append(Item(channel, container, ref, magnitude(volume, UL), volume))
    first = out[0].container
    shared = len({id(it.container) for it in out}) < len(out)
    if shared:
        for i, it in enumerate(out):
            if it.container is not first:
                raise Interlock(
                    "two channels cannot enter the same well while others go elsewhere",
                    field=f"/items/{i}/well",
                    hint="give every channel its own well, or all of them one trough",
                )
        if not fits(handler, first, [it.channel for it in out]):
            raise Interlock(
                f"{len(out)} channels do not fit side by side in {out[0].ref}",
                field="/items/1/well",
                hint="one channel per well (a trough takes several)",
            )
    return out


def belief_for(handler: Handler, chosen: Sequence[Item]) -> Belief:
    """A dry-run belief with the mounted tips of the items' channels."""
    belief = Belief(handler._dead_volume, handler._suggest_tips)
    for i, it in enumerate(chosen):
        tip = handler.plr.head[it.channel].get_tip()
        tip_type = handler._tip_type(tip, f"/items/{i}/channel")
        belief.tips[it.channel] = TipSlot(tip_type, tip.tracker.get_used_volume())
    return belief
