"""A PyLabRobot liquid-handler backend with physics: the virtual liquid handler's hardware.

It plugs in below PLR's ``LiquidHandler`` (so the same adapter drives it as drives a real
robot) and acts on the :class:`~labtools.simulators.world.World`: liquid and its composition
move from the source container into the tip and on into the destination, as the world's mixtures.

- **Delivery error** per channel, ISO 8655-shaped (:mod:`labtools.simulators.pipetting`); noise from
  the world's ``"lh"`` stream only. An aspiration draws ``V_del / (1 − f)`` so that a fresh tip,
  emptied, delivers ``V_del`` and keeps a film of ``f`` × what it drew.
- **Carry-over**: the film stays in the tip; reusing the tip carries it into the next dispense.
  Tips dropped in the trash take their contents to the world's ``"trash"`` container; tips put
  back in a rack keep theirs for the next pick-up.
- **Air**: asking for more than the container really holds draws air — less liquid moves. The
  adapter checks believed volumes; only the world knows the truth.
- **Time** on the world's virtual clock (:class:`Timing`, read with :meth:`now`); channels of
  one call work in parallel, so a multi-channel step takes as long as its slowest channel.
- A gripper (``_num_arms = 1``) for plate moves; no 96-channel head. Liquid height, blow-out air
  and liquid classes are not modelled; PLR's in-operation ``mix`` is refused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from pylabrobot.liquid_handling import LiquidHandlerBackend
from pylabrobot.liquid_handling.standard import (
    Drop,
    DropTipRack,
    MultiHeadAspirationContainer,
    MultiHeadAspirationPlate,
    MultiHeadDispenseContainer,
    MultiHeadDispensePlate,
    Pickup,
    PickupTipRack,
    ResourceDrop,
    ResourceMove,
    ResourcePickup,
    SingleChannelAspiration,
    SingleChannelDispense,
)
from pylabrobot.resources import Container, Tip, Trash
from pylabrobot.resources.errors import NoTipError

from labtools.config import ConfigError
from labtools.drivers.pylabrobot.naming import container_key
from labtools.errors import brief
from labtools.simulators.pipetting import ISO_8655_2, ChannelModel, draw_channel, draw_film_fraction
from labtools.simulators.world import Mixture, World

__all__ = ["BackendSnapshot", "PhysicsLiquidHandlerBackend", "Timing", "TipLoad"]

log = logging.getLogger(__name__)

#: a dispense that leaves less than this (µL) believed in the tip empties it
_EMPTY_UL = 1e-6


@dataclass(frozen=True)
class Timing:
    """Durations on the virtual clock (s) and the default flow rate (µL/s) [A: typical
    air-displacement liquid handlers; calibrate against a real instrument]."""

    pick_up_s: float = 8.0
    drop_s: float = 6.0
    travel_s: float = 2.0
    settle_s: float = 0.5
    flow_rate_ul_s: float = 100.0
    grip_s: float = 6.0
    carry_s: float = 4.0
    release_s: float = 6.0


@dataclass
class TipLoad:
    """What is really in a tip: its liquid, what the front end believes it holds (µL) and the
    liquid it drew last (µL), whose film stays behind when it empties."""

    tip: Tip
    liquid: Mixture = field(default_factory=Mixture)
    believed_ul: float = 0.0
    last_drawn_ul: float = 0.0


@dataclass(frozen=True)
class BackendSnapshot:
    """The backend's tip loads by channel, and those put back in racks by ``id(tip)``."""

    loads: dict[int, TipLoad]
    racked: dict[int, TipLoad]


def _copy_loads(loads: dict[Any, TipLoad]) -> dict[Any, TipLoad]:
    return {key: replace(load, liquid=load.liquid.copy()) for key, load in loads.items()}


