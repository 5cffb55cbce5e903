"""A virtual liquid handler for tests: a world with stocks, the virtual deck, the PLR adapter on
the physics backend, and a lab around it; plus a snapshot of everything a call could change."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pylabrobot.liquid_handling import LiquidHandlerBackend

from labtools import Lab
from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.result import ToolResult
from labtools.simulators.deck import virtual_deck
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.world import World
from labtools.units import QuantityJSON, qty

UL = "microliter"
TARTRAZINE = {
    "well": "reservoir:A1",
    "species": "tartrazine",
    "concentration_uM": 500,
    "volume_ul": 15000,
    "label": "tartrazine 500 µM",
}
BUFFER = {
    "well": "reservoir:A2",
    "species": "buffer_ph7",
    "concentration_uM": 10000,
    "volume_ul": 15000,
    "label": "phosphate buffer pH 7",
}


def ul(value: float, unit: str = UL) -> QuantityJSON:
    return qty(value, unit)


@dataclass
class Rig:
    world: World
    handler: PLRLiquidHandler
    backend: LiquidHandlerBackend
    lab: Lab

    def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolResult:
        return self.lab.call(tool, dict(arguments))

    def ok(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert result.ok, result.error
        return result.data or {}

    def well(self, ref: str) -> Any:
        """The PLR container a tool name refers to."""
        return self.handler.view.container(ref, "/well")[0]

    def snapshot(self) -> str:
        """Everything a rejected call must leave alone, as one comparable string."""
        world = self.world
        state: dict[str, Any] = {
            "lab": self.lab.state(),
            "world": {k: world.contents(k).state() for k in sorted(world.containers())},
            "clock": world.clock.now(),
            "noise": world.stream("lh").bit_generator.state,
            "plr": self.handler.plr.serialize_all_state(),
            "pending": _pending(self.handler),
            "arm": repr(self.handler.plr.get_picked_up_resource()),
        }
        if isinstance(self.backend, PhysicsLiquidHandlerBackend):
            state["tips"] = {ch: _tip(self.backend, ch) for ch in range(self.backend.num_channels)}
        return json.dumps(state, sort_keys=True, default=str)


def rig(
    seed: int = 0,
    stocks: Sequence[Mapping[str, Any]] = (TARTRAZINE, BUFFER),
    *,
    backend: Callable[[World], LiquidHandlerBackend] = PhysicsLiquidHandlerBackend,
    **kwargs: Any,
) -> Rig:
    """A set-up lab with one liquid handler ``lh`` on ``backend(world)``."""
    world = World(seed, stocks=stocks)
    plr_backend = backend(world)
    deck = virtual_deck(world, None).deck  # type: ignore[arg-type]  # no reader reads here
    handler = PLRLiquidHandler("lh", deck, plr_backend, labels=world.labels, **kwargs)
    setup = Rig(world, handler, plr_backend, Lab([handler], clock=world.clock))
    setup.ok("lh_get_deck", {})  # the lab sets the instrument up on its first call
    return setup


def _tip(backend: PhysicsLiquidHandlerBackend, channel: int) -> Any:
    contents = backend.tip_contents(channel)
    return contents.state() if contents is not None else None


def _pending(handler: PLRLiquidHandler) -> list[Any]:
    """Pending (uncommitted) tracker values, which serialize_all_state reports only in part."""
    out: list[Any] = []
    for resource in handler.plr.deck.get_all_resources():
        tracker = getattr(resource, "tracker", None)
        if tracker is None:
            continue
        if hasattr(tracker, "pending_volume"):
            out.append((resource.name, tracker.volume, tracker.pending_volume))
        else:
            out.append((resource.name, repr(tracker._tip), repr(tracker._pending_tip)))
    for channel, tracker in handler.plr.head.items():
        tip = tracker._tip
        out.append(
            (
                channel,
                repr(tip),
                repr(tracker._pending_tip),
                (tip.tracker.volume, tip.tracker.pending_volume) if tip else None,
            )
        )
    return out
