"""A PyLabRobot liquid-handler backend with physics: the virtual liquid handler's hardware.

It plugs in below PLR's ``LiquidHandler`` (so the same adapter drives it as drives a real
robot) and acts on the :class:`~labtools.simulators.world.World`: liquid and its composition
move from the source container into the tip and on into the destination, as the world's mixtures.

- **Delivery error** per channel and tip type, held to published rows
  (:mod:`labtools.simulators.pipetting`); noise from the world's ``"lh"`` stream only.
- **The piston decides what a tip holds.** After every stroke the tip holds, under the piston,
  the channel's calibrated volume for the piston's position plus that stroke's random error
  (:meth:`~labtools.simulators.pipetting.ChannelModel.level`); an aspiration draws what brings
  it there, a dispense pushes out what is above it. Errors of successive strokes therefore do
  not add up: a tip mixed or reused with liquid in it holds what the driver believes, within
  one stroke's error (plus its film).
- **Film and carry-over**: liquid wets the tip's wall as it is drawn up; the wall keeps a film
  of ``f`` × the most the tip held since it was fitted (``f`` ≈ 0.1–1 %, drawn per seed), so a
  fresh tip, emptied, delivers the calibrated volume and keeps ``f`` × what it drew. Reusing
  the tip carries the film into the next dispense. Tips dropped in the trash take their
  contents to the world's ``"trash"`` container; tips put back in a rack keep theirs.
- **Air**: asking for more than the container really holds draws air — less liquid moves, and
  the air leaves the tip first. The adapter checks believed volumes; only the world knows the
  truth.
- **Overflow**: a container never holds more than its capacity: what a dispense brings above it
  runs over into the world's ``"spill"`` container and is logged as a warning. (The adapter
  refuses a dispense its belief says would overfill; overflow happens only when the truth is
  above the belief.)
- **All or nothing per call**: every operation of a call is checked (a tip mounted, a modelled
  channel and tip type, no in-operation mixing, a positive flow rate) before any channel moves,
  so a call the backend refuses leaves the world as it was, as PLR's front end then believes.
- **Time** on the world's virtual clock (:class:`Timing`, read with :meth:`now`); channels of
  one call work in parallel, so a multi-channel step takes as long as its slowest channel.
- A gripper (``_num_arms = 1``) for plate moves; no 96-channel head. Liquid height, blow-out air
  and liquid classes are not modelled; PLR's in-operation ``mix`` is refused.
"""

from __future__ import annotations

import logging
import math
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
from labtools.simulators.pipetting import (
    TIP_CLASSES,
    ChannelModel,
    draw_channel,
    draw_film_fraction,
)
from labtools.simulators.world import Mixture, World

__all__ = ["SPILL", "BackendSnapshot", "PhysicsLiquidHandlerBackend", "Timing", "TipLoad"]

log = logging.getLogger(__name__)

#: a dispense that leaves less than this (µL) believed in the tip empties it
_EMPTY_UL = 1e-6
#: the world's container for what runs over a container's brim
SPILL = "spill"


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
    """What is really in a tip: its liquid (film included), what the front end believes it
    holds (µL: the piston's position from empty), the film on its wall (µL, part of
    ``liquid``, stays when it empties) and the air it drew from emptier wells than believed."""

    tip: Tip
    liquid: Mixture = field(default_factory=Mixture)
    believed_ul: float = 0.0
    film_ul: float = 0.0
    air_ul: float = 0.0


@dataclass(frozen=True)
class BackendSnapshot:
    """The backend's tip loads by channel, and those put back in racks by ``id(tip)``."""

    loads: dict[int, TipLoad]
    racked: dict[int, TipLoad]


def _copy_loads(loads: dict[Any, TipLoad]) -> dict[Any, TipLoad]:
    return {key: replace(load, liquid=load.liquid.copy()) for key, load in loads.items()}


