"""The labtools liquid-handler tools on a PyLabRobot (0.2.2) ``LiquidHandler``.

Any PLR liquid-handler backend slots in: Hamilton STAR/Vantage, Tecan EVO, Opentrons OT-2, the
chatterbox, or the physics simulator
``labtools.simulators.liquid_handling:PhysicsLiquidHandlerBackend``.
Every call is checked against PLR's beliefs (tracked volumes, mounted tips) before PLR sees it, so
a rejected call changes nothing; if PLR or the backend fails anyway, the touched trackers are
restored and PLR's exception becomes a typed tool error.

Configuration (TOML), e.g.::

    [instruments.lh]
    class = "labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"
    deck = "@deck.deck"
    labels = "@world.labels"
    tip_types = { tip_300ul = [1, 300, 10], tip_1000ul = [10, 1000, 100] }
    [instruments.lh.backend]
    class = "labtools.simulators.liquid_handling:PhysicsLiquidHandlerBackend"
    world = "@world"
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from labtools.config import ConfigError
from labtools.drivers.pylabrobot import multichannel
from labtools.drivers.pylabrobot.batch import plan
from labtools.drivers.pylabrobot.checks import check_tip_range, in_unit
from labtools.drivers.pylabrobot.deck_view import DeckView
from labtools.drivers.pylabrobot.drawing import DeckDrawing
from labtools.drivers.pylabrobot.errors import tool_error
from labtools.drivers.pylabrobot.geometry import dead_volume_ul
from labtools.drivers.pylabrobot.internals import (
    check_backend_arguments_once,
    check_resources_by_identity,
    log_commands_only_when_debugging,
)
from labtools.drivers.pylabrobot.multichannel import Item, Step
from labtools.drivers.pylabrobot.plate_moves import light_rotations
from labtools.drivers.pylabrobot.plr import (
    Container,
    Deck,
    ItemizedResource,
    LiquidHandlerBackend,
    Tip,
    TipRack,
)
from labtools.drivers.pylabrobot.plr import (
    LiquidHandler as PLRFrontEnd,
)
from labtools.drivers.pylabrobot.snapshot import HandlerSnapshot
from labtools.drivers.pylabrobot.tip_types import DEFAULT_TIP_TYPES, nominal_ul, parse_tip_types
from labtools.drivers.pylabrobot.trackers import enable_tracking
from labtools.errors import (
    InstrumentError,
    Interlock,
    InvalidArguments,
    NotSupported,
    PreconditionFailed,
    UnknownResource,
    brief,
)
from labtools.instrument import DataSnapshot
from labtools.instruments import LiquidHandler, LiquidHandlerLimits, TipType
from labtools.instruments.liquid_handler import (
    DeckState,
    LiquidMoved,
    MixDone,
    PlateMoved,
    TipsDropped,
    TipsPickedUp,
    TransferDone,
)
from labtools.units import qty

__all__ = ["DEFAULT_TIP_TYPES", "LiquidHandlerSnapshot", "PLRLiquidHandler"]

log = logging.getLogger(__name__)

UL = "microliter"


@dataclass(frozen=True)
class LiquidHandlerSnapshot:
    """What :meth:`PLRLiquidHandler.restore` puts back."""

    handler: HandlerSnapshot
    backend: Any
    labels: dict[str, str]
    data: DataSnapshot


class PLRLiquidHandler(LiquidHandler):
    """A PyLabRobot liquid handler behind the labtools tools.

    ``deck``: the PLR deck (tip racks, plates, containers, trash, plate sites and readers).
    ``backend``: any PLR ``LiquidHandlerBackend``. ``channels``: how many channels the tools
    offer; by default the backend's count (real backends learn it only in setup, so give it),
    never more than the backend's.
    ``labels``: container name → label of its contents (stocks), shown by ``get_deck``.
    ``volumes``: container name → the volume (µL) in it when the lab starts (what the operator
    filled; the handler's belief from then on is PLR's volume tracking), within its capacity.
    ``tip_types``: tip type name → ``[min, max]`` or ``[min, max, precise_from]`` µL per
    aspiration; ``max`` is the nominal volume of that type's PLR tips, below ``precise_from``
    (default ``min``) lh_transfer notes the volume as imprecise with that tip. No I/O here:
    :meth:`setup` connects.

    Settings that cannot be used raise :class:`~labtools.config.ConfigError` naming the setting
    (``volumes."plate_1:A1"``), before anything is changed.
    """

    def __init__(
        self,
        name: str,
        deck: Deck,
        backend: LiquidHandlerBackend,
        *,
        channels: int | None = None,
        labels: Mapping[str, str] | None = None,
        volumes: Mapping[str, float] | None = None,
        tip_types: Mapping[str, Sequence[float]] = DEFAULT_TIP_TYPES,
    ) -> None:
        super().__init__(name)
        if not isinstance(deck, Deck):
            raise ConfigError(f"needs a PyLabRobot Deck, not a {type(deck).__name__}", key="deck")
        if not isinstance(backend, LiquidHandlerBackend):
            raise ConfigError(
                f"needs a PyLabRobot LiquidHandlerBackend, not a {type(backend).__name__}",
                key="backend",
            )
        # a simulator backend says so; PLR's own chatterboxes and simulators by their names
        self.dry_run = not getattr(backend, "simulated", False) and any(
            word in type(backend).__name__ for word in ("Chatterbox", "Simulator")
        )
        self.simulated = bool(getattr(backend, "simulated", False)) or self.dry_run
        self._types, self._precise = parse_tip_types(tip_types)
        self.limits = LiquidHandlerLimits(
            channels=_channel_count(channels, backend), tip_types=tuple(self._types.values())
        )
        self.plr = PLRFrontEnd(backend=backend, deck=deck)
        check_resources_by_identity(self.plr)
        check_backend_arguments_once(self.plr)
        log_commands_only_when_debugging(self.plr)
        self.view = DeckView(deck)
        self._dead: dict[int, float] = {}
        self._rack_types: dict[int, TipType | None] = {}  # id(rack) → its tips' type
        # racks whose tips have no configured type (e.g. a STAR's teaching needles) are not offered
        self.view.tip_racks = [r for r in self.view.tip_racks if self._usable(r)]
        self.labels: dict[str, str] = {}
        for ref, label in (labels or {}).items():
            if not isinstance(label, str):
                raise ConfigError(
                    f"a label is text, not {type(label).__name__}", key=("labels", ref)
                )
            self.labels[self._configured(ref, "labels")[1]] = label
        filled = []  # all checked before any tracker is set
        for ref, microliters in (volumes or {}).items():
            container, _ = self._configured(ref, "volumes")
            filled.append((container, _initial_volume(microliters, container, ref)))
        for container, microliters in filled:
            container.tracker.set_volume(microliters)

    # -- lifetime ------------------------------------------------------------------------------
    async def setup(self) -> None:
        """Turn on PLR's (process-wide) tip and volume tracking and set up the handler."""
        enable_tracking()
        if not self.plr.setup_finished:
            await self.plr.setup()
        have = self.plr.backend.num_channels
        if have < self.limits.channels:
            raise InstrumentError(
                f"the backend has {have} channels, fewer than the {self.limits.channels} "
                "configured",
                hint=f"configure channels = {have}",
            )

    async def stop(self) -> None:
        if self.plr.setup_finished:
            await self.plr.stop()

    # -- tips ----------------------------------------------------------------------------------
    async def pick_up_tips(self, tip_rack: str, channels: Sequence[int]) -> TipsPickedUp:
        rack = self.view.tip_rack(tip_rack, "/tip_rack")
        chans = self._channels(channels)
        for i, ch in enumerate(channels):
            if self._head(ch).has_tip:
                raise PreconditionFailed(
                    f"channel {ch} already has a tip",
                    field=f"/channels/{i}",
                    hint="drop it first (lh_drop_tips)",
                )
        spots = self.view.next_tips(rack, len(chans))
        if len(spots) < len(chans):
            raise Interlock(
                f"{rack.name} has {len(spots)} tips left, {len(chans)} needed",
                field="/tip_rack",
                hint=f"tip racks: {self.view.tips_hint()}",
            )
        tips = [spot.get_tip() for spot in spots]
        tip_type = self._tip_type(tips[0], "/tip_rack")
        backend = self.plr.backend
        for ch, tip in zip(chans, tips, strict=True):
            if not backend.can_pick_up_tip(ch, tip):
                raise NotSupported(
                    f"channel {ch} cannot take {tip_type.name} tips",
                    field=f"/channels/{list(channels).index(ch)}",
                    hint="use another channel or tip rack",
                )
        await multichannel.run(self, Step("pick_up", chans, spots=spots))
        left = sum(1 for s in rack.get_all_items() if s.tracker.has_tip)
        mounted = [
            {"channel": ch, "tip": self.view.spot_name(spot), "tip_type": tip_type.name}
            for ch, spot in zip(chans, spots, strict=True)
        ]
        return {"tips": mounted, "tips_left": left}  # type: ignore[typeddict-item]

    async def drop_tips(self, channels: Sequence[int]) -> TipsDropped:
        chans = self._channels(channels)
        for i, ch in enumerate(channels):
            if not self._head(ch).has_tip:
                raise PreconditionFailed(
                    f"channel {ch} has no tip",
                    field=f"/channels/{i}",
                    hint="channels with tips: " + self._tipped_hint(),
                )
        if not self.plr.deck.has_resource("trash"):
            raise NotSupported("the deck has no trash to drop tips into")
        await multichannel.run(self, Step("drop", chans))
        return {"channels": chans}

    # -- liquid --------------------------------------------------------------------------------
    async def aspirate(self, items: Sequence[Any]) -> LiquidMoved:
        chosen = multichannel.items(self, items)
        belief = multichannel.belief_for(self, chosen)
        for i, it in enumerate(chosen):
            belief.draw(it.channel, it.container, it.ref, it.ul, it.volume, f"/items/{i}/volume")
        await multichannel.run(self, self._step("aspirate", chosen))
        return self._moved(chosen)

    async def dispense(self, items: Sequence[Any]) -> LiquidMoved:
        chosen = multichannel.items(self, items)
        belief = multichannel.belief_for(self, chosen)
        for i, it in enumerate(chosen):
            at = f"/items/{i}/volume"
            tip_type = belief.tips[it.channel].tip_type
            check_tip_range(it.ul, it.volume, tip_type, at, suggest=self._suggest_tips)
            belief.expel(it.channel, it.container, it.ref, it.ul, it.volume, at)
        await multichannel.run(self, self._step("dispense", chosen))
        return self._moved(chosen)

    async def mix(self, items: Sequence[Any], cycles: int) -> MixDone:
        chosen = multichannel.items(self, items)
        belief = multichannel.belief_for(self, chosen)
        for i, it in enumerate(chosen):  # each cycle returns what it drew: one draw checks all
            belief.draw(it.channel, it.container, it.ref, it.ul, it.volume, f"/items/{i}/volume")
        kinds: tuple[Literal["aspirate", "dispense"], ...] = ("aspirate", "dispense")
        steps = []
        for cycle in range(cycles):
            for kind in kinds:
                step = self._step(kind, chosen)
                step.what = f"mix cycle {cycle + 1} of {cycles}"
                steps.append(step)
        await multichannel.run_steps(self, steps)
        mixed = [
            {"channel": it.channel, "well": it.ref, "volume": qty(round(it.ul, 4), UL)}
            for it in chosen
        ]
        return {"items": mixed, "cycles": cycles}  # type: ignore[typeddict-item]

    async def transfer(
        self,
        transfers: Sequence[Any],
        tip_rack: str,
        tips: str = "new",
        channels: Sequence[int] = (),
        mix_cycles: int = 0,
        mix_volume: Any = None,
    ) -> TransferDone:
        batch = plan(self, transfers, tip_rack, tips, channels, mix_cycles, mix_volume)
        if batch.steps and not self.plr.deck.has_resource("trash") and tips != "mounted":
            raise NotSupported("the deck has no trash to drop tips into")
        start = self._now()
        await multichannel.run_steps(self, batch.steps)
        return {
            "transfers": len(transfers),
            "volume": qty(round(batch.ul, 4), UL),
            "rounds": batch.rounds,
            "trips": batch.trips,
            "tips_used": batch.tips_used,
            "seconds": qty(round(self._now() - start, 3), "second"),
            "notes": batch.notes,
        }

    # -- plates --------------------------------------------------------------------------------
    async def move_plate(self, plate: str, destination: str) -> PlateMoved:
        moving = self.view.plate(plate, "/plate")
        origin = moving.parent
        if origin is not None and origin.name == destination:
            return {"plate": moving.name, "location": destination}
        site = self.view.site(destination, "/destination")
        if site.resource is not None:
            free = ", ".join(self.view.free_sites()) or "none"
            raise Interlock(
                f"{destination} is occupied by {site.resource.name}",
                field="/destination",
                hint=f"free sites: {free}",
            )
        if self.plr.backend.num_arms < 1:
            raise NotSupported("this liquid handler has no gripper")
        held = self.plr.get_picked_up_resource()
        if held is not None:
            raise PreconditionFailed(
                f"the gripper still holds {held.name}",
                hint="an earlier move failed; recover the instrument",
            )
        try:
            with light_rotations(moving):  # PLR would deep-copy the plate to place it
                await self.plr.move_plate(moving, site)
        except Exception as exc:
            await self._put_back(moving, origin)
            raise tool_error(exc, f"move_plate {moving.name} to {destination}") from exc
        return {"plate": moving.name, "location": destination}

    async def _put_back(self, plate: Any, origin: Any) -> None:
        """After a failed move, set a plate the gripper still holds back where it was."""
        if self.plr.get_picked_up_resource() is not plate or origin is None:
            return
        try:
            await self.plr.drop_resource(origin)
        except Exception:
            log.exception(
                "could not put %s back on %s after a failed move", plate.name, origin.name
            )

    # -- episodes ------------------------------------------------------------------------------
    def snapshot(self) -> LiquidHandlerSnapshot:
        """PLR's belief (volumes, tips, plate places, gripper), the backend's own state (if it
        has ``snapshot``/``restore``), the labels and the data store. Simulated handlers only."""
        if not self.simulated:
            raise NotSupported(f"{self.name}: a real liquid handler cannot be rewound")
        backend = self.plr.backend
        save = getattr(backend, "snapshot", None)
        return LiquidHandlerSnapshot(
            handler=HandlerSnapshot(self.plr),
            backend=save() if callable(save) else None,
            labels=dict(self.labels),
            data=self.data.snapshot(),
        )

    def restore(self, snapshot: LiquidHandlerSnapshot) -> None:
        """Return to ``snapshot``; the world behind a simulated backend is reset separately."""
        snapshot.handler.restore()
        if snapshot.backend is not None:
            self.plr.backend.restore(snapshot.backend)
        self.labels.clear()
        self.labels.update(snapshot.labels)
        self.data.restore(snapshot.data)

    # -- belief --------------------------------------------------------------------------------
    async def get_deck(self) -> DeckState:
        return self.state()  # type: ignore[return-value]  # DeckState plus labels, free_sites

    def state(self) -> dict[str, Any]:
        """What PLR believes: labware and well volumes (µL), tips left, channel tips, labels of
        stocks and free plate sites. JSON-able; never a simulator's truth."""
        channels = []
        for ch in range(self.limits.channels):
            tracker = self.plr.head.get(ch)
            tip = tracker.get_tip() if tracker is not None and tracker.has_tip else None
            channels.append(
                {
                    "channel": ch,
                    "tip": self.view.spot_name(tracker.get_tip_origin()) if tip else None,
                    "tip_volume": qty(round(tip.tracker.volume, 4) if tip else 0.0, UL),
                }
            )
        return {
            "labware": self.view.labware_state(),
            "tips_left": self.view.tips_left(),
            "channels": channels,
            "volume_unit": UL,
            "labels": dict(self.labels),
            "free_sites": self.view.free_sites(),
        }

    def deck_drawing(self) -> dict[str, Any]:
        """The deck as the live view draws it (:mod:`.drawing`): boxes, wells with believed
        volumes, tips present or used. JSON-able; never a simulator's truth."""
        drawing = self.__dict__.get("_drawing")
        if drawing is None:
            drawing = self.__dict__["_drawing"] = DeckDrawing(self.view.deck)
        return drawing.draw()

    # -- helpers -------------------------------------------------------------------------------
    def _configured(self, ref: str, setting: str) -> tuple[Container, str]:
        """The container a constructor setting names (``labels``, ``volumes``), or the
        :class:`ConfigError` naming the setting and the key."""
        try:
            return self.view.names.resolve(ref)
        except UnknownResource as exc:
            raise ConfigError(f"{exc.message}; {exc.hint}", key=(setting, ref)) from None

    def _channels(self, channels: Sequence[int]) -> list[int]:
        chans = list(channels)
        if not chans:
            raise InvalidArguments(
                "name at least one channel",
                field="/channels",
                hint=f"channels: {self.limits.channel.describe()}",
            )
        seen: set[int] = set()
        for i, ch in enumerate(chans):
            if ch in seen:
                raise InvalidArguments(
                    f"channel {ch} is listed twice",
                    field=f"/channels/{i}",
                    hint="list each channel once",
                )
            seen.add(ch)
        return sorted(chans)

    def _head(self, channel: int) -> Any:
        tracker = self.plr.head.get(channel)
        if tracker is None:
            raise PreconditionFailed(
                f"channel {channel} is not available", hint="the liquid handler is not set up"
            )
        return tracker

    def _mounted(self, channel: int) -> Tip:
        tracker = self.plr.head.get(channel)
        if tracker is None or not tracker.has_tip:
            raise PreconditionFailed(
                f"channel {channel} has no tip",
                field="/channel",
                hint="pick one up first (lh_pick_up_tips)",
            )
        return tracker.get_tip()

    def _tipped_hint(self) -> str:
        tipped = [str(c) for c, t in self.plr.head.items() if t.has_tip]
        return ", ".join(tipped) or "none"

    def _tip_type(self, tip: Tip, field: str = "/channel") -> TipType:
        nominal = nominal_ul(tip)
        tip_type = self._types.get(nominal)
        if tip_type is None:
            raise NotSupported(
                f"no tip type is configured for {nominal:g} µL tips",
                field=field,
                hint=f"tip types: {', '.join(t.name for t in self._types.values())}",
            )
        return tip_type

    def _precise_from(self, tip_type: TipType) -> float:
        """The smallest volume (µL) ``tip_type`` pipettes within its published rows."""
        return self._precise.get(tip_type.volume.high, tip_type.volume.low)

    def _suggest_tips(self, ul: float, unit: str) -> str:
        """The deck's tip rack with the smallest tips that take ``ul`` precisely (else at all),
        as hint text (``""`` if none does)."""
        fits = []
        for rack in self.view.tip_racks:
            tip_type = self._rack_type(rack)
            if tip_type is not None and tip_type.volume.contains(ul):
                imprecise = ul < self._precise_from(tip_type) - 1e-9
                fits.append((imprecise, tip_type.volume.high, rack.name, tip_type))
        if not fits:
            return ""
        _, _, rack_name, tip_type = min(fits)
        kind = f"{tip_type.name}: {tip_type.volume.describe(unit)}"
        return f"for {in_unit(ul, unit)} use {rack_name} ({kind})"

    def _rack_type(self, rack: TipRack) -> TipType | None:
        """The configured type of the tips a rack is made for (``None`` if none is, or the rack
        has no spots), looked up once per rack."""
        key = id(rack)
        if key not in self._rack_types:
            spots = rack.get_all_items()
            nominal = nominal_ul(spots[0].make_tip()) if spots else None
            self._rack_types[key] = self._types.get(nominal) if nominal is not None else None
        return self._rack_types[key]

    def _usable(self, rack: TipRack) -> bool:
        """Whether the rack's tips have a configured type (an empty rack is given the benefit)."""
        spot = next((s for s in rack.get_all_items() if s.tracker.has_tip), None)
        if spot is None:
            return True
        usable = nominal_ul(spot.get_tip()) in self._types
        if not usable:
            log.debug("tip rack %s: no tip type for its tips; not offered", rack.name)
        return usable

    def _dead_volume(self, container: Container) -> float:
        dead = self._dead.get(id(container))
        if dead is None:
            dead = self._dead[id(container)] = dead_volume_ul(container)
        return dead

    def _now(self) -> float:
        """Seconds on the backend's clock (a simulator's virtual time), else wall time."""
        clock = getattr(self.plr.backend, "now", None)
        return float(clock()) if callable(clock) else time.monotonic()

    @staticmethod
    def _step(kind: Literal["aspirate", "dispense"], chosen: Sequence[Item]) -> Step:
        return Step(
            kind,
            [it.channel for it in chosen],
            containers=[it.container for it in chosen],
            volumes=[it.ul for it in chosen],
        )

    def _moved(self, chosen: Sequence[Item]) -> LiquidMoved:
        moved = [
            {
                "channel": it.channel,
                "well": it.ref,
                "volume": qty(round(it.ul, 4), UL),
                "tip_volume": qty(
                    round(self.plr.head[it.channel].get_tip().tracker.get_used_volume(), 4), UL
                ),
                "well_volume": qty(round(it.container.tracker.get_used_volume(), 4), UL),
            }
            for it in chosen
        ]
        return {"items": moved}  # type: ignore[typeddict-item]


