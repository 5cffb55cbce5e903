"""Random sequences of liquid-handler batches, with backend faults injected mid-call.

After every call, whatever its outcome, truth and belief agree: each channel's tip is mounted in
the world exactly when PLR believes it, the piston stands where PLR's tip tracker says, PLR's
trackers hold nothing pending and no impossible volume, and — on ideal channels (no pipetting
error, no film), where nothing excuses a difference — every container and tip really holds what
PLR believes. A refused call changes nothing, in the belief or in the world; a call the backend
fails before anything moved changes nothing either; one that fails after some channels moved
says which, and the belief records them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_rig import Rig, rig, ul

from labtools.drivers.pylabrobot.naming import container_key
from labtools.drivers.pylabrobot.plr import ChannelizedError, Trash
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.pipetting import TIP_CLASSES, ChannelModel
from labtools.simulators.world import World

EPS = 1e-6
#: mostly wells with liquid (the troughs) and plate wells to fill; one that does not exist
SOURCES = ["reservoir:A1", "reservoir:A1", "reservoir:A2", "plate_1:A1", "plate_384:A1"]
WELLS = [*SOURCES, "plate_1:A2", "plate_1:B1", "plate_1:B2", "cuvette", "plate_1:Q9"]
RACKS = ["tips_300ul", "tips_300ul", "tips_50ul", "tips_1000ul", "tips_10ul"]
VOLUMES = st.sampled_from([0.5, 5.0, 10.0, 20.0, 20.0, 40.0, 95.0, 150.0, 400.0]).map(ul)
#: channels as JSON may carry them: integers, and integral numbers such as 2.0
CHANNEL = st.integers(min_value=0, max_value=3) | st.integers(0, 3).map(float)
CHANNELS = st.lists(CHANNEL, min_size=1, max_size=3)


@dataclass
class Fault:
    """Fail the backend's ``at``-th operation from now (pick-up, drop, aspirate or dispense):
    ``"before"`` anything moves, or ``"channel"``: every channel but the last of the call does
    its part, then the last one fails (a ``ChannelizedError``, as a real backend reports it)."""

    at: int
    mode: str


class FaultyBackend(PhysicsLiquidHandlerBackend):
    """The physics backend with one :class:`Fault` at a time; ``done``: the channels a
    ``"channel"`` fault let finish."""

    fault: Fault | None = None
    done: list[int]

    async def _faulty(self, name: str, ops: list[Any], use_channels: list[int]) -> None:
        run = getattr(super(), name)
        fault = self.fault
        if fault is None or fault.at > 0:
            if fault is not None:
                fault.at -= 1
            await run(ops, use_channels)
            return
        self.fault = None
        if fault.mode == "before":
            raise RuntimeError(f"injected: {name} failed before anything moved")
        if len(use_channels) > 1:
            await run(ops[:-1], use_channels[:-1])
            self.done = list(use_channels[:-1])
        raise ChannelizedError({use_channels[-1]: RuntimeError(f"injected: {name} failed")})

    async def pick_up_tips(self, ops: Any, use_channels: list[int]) -> None:
        await self._faulty("pick_up_tips", ops, use_channels)

    async def drop_tips(self, ops: Any, use_channels: list[int]) -> None:
        await self._faulty("drop_tips", ops, use_channels)

    async def aspirate(self, ops: Any, use_channels: list[int]) -> None:
        await self._faulty("aspirate", ops, use_channels)

    async def dispense(self, ops: Any, use_channels: list[int]) -> None:
        await self._faulty("dispense", ops, use_channels)


def _rig(ideal: bool) -> tuple[Rig, FaultyBackend]:
    setup = rig(seed=13, backend=FaultyBackend)
    backend = setup.backend
    assert isinstance(backend, FaultyBackend)
    if ideal:  # channels that deliver exactly what they are asked, and keep no film
        backend.channels = [
            {tip: ChannelModel(tip, 0.0, 0.0, 0.0, 0.0) for tip in TIP_CLASSES}
            for _ in backend.channels
        ]
        backend.film_fraction = 0.0
    return setup, backend


# -- calls: every liquid-handler tool that moves something, in batches ----------------------------
DESTINATIONS = ["plate_1:A2", "plate_1:B1", "plate_1:B2", "plate_1:C1", "plate_384:B1", "cuvette"]
TOOLS = ["lh_pick_up_tips", "lh_drop_tips", "lh_aspirate", "lh_dispense", "lh_mix", "lh_transfer"]
#: a batch item as an agent may get it wrong: any channel, well and volume
items = st.lists(
    st.fixed_dictionaries({"channel": CHANNEL, "well": st.sampled_from(WELLS), "volume": VOLUMES}),
    min_size=1,
    max_size=3,
)
faults = st.none() | st.builds(
    Fault, st.integers(min_value=0, max_value=4), st.sampled_from(["before", "channel"])
)


def _as_json(draw: st.DrawFn, channel: int) -> int | float:
    return draw(st.sampled_from([channel, float(channel)]))


def _some(draw: st.DrawFn, channels: list[int]) -> list[int]:
    return draw(st.lists(st.sampled_from(channels), min_size=1, max_size=3, unique=True))


@st.composite
def call_on(draw: st.DrawFn, setup: Rig) -> tuple[str, dict[str, Any]]:
    """A call of any liquid-handler tool that moves something, mostly one the lab's state
    allows (free or tipped channels, volumes the tips take), now and then any batch at all."""
    tool = draw(st.sampled_from(TOOLS))
    handler = setup.handler
    head = handler.plr.head
    filled = [w for w in (*SOURCES, *DESTINATIONS) if setup.well(w).tracker.volume > 30]
    tipped = [ch for ch in range(4) if head[ch].has_tip]
    free = [ch for ch in range(4) if not head[ch].has_tip]
    sloppy = draw(st.integers(0, 9)) == 0
    if tool == "lh_pick_up_tips":
        chans = _some(draw, free) if free and not sloppy else draw(CHANNELS)
        return tool, {"tip_rack": draw(st.sampled_from(RACKS)), "channels": chans}
    if tool == "lh_drop_tips":
        return tool, {"channels": _some(draw, tipped) if tipped and not sloppy else draw(CHANNELS)}
    if tool == "lh_transfer":
        mounted = draw(st.booleans()) and bool(tipped)
        transfers = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "source": st.sampled_from(filled),
                        "destination": st.sampled_from(DESTINATIONS),
                        "volume": st.sampled_from([5.0, 10.0, 20.0, 40.0, 95.0]).map(ul),
                    }
                ),
                min_size=1,
                max_size=10,
            )
        )
        return tool, {
            "transfers": transfers,
            "tip_rack": draw(st.sampled_from(["tips_300ul", "tips_50ul"])),
            "tips": "mounted" if mounted else draw(st.sampled_from(["new", "reuse", "per_source"])),
            "channels": [_as_json(draw, ch) for ch in _some(draw, tipped)] if mounted else [],
            "mix_cycles": draw(st.sampled_from([0, 0, 1, 2.0])),
            "mix_volume": ul(draw(st.sampled_from([5.0, 10.0, 20.0]))),
        }
    if sloppy or not tipped:
        arguments: dict[str, Any] = {"items": draw(items)}
    else:
        chosen = []
        for ch in _some(draw, tipped):
            tip = head[ch].get_tip()
            capacity, holds = handler._tip_type(tip).volume.high, tip.tracker.volume
            room = holds if tool == "lh_dispense" else capacity - holds
            volume = room * draw(st.sampled_from([0.1, 0.3, 0.5, 1.0]))
            wells = DESTINATIONS if tool == "lh_dispense" else filled
            chosen.append(
                {
                    "channel": _as_json(draw, ch),
                    "well": draw(st.sampled_from(wells)),
                    "volume": ul(max(round(volume, 2), 1.0)),
                }
            )
        arguments = {"items": chosen}
    if tool == "lh_mix":
        arguments["cycles"] = draw(st.sampled_from([1, 2, 3, 2.0]))
    return tool, arguments


# -- what must hold ---------------------------------------------------------------------------
def _agree(setup: Rig, backend: FaultyBackend, *, ideal: bool) -> None:
    """Truth and belief agree (see the module docstring)."""
    plr = setup.handler.plr
    world: World = setup.world
    for channel, head in plr.head.items():
        load = backend._loads.get(channel)
        assert (load is not None) == head.has_tip, f"channel {channel}: tip in world vs belief"
        if load is None:
            continue
        tip = head.get_tip()
        assert load.tip is tip, f"channel {channel}: another tip in the world"
        believed = tip.tracker.volume
        assert tip.tracker.pending_volume == believed, f"channel {channel}: pending"
        assert -EPS <= believed <= tip.maximal_volume + EPS, (channel, believed)
        assert math.isclose(load.believed_ul, believed, abs_tol=EPS), (channel, load, believed)
        if ideal:
            assert math.isclose(load.liquid.volume_ul, believed, abs_tol=EPS), (channel, load)
    for resource in plr.deck.get_all_resources():
        tracker = getattr(resource, "tracker", None)
        if tracker is None or not hasattr(tracker, "pending_volume") or isinstance(resource, Trash):
            continue
        assert tracker.pending_volume == tracker.volume, f"{resource.name}: pending"
        assert -EPS <= tracker.volume <= tracker.max_volume + EPS, resource.name
        if ideal:
            truth = world.peek(container_key(resource)).volume_ul
            assert math.isclose(truth, tracker.volume, abs_tol=EPS), (resource.name, truth)


def _run(data: st.DataObject, *, ideal: bool, calls: int = 8) -> None:
    setup, backend = _rig(ideal)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1]})
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_50ul", "channels": [2]})
    _agree(setup, backend, ideal=ideal)
    for _ in range(data.draw(st.integers(1, calls), label="calls")):
        tool, arguments = data.draw(call_on(setup))
        fault = data.draw(faults, label="fault")
        before = setup.snapshot()
        backend.fault, backend.done = fault, []
        result = setup.call(tool, arguments)
        fired = fault is not None and backend.fault is None
        backend.fault = None
        _agree(setup, backend, ideal=ideal)
        if result.ok:
            assert not fired, (tool, arguments, "a failed backend call must not succeed")
            continue
        error = result.error or {}
        if not fired:  # refused by the checks: nothing changed anywhere
            assert error["code"] != "instrument_error", (tool, arguments, error)
            assert setup.snapshot() == before, (tool, arguments, error)
        elif backend.done:  # some channels moved: the result says which
            moved = ", ".join(str(ch) for ch in backend.done)
            assert f"channel(s) {moved} completed it" in error["message"], error
        elif "earlier steps ran" not in error["message"]:  # the first step failed, whole
            assert setup.snapshot() == before, (tool, arguments, error)


PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.data())
def test_truth_and_belief_agree_exactly_on_ideal_channels(data: st.DataObject) -> None:
    _run(data, ideal=True)


@PROPERTY
@given(st.data())
def test_truth_and_belief_agree_on_real_channels(data: st.DataObject) -> None:
    _run(data, ideal=False)


def test_an_integral_channel_and_an_injected_fault_keep_truth_and_belief_together() -> None:
    """The reproducer: ``"channel": 2.0`` in a batch once reached the backend as a float, which
    failed after the other channels had drawn; now 2.0 is channel 2. A fault on the last channel
    after the others drew is recorded for those that did."""
    setup, backend = _rig(ideal=True)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_50ul", "channels": [0, 1, 2.0]})
    batch = {
        "items": [{"channel": ch, "well": "reservoir:A1", "volume": ul(32.5)} for ch in (0, 1, 2.0)]
    }
    data = setup.ok("lh_aspirate", batch)
    assert [it["channel"] for it in data["items"]] == [0, 1, 2]
    assert all(type(it["channel"]) is int for it in data["items"])
    _agree(setup, backend, ideal=True)
    setup.ok("lh_dispense", {"items": [{**it, "well": "plate_1:A1"} for it in batch["items"]][:1]})
    backend.fault = Fault(0, "channel")
    result = setup.call(
        "lh_dispense",
        {
            "items": [
                {"channel": ch, "well": f"plate_1:B{1 + ch}", "volume": ul(30)} for ch in (1, 2)
            ]
        },
    )
    assert not result.ok
    error = result.error or {}
    assert error["code"] == "instrument_error"
    assert "channel(s) 1 completed it" in error["message"], error
    _agree(setup, backend, ideal=True)
    head = setup.handler.plr.head
    assert math.isclose(head[1].get_tip().tracker.volume, 2.5)  # channel 1 dispensed 30 µL
    assert math.isclose(head[2].get_tip().tracker.volume, 32.5)  # channel 2 did not
    assert math.isclose(setup.well("plate_1:B2").tracker.volume, 30.0)
    assert setup.well("plate_1:B3").tracker.volume == 0.0


def test_a_batch_failing_mid_way_keeps_what_ran() -> None:
    """A fault in a batch's dispense, after three of its four channels dispensed: the result
    says that earlier steps ran and which channels completed the failed one; the belief holds
    the three wells filled and the fourth tip still full, as the world does."""
    setup, backend = _rig(ideal=True)
    wells = [f"plate_1:{row}1" for row in "ABCD"]
    backend.fault = Fault(2, "channel")  # pick-up, aspirate, then the dispense fails
    result = setup.call(
        "lh_transfer",
        {
            "transfers": [
                {"source": "reservoir:A1", "destination": well, "volume": ul(20)} for well in wells
            ],
            "tip_rack": "tips_50ul",
            "tips": "new",
            "channels": [0, 1, 2, 3],
            "mix_cycles": 0,
            "mix_volume": ul(10),
        },
    )
    assert not result.ok
    message = (result.error or {})["message"]
    assert "channel(s) 0, 1, 2 completed it" in message, message
    assert "(step 3 of 4; earlier steps ran)" in message, message
    _agree(setup, backend, ideal=True)
    assert [setup.well(well).tracker.volume for well in wells] == [20.0, 20.0, 20.0, 0.0]
    head = setup.handler.plr.head
    assert [head[ch].get_tip().tracker.volume for ch in range(4)] == [0.0, 0.0, 0.0, 20.0]