class PhysicsLiquidHandlerBackend(LiquidHandlerBackend):
    """Independent channels with per-tip-type errors acting on a world.

    The channels take the tips of :data:`labtools.simulators.pipetting.TIP_CLASSES` (10, 50,
    300 and 1000 µL). Each channel's parameters with each tip type are hidden truth
    ``lh/channel<i>/<nominal>ul`` and the film fraction ``lh/film_fraction``, drawn once per
    seed (again when the world is reset).
    """

    _num_arms = 1
    simulated = True

    def __init__(
        self,
        world: World,
        *,
        num_channels: int = 8,
        timing: Timing | None = None,
    ) -> None:
        super().__init__()
        if isinstance(num_channels, bool) or not isinstance(num_channels, int) or num_channels < 1:
            raise ConfigError(
                f"must be a positive integer, not {brief(num_channels)}", key="num_channels"
            )
        self.world = world
        self._num_channels = num_channels
        self.timing = timing or Timing()
        #: by channel: the channel's model with each tip type (by the tips' nominal volume)
        self.channels: list[dict[float, ChannelModel]] = []
        self.film_fraction = 0.0
        self._draw_truth()
        world.on_reset(self._draw_truth)
        self._rng = world.stream("lh")
        self._loads: dict[int, TipLoad] = {}
        self._racked: dict[int, TipLoad] = {}
        self._refs: dict[int, tuple[Container, str]] = {}

    def _draw_truth(self) -> None:
        """The channels' hidden parameters and the film fraction, for the world's seed."""
        hidden, profile = self.world.hidden, self.world.profile
        self.channels = [
            {
                tip: ChannelModel.from_dict(
                    hidden(
                        f"lh/channel{i}/{tip:g}ul",
                        partial(draw_channel, tip_ul=tip, profile=profile, channel=i),
                    )
                )
                for tip in TIP_CLASSES
            }
            for i in range(self._num_channels)
        ]
        self.film_fraction = self.world.hidden(
            "lh/film_fraction", partial(draw_film_fraction, profile=profile)
        )

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
        """A channel that exists, and a tip type the channels are modelled for."""
        return 0 <= channel_idx < self._num_channels and _nominal(tip) in TIP_CLASSES

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
        wet = self.film_fraction / (1.0 - self.film_fraction)  # film per µL under the piston
        for op, ch, load, model, ref, duration in self._checked(ops, use_channels):
            source = self.world.contents(ref)
            piston = load.believed_ul + op.volume
            bulk = load.liquid.volume_ul - load.film_ul
            level = model.level(piston, op.volume, self._rng)
            need = max(level - bulk - load.air_ul, 0.0)
            film = max(wet * (bulk + need) - load.film_ul, 0.0)  # wall newly wetted
            want = need + film
            drawn = source.take(min(want, source.volume_ul))
            short = want - drawn.volume_ul
            if short > 1e-9:
                log.info(
                    "channel %d drew %.3g µL of air from %s (%.4g µL asked, %.4g there)",
                    ch,
                    short,
                    ref,
                    op.volume,
                    drawn.volume_ul,
                )
                load.air_ul += short
            load.liquid.add(drawn)
            load.film_ul += min(film, drawn.volume_ul)
            load.believed_ul = piston
            seconds = max(seconds, duration)
        self.world.clock.advance(seconds)

    async def dispense(self, ops: list[SingleChannelDispense], use_channels: list[int]) -> None:
        seconds = 0.0
        for op, _, load, model, ref, duration in self._checked(ops, use_channels):
            bulk = load.liquid.volume_ul - load.film_ul
            piston = load.believed_ul - op.volume
            if piston <= _EMPTY_UL:  # emptying the tip: all but the film comes out
                piston, out, load.air_ul = 0.0, bulk, 0.0
            else:  # what stands above the piston's new level comes out, air first
                level = model.level(piston, op.volume, self._rng)
                expelled = max(bulk + load.air_ul - level, 0.0)
                air = min(load.air_ul, expelled)
                load.air_ul -= air
                out = min(expelled - air, bulk)
            load.believed_ul = piston
            self._pour(op.resource, ref, load.liquid.take(out))
            seconds = max(seconds, duration)
        self.world.clock.advance(seconds)

    def _checked(
        self,
        ops: list[SingleChannelAspiration] | list[SingleChannelDispense],
        use_channels: list[int],
    ) -> list[tuple[Any, int, TipLoad, ChannelModel, str, float]]:
        """Every op of one call with its channel, tip load, channel model, container key and
        duration (s), all checked before any channel moves: a call the hardware would refuse
        (no tip, an unmodelled channel, in-operation mixing, a bad flow rate) moves nothing."""
        if len(ops) != len(use_channels):
            raise ValueError(f"{len(ops)} operations for {len(use_channels)} channels")
        checked = []
        for op, ch in zip(ops, use_channels, strict=True):
            _no_mix(op)
            load = self._load(ch)
            model = self._model(ch, load)
            duration = self._duration(op.volume, op.flow_rate)
            checked.append((op, ch, load, model, self._ref(op.resource), duration))
        return checked

    def _pour(self, container: Any, ref: str, portion: Mixture) -> None:
        """Pour ``portion`` into ``container`` (world key ``ref``); what rises above its
        capacity runs over."""
        target = self.world.contents(ref)
        target.add(portion)
        capacity = float(getattr(container, "max_volume", None) or math.inf)
        excess = target.volume_ul - capacity
        if excess > 1e-9:
            self.world.contents(SPILL).add(target.take(excess))
            log.warning(
                "%s ran over: %.4g µL above its %.4g µL capacity spilled", ref, excess, capacity
            )

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

    def _model(self, channel: int, load: TipLoad) -> ChannelModel:
        if isinstance(channel, bool) or not isinstance(channel, int):
            raise TypeError(f"a channel is an int, not {brief(channel)}")
        if not 0 <= channel < self._num_channels:
            raise ValueError(f"channel {channel} does not exist ({self._num_channels} channels)")
        model = self.channels[channel].get(_nominal(load.tip))
        if model is None:
            tip_ul = _nominal(load.tip)
            raise ValueError(f"channel {channel} is not modelled with {tip_ul:g} µL tips")
        return model

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


def _nominal(tip: Tip) -> float:
    """A tip's nominal volume (µL): PLR's ``nominal_volume`` where it has one (Hamilton tips),
    else its maximal volume."""
    return float(getattr(tip, "nominal_volume", None) or tip.maximal_volume)


def _no_mix(op: SingleChannelAspiration | SingleChannelDispense) -> None:
    """PLR's in-operation mixing is not simulated: refuse it rather than ignore it."""
    if op.mix is not None:
        raise NotImplementedError(
            "mixing inside an aspirate/dispense is not simulated; "
            "mix with separate aspirate/dispense cycles"
        )
