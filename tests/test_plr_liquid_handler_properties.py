"""Random sequences of liquid-handler calls: a refused call never changes anything, PLR's
trackers never hold pending changes or impossible volumes, and believed liquid is conserved
(only dropped tips lose it)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_rig import Rig, rig, ul

WELLS = [
    "reservoir:A1",
    "reservoir:A2",
    "plate_1:A1",
    "plate_1:A2",
    "plate_384:A1",
    "cuvette",
    "plate_1:Q9",
]
VOLUMES = st.sampled_from([0.5, 5.0, 20.0, 95.0, 150.0, 280.0, 400.0, 1000.0])
CHANNELS = st.integers(min_value=0, max_value=2)

calls = st.one_of(
    st.tuples(
        st.just("lh_pick_up_tips"),
        st.fixed_dictionaries(
            {
                "tip_rack": st.sampled_from(["tips_300ul", "tips_1000ul"]),
                "channels": st.lists(CHANNELS, min_size=1, max_size=2),
            }
        ),
    ),
    st.tuples(
        st.just("lh_drop_tips"),
        st.fixed_dictionaries({"channels": st.lists(CHANNELS, min_size=1, max_size=2)}),
    ),
    st.tuples(
        st.sampled_from(["lh_aspirate", "lh_dispense"]),
        st.fixed_dictionaries(
            {"channel": CHANNELS, "well": st.sampled_from(WELLS), "volume": VOLUMES.map(ul)}
        ),
    ),
    st.tuples(
        st.just("lh_transfer"),
        st.fixed_dictionaries(
            {
                "channel": CHANNELS,
                "source": st.sampled_from(WELLS),
                "destination": st.sampled_from(WELLS),
                "volume": VOLUMES.map(ul),
            }
        ),
    ),
    st.tuples(
        st.just("lh_mix"),
        st.fixed_dictionaries(
            {
                "channel": CHANNELS,
                "well": st.sampled_from(WELLS),
                "volume": VOLUMES.map(ul),
                "cycles": st.integers(min_value=1, max_value=3),
            }
        ),
    ),
)


def _light_snapshot(setup: Rig) -> tuple[Any, ...]:
    world = setup.world
    trackers = []
    for resource in setup.handler.plr.deck.get_all_resources():
        tracker = getattr(resource, "tracker", None)
        if tracker is not None and hasattr(tracker, "pending_volume"):
            trackers.append((tracker.volume, tracker.pending_volume))
        elif tracker is not None:
            trackers.append((id(tracker._tip), id(tracker._pending_tip)))
    head = [
        (
            id(t._tip),
            id(t._pending_tip),
            (t._tip.tracker.volume, t._tip.tracker.pending_volume) if t._tip else None,
        )
        for t in setup.handler.plr.head.values()
    ]
    contents = {k: world.contents(k).state() for k in sorted(world.containers())}
    return (
        setup.lab.state(),
        trackers,
        head,
        repr(contents),
        world.clock.now(),
        repr(world.stream("lh").bit_generator.state),
    )


def _believed(setup: Rig) -> float:
    """Liquid the handler believes is on the deck and in its tips (µL)."""
    total = 0.0
    for resource in setup.handler.plr.deck.get_all_resources():
        tracker = getattr(resource, "tracker", None)
        if tracker is not None and hasattr(tracker, "pending_volume"):
            assert tracker.pending_volume == tracker.volume, resource.name  # nothing pending
            assert -1e-6 <= tracker.volume <= tracker.max_volume + 1e-6, resource.name
            total += tracker.volume
    for channel, head in setup.handler.plr.head.items():
        if head.has_tip:
            tip = head.get_tip()
            assert tip.tracker.pending_volume == tip.tracker.volume
            assert -1e-6 <= tip.tracker.volume <= tip.nominal_volume + 1e-6, channel
            total += tip.tracker.volume
    return total


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, min_size=1, max_size=10))
def test_random_call_sequences_keep_the_invariants(sequence: list[tuple[str, dict]]) -> None:
    setup = rig(seed=13)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    believed = _believed(setup)
    for tool, arguments in sequence:
        before = _light_snapshot(setup)
        in_tips = {
            ch: h.get_tip().tracker.volume for ch, h in setup.handler.plr.head.items() if h.has_tip
        }
        result = setup.call(tool, arguments)
        if not result.ok:
            assert result.error["code"] != "instrument_error", result.error
            assert _light_snapshot(setup) == before, (tool, arguments, result.error)
            continue
        if tool == "lh_drop_tips":
            believed -= sum(in_tips[ch] for ch in arguments["channels"])
        now = _believed(setup)
        assert abs(now - believed) < 1e-6, (tool, arguments)
        believed = now