class PhysicsLiquidHandlerBackend(LiquidHandlerBackend):
    """Independent channels with ISO 8655-shaped errors acting on a world.

    ``channel_class``: the ISO 8655-2 nominal volume (µL) whose limits the channels are drawn to
    meet (a key of :data:`labtools.simulators.pipetting.ISO_8655_2`). The default, 200, holds the
    300 µL-tip channel of the virtual deck to the 200 µL row (±1.6 µL, SD 0.6 µL), the nearest
    tabulated nominal at or below the tip. Channel parameters are hidden truth ``lh/channel<i>``
    and the film fraction ``lh/film_fraction``, drawn once per seed (again when the world is reset).
    """

    _num_arms = 1
    simulated = True

    def __init__(
        self,
        world: World,
        *,
        num_channels: int = 8,
        channel_class: float = 200.0,
        timing: Timing | None = None,
    ) -> None:
        super().__init__()
        if isinstance(num_channels, bool) or not isinstance(num_channels, int) or num_channels < 1:
            raise ConfigError(
                f"must be a positive integer, not {brief(num_channels)}", key="num_channels"
            )
        if isinstance(channel_class, bool) or float(channel_class) not in ISO_8655_2:
            raise ConfigError(
                f"must be one of {sorted(ISO_8655_2)} µL, not {brief(channel_class)}",
                key="channel_class",
            )
        self.world = world
        self._num_channels = num_channels
        self.channel_class = float(channel_class)
        self.timing = timing or Timing()
        self.channels: list[ChannelModel] = []
        self.film_fraction = 0.0
        self._draw_truth()
        world.on_reset(self._draw_truth)
        self._rng = world.stream("lh")
        self._loads: dict[int, TipLoad] = {}
        self._racked: dict[int, TipLoad] = {}
        self._refs: dict[int, tuple[Container, str]] = {}

    def _draw_truth(self) -> None:
        """The channels' hidden parameters and the film fraction, for the world's seed."""
        draw = partial(draw_channel, class_ul=self.channel_class)
        self.channels = [
            ChannelModel.from_dict(self.world.hidden(f"lh/channel{i}", draw))
            for i in range(self._num_channels)
        ]
        self.film_fraction = self.world.hidden("lh/film_fraction", draw_film_fraction)

    @property
    def num_channels(self) -> int:
        return self._num_channels

    def now(self) -> float:
        """Seconds on the world's virtual clock (the driver times batches with it)."""
        return self.world.clock.now()

    async def setup(self) -> None:
        await super().setup()

    async def stop(self) -> None:
        return None

    def can_pick_up_tip(self, channel_idx: int, tip: Tip) -> bool:
        return 0 <= channel_idx < self._num_channels

    async def request_tip_presence(self) -> list[bool | None]:
        return [ch in self._loads for ch in range(self._num_channels)]

    # -- episodes ------------------------------------------------------------------------------
    def snapshot(self) -> BackendSnapshot:
        """What the tips really hold (mounted, and put back in racks), for :meth:`restore`."""
        return BackendSnapshot(_copy_loads(self._loads), _copy_loads(self._racked))

    def restore(self, snapshot: BackendSnapshot) -> None:
        """Return the tips' true contents to ``snapshot`` (the world is reset separately)."""
        self._loads = _copy_loads(snapshot.loads)
        self._racked = _copy_loads(snapshot.racked)

    def tip_contents(self, channel: int) -> Mixture | None:
        """The liquid really in the tip on ``channel`` (``None`` without a tip). Hidden truth."""
        load = self._loads.get(channel)
        return load.liquid if load is not None else None

    # -- tips ----------------------------------------------------------------------------------
    async def pick_up_tips(self, ops: list[Pickup], use_channels: list[int]) -> None:
        for op, ch in zip(ops, use_channels, strict=True):
            racked: TipLoad | None = self._racked.pop(id(op.tip), None)  # a tip put back
            self._loads[ch] = racked or TipLoad(op.tip)
        self.world.clock.advance(self.timing.pick_up_s)

    async def drop_tips(self, ops: list[Drop], use_channels: list[int]) -> None:
        for op, ch in zip(ops, use_channels, strict=True):
            load = self._loads.pop(ch, None)
            if load is None:
                continue
            if isinstance(op.resource, Trash):
                if load.liquid.volume_ul > 0:
                    self.world.contents(op.resource.name).add(load.liquid)
            else:
                self._racked[id(load.tip)] = load
        self.world.clock.advance(self.timing.drop_s)

    # -- liquid --------------------------------------------------------------------------------
    async def aspirate(self, ops: list[SingleChannelAspiration], use_channels: list[int]) -> None:
        seconds = 0.0
        keep = 1.0 - self.film_fraction
        for op, ch in zip(ops, use_channels, strict=True):
            _no_mix(op)
            load = self._load(ch)
            ref = self._ref(op.resource)
            source = self.world.contents(ref)
            want = self.channels[ch].deliver(op.volume, self._rng) / keep
            drawn = source.take(min(want, source.volume_ul))
            if want - drawn.volume_ul > 1e-9:
                log.info(
                    "channel %d drew %.3g µL of air from %s (%.4g µL asked, %.4g there)",
                    ch,
                    want - drawn.volume_ul,
                    ref,
                    op.volume,
                    drawn.volume_ul,
                )
            load.liquid.add(drawn)
            load.believed_ul += op.volume
            load.last_drawn_ul = drawn.volume_ul
            seconds = max(seconds, self._duration(op.volume, op.flow_rate))
        self.world.clock.advance(seconds)

    async def dispense(self, ops: list[SingleChannelDispense], use_channels: list[int]) -> None:
        seconds = 0.0
        for op, ch in zip(ops, use_channels, strict=True):
            _no_mix(op)
            load = self._load(ch)
            film = min(self.film_fraction * load.last_drawn_ul, load.liquid.volume_ul)
            available = load.liquid.volume_ul - film
            load.believed_ul -= op.volume
            if load.believed_ul <= _EMPTY_UL:  # emptying the tip: all but the film comes out
                load.believed_ul = 0.0
                out = available
            else:
                out = min(self.channels[ch].deliver(op.volume, self._rng), available)
            self.world.contents(self._ref(op.resource)).add(load.liquid.take(out))
            seconds = max(seconds, self._duration(op.volume, op.flow_rate))
        self.world.clock.advance(seconds)

    # -- gripper -------------------------------------------------------------------------------
    async def pick_up_resource(self, pickup: ResourcePickup) -> None:
        self.world.clock.advance(self.timing.grip_s)

    async def move_picked_up_resource(self, move: ResourceMove) -> None:
        self.world.clock.advance(self.timing.carry_s)

    async def drop_resource(self, drop: ResourceDrop) -> None:
        self.world.clock.advance(self.timing.carry_s + self.timing.release_s)

    # -- no 96-channel head --------------------------------------------------------------------
    async def pick_up_tips96(self, pickup: PickupTipRack) -> None:
        raise NotImplementedError("the simulated liquid handler has no 96-channel head")

    async def drop_tips96(self, drop: DropTipRack) -> None:
        raise NotImplementedError("the simulated liquid handler has no 96-channel head")

    async def aspirate96(
        self, aspiration: MultiHeadAspirationPlate | MultiHeadAspirationContainer
    ) -> None:
        raise NotImplementedError("the simulated liquid handler has no 96-channel head")

    async def dispense96(
        self, dispense: MultiHeadDispensePlate | MultiHeadDispenseContainer
    ) -> None:
        raise NotImplementedError("the simulated liquid handler has no 96-channel head")

    # -- helpers -------------------------------------------------------------------------------
    def _load(self, channel: int) -> TipLoad:
        load = self._loads.get(channel)
        if load is None:
            raise NoTipError(f"Channel {channel} does not have a tip.")
        return load

    def _ref(self, container: Any) -> str:
        """The world's name for a PLR container: ``"<plate>:<well>"`` or the container's name."""
        found = self._refs.get(id(container))
        if found is None:
            found = self._refs[id(container)] = (container, container_key(container))
        return found[1]

    def _duration(self, volume_ul: float, flow_rate: float | None) -> float:
        """Travel, the stroke at ``flow_rate`` µL/s (the default when ``None``) and settling."""
        rate = self.timing.flow_rate_ul_s if flow_rate is None else flow_rate
        if not rate > 0:
            raise ValueError(f"flow rate must be positive, not {rate!r} µL/s")
        return self.timing.travel_s + volume_ul / rate + self.timing.settle_s


def _no_mix(op: SingleChannelAspiration | SingleChannelDispense) -> None:
    """PLR's in-operation mixing is not simulated: refuse it rather than ignore it."""
    if op.mix is not None:
        raise NotImplementedError(
            "mixing inside an aspirate/dispense is not simulated; "
            "mix with separate aspirate/dispense cycles"
        )