def _channel_count(channels: int | None, backend: LiquidHandlerBackend) -> int:
    """The channels the tools offer: ``channels`` if given (at most the backend's, where it
    knows its count before setup), else the backend's count."""
    try:
        have = backend.num_channels
    except (RuntimeError, AttributeError):  # STAR, Vantage, EVO: known only after setup
        have = None
    known = have if isinstance(have, int) and not isinstance(have, bool) and have >= 1 else None
    if channels is None:
        if known is None:
            raise ConfigError(
                f"{type(backend).__name__} does not know its channel count before setup; "
                "give channels = <count>",
                key="channels",
            )
        return known
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
        raise ConfigError(f"must be a positive integer, not {brief(channels)}", key="channels")
    if known is not None and channels > known:
        raise ConfigError(
            f"{channels} channels, but the backend ({type(backend).__name__}) has {known}",
            key="channels",
        )
    return channels


def _initial_volume(microliters: object, container: Container, ref: str) -> float:
    """A configured starting volume (µL): a finite number from 0 to the container's capacity."""
    key = ("volumes", ref)
    if isinstance(microliters, bool) or not isinstance(microliters, int | float):
        raise ConfigError(f"a volume is a number of µL, not {type(microliters).__name__}", key=key)
    value = float(microliters)
    capacity = float(container.max_volume)
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{microliters:g} µL is not a volume (0 µL or more)", key=key)
    if value > capacity:
        what = "well" if isinstance(container.parent, ItemizedResource) else "container"
        raise ConfigError(
            f"{microliters:g} µL exceeds the {what}'s capacity of {capacity:g} µL", key=key
        )
    return value
