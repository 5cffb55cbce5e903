"""Every refused liquid-handler call returns its tool error and changes no state: not the lab's
belief, not PLR's trackers (committed or pending), not the world, its clock or its noise."""

from __future__ import annotations

from typing import Any

import pytest
from lh_rig import Rig, rig, ul

from labtools.demo.protocol import with_tip
from labtools.drivers.pylabrobot.plr import ChannelizedError, TooLittleLiquidError
from labtools.errors import InstrumentError, Interlock, PreconditionFailed, ToolError
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend


def _refused(
    setup: Rig, tool: str, arguments: dict[str, Any], code: str, field: str | None = None
) -> dict[str, Any]:
    before = setup.snapshot()
    result = setup.call(tool, arguments)
    assert not result.ok, f"{tool} {arguments} was accepted"
    error = result.error or {}
    assert error["code"] == code, error
    if field is not None:
        assert error["field"] == _pointer(tool, field), error
    assert error["hint"], error
    assert setup.snapshot() == before, f"{tool} {arguments} changed state"
    return error


#: a one-item call's pointers: the single-channel argument's place inside item (transfer) 0
_INSIDE = {
    "lh_aspirate": {"/channel": "/items/0/channel", "/well": "/items/0/well"},
    "lh_transfer": {
        "/channel": "/channels/0",
        "/source": "/transfers/0/source",
        "/destination": "/transfers/0/destination",
        "/volume": "/transfers/0/volume",
    },
}
_INSIDE["lh_aspirate"]["/volume"] = "/items/0/volume"
_INSIDE["lh_dispense"] = _INSIDE["lh_mix"] = _INSIDE["lh_aspirate"]


def _pointer(tool: str, field: str) -> str:
    return _INSIDE.get(tool, {}).get(field, field)


@pytest.fixture
def setup() -> Rig:
    return rig(seed=11)


@pytest.fixture
def tipped(setup: Rig) -> Rig:
    """Channel 0 with a 300 µL tip, channel 2 with a 1000 µL tip; plate_1:A1 holds 300 µL,
    plate_1:B1 50 µL; channel 0's tip holds 100 µL."""
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [2]})
    for well, volume in (("plate_1:A1", 300), ("plate_1:B1", 50)):
        setup.ok(
            "lh_transfer",
            with_tip(2, "reservoir:A1", well, ul(volume)),
        )
    setup.ok("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(100)}]})
    return setup


def test_aspirate_without_tip_is_precondition_failed(setup: Rig) -> None:
    error = _refused(
        setup,
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(50)}]},
        "precondition_failed",
        "/channel",
    )
    assert "lh_pick_up_tips" in error["hint"]


def test_dispense_and_mix_and_transfer_without_tip(setup: Rig) -> None:
    _refused(
        setup,
        "lh_dispense",
        {"items": [{"channel": 1, "well": "plate_1:A1", "volume": ul(5)}]},
        "precondition_failed",
        "/channel",
    )
    _refused(
        setup,
        "lh_mix",
        {"items": [{"channel": 1, "well": "reservoir:A1", "volume": ul(5)}], "cycles": 2},
        "precondition_failed",
        "/channel",
    )
    _refused(
        setup,
        "lh_transfer",
        with_tip(1, "reservoir:A1", "plate_1:A1", ul(5)),
        "precondition_failed",
        "/channel",
    )


def test_pick_up_with_tip_mounted_is_precondition_failed(tipped: Rig) -> None:
    _refused(
        tipped,
        "lh_pick_up_tips",
        {"tip_rack": "tips_300ul", "channels": [1, 0]},
        "precondition_failed",
        "/channels/1",
    )


def test_drop_without_tip_is_precondition_failed(tipped: Rig) -> None:
    error = _refused(
        tipped, "lh_drop_tips", {"channels": [0, 5]}, "precondition_failed", "/channels/1"
    )
    assert "0, 2" in error["hint"]


@pytest.mark.parametrize(
    "well", ["plate_9:A1", "plate_1:Z9", "plate_1", "tips_300ul:A1", "trash", "cuvette:A1", ""]
)
def test_unknown_well_is_unknown_resource_with_hint(tipped: Rig, well: str) -> None:
    error = _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 0, "well": well, "volume": ul(5)}]},
        "unknown_resource",
        "/well",
    )
    assert "plate_1" in error["hint"] or "A1" in error["hint"] or "cuvette" in error["hint"]


def test_unknown_tip_rack_lists_the_racks(setup: Rig) -> None:
    error = _refused(
        setup,
        "lh_pick_up_tips",
        {"tip_rack": "tips_20ul", "channels": [0]},
        "unknown_resource",
        "/tip_rack",
    )
    assert "tips_300ul (96 left)" in error["hint"]
    _refused(
        setup,
        "lh_pick_up_tips",
        {"tip_rack": "teaching_tip_rack", "channels": [0]},
        "unknown_resource",
        "/tip_rack",
    )


def test_volume_outside_the_tip_type_is_out_of_range_in_the_callers_unit(tipped: Rig) -> None:
    error = _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(0.5, "milliliter")}]},
        "out_of_range",
        "/volume",
    )
    assert error["hint"] == (
        "with tip_300ul: 0.001–0.3 milliliter; "
        "for 0.5 milliliter use tips_1000ul (tip_1000ul: 0.01–1 milliliter)"
    )
    error = _refused(
        tipped,
        "lh_dispense",
        {"items": [{"channel": 2, "well": "plate_1:C1", "volume": ul(5)}]},
        "out_of_range",
        "/volume",
    )
    assert error["hint"] == (
        "with tip_1000ul: 10–1000 microliter; "
        "for 5 microliter use tips_10ul (tip_10ul: 1–10 microliter)"
    )


def test_lab_limits_catch_volumes_no_tip_takes(tipped: Rig) -> None:
    _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(2, "milliliter")}]},
        "out_of_range",
        "/volume",
    )
    _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 8, "well": "reservoir:A1", "volume": ul(5)}]},
        "out_of_range",
        "/channel",
    )


def test_overdraw_below_dead_volume_is_interlock(tipped: Rig) -> None:
    dead = tipped.handler._dead_volume(tipped.well("plate_1:B1"))
    assert 5 < dead < 10  # Corning 96 flat, from PLR's geometry
    error = _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 2, "well": "plate_1:B1", "volume": ul(45)}]},
        "interlock",
        "/volume",
    )
    assert "dead volume" in error["message"]
    assert error["hint"] == f"at most {50 - dead:.6g} microliter from plate_1:B1"
    _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 2, "well": "plate_1:C1", "volume": ul(10)}]},
        "interlock",
        "/volume",
    )  # an empty well
    # just above the dead volume is allowed
    assert tipped.call(
        "lh_aspirate",
        {"items": [{"channel": 2, "well": "plate_1:B1", "volume": ul(50 - dead - 0.01)}]},
    ).ok


def test_overdraw_words_what_the_well_holds_truthfully(tipped: Rig) -> None:
    """An empty well is called empty, a well at or below its dead volume holds nothing a tip
    reaches, and only a well above it has a part below the tip's reach."""
    dead = tipped.handler._dead_volume(tipped.well("plate_1:D1"))
    tipped.ok("lh_dispense", {"items": [{"channel": 0, "well": "plate_1:D1", "volume": ul(5)}]})
    assert dead > 5  # so 5 µL is all below the tip's reach
    words = {}
    for well, volume in (("plate_1:C1", 10), ("plate_1:D1", 1), ("plate_1:B1", 45)):
        words[well] = _refused(
            tipped,
            "lh_aspirate",
            {"items": [{"channel": 0, "well": well, "volume": ul(volume)}]},
            "interlock",
            "/volume",
        )
    assert words["plate_1:C1"]["message"] == "plate_1:C1 is empty: 10 µL would overdraw it"
    assert words["plate_1:C1"]["hint"] == "plate_1:C1 has nothing a tip can draw; use another well"
    assert words["plate_1:D1"]["message"] == (
        f"plate_1:D1 holds 5 µL, all below the tip's reach (its dead volume is {dead:.3g} µL): "
        "1 µL would overdraw it"
    )
    assert words["plate_1:D1"]["hint"] == "plate_1:D1 has nothing a tip can draw; use another well"
    assert words["plate_1:B1"]["message"] == (
        f"plate_1:B1 holds 50 µL, of which {dead:.3g} µL is below the tip's reach "
        "(dead volume): 45 µL would overdraw it"
    )
    # the batch planner words its dry run the same way, naming the transfer
    error = _refused(
        tipped,
        "lh_transfer",
        {
            "transfers": [
                {"source": "plate_1:E1", "destination": "plate_1:F1", "volume": ul(5)},
            ],
            "tip_rack": "tips_300ul",
            "tips": "new",
            "channels": [1],
            "mix_cycles": 0,
            "mix_volume": ul(10),
        },
        "interlock",
        "/transfers/0/volume",
    )
    assert error["message"] == (
        "transfer 0 (plate_1:E1 → plate_1:F1): plate_1:E1 is empty: 5 µL would overdraw it"
    )


def test_tip_over_capacity_is_interlock(tipped: Rig) -> None:
    error = _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(250)}]},
        "interlock",
        "/volume",
    )
    assert error["hint"].startswith("at most 200 microliter")


def test_well_overfill_is_interlock(tipped: Rig) -> None:
    error = _refused(
        tipped,
        "lh_dispense",
        {"items": [{"channel": 0, "well": "plate_1:A1", "volume": ul(100)}]},
        "interlock",
        "/volume",
    )
    assert error["hint"] == "at most 60 microliter into plate_1:A1"


def test_dispensing_more_than_the_tip_holds_is_interlock(tipped: Rig) -> None:
    error = _refused(
        tipped,
        "lh_dispense",
        {"items": [{"channel": 0, "well": "plate_1:C1", "volume": ul(150)}]},
        "interlock",
        "/volume",
    )
    assert error["hint"] == "at most 100 microliter"
    _refused(
        tipped,
        "lh_dispense",
        {"items": [{"channel": 2, "well": "plate_1:C1", "volume": ul(20)}]},
        "interlock",
        "/volume",
    )  # an empty tip


def test_transfer_checks_both_ends_before_drawing(tipped: Rig) -> None:
    _refused(
        tipped,
        "lh_transfer",
        with_tip(2, "reservoir:A1", "plate_1:A1", ul(100)),
        "interlock",
        "/volume",
    )
    _refused(
        tipped,
        "lh_transfer",
        with_tip(2, "reservoir:A1", "plate_9:A1", ul(100)),
        "unknown_resource",
        "/destination",
    )
    _refused(
        tipped,
        "lh_transfer",
        with_tip(2, "plate_1:C1", "plate_1:D1", ul(100)),
        "interlock",
        "/volume",
    )


def test_mix_checks_the_draw(tipped: Rig) -> None:
    _refused(
        tipped,
        "lh_mix",
        {"items": [{"channel": 2, "well": "plate_1:B1", "volume": ul(45)}], "cycles": 3},
        "interlock",
        "/volume",
    )
    _refused(
        tipped,
        "lh_mix",
        {"items": [{"channel": 2, "well": "plate_1:B1", "volume": ul(20)}], "cycles": 0},
        "out_of_range",
        "/cycles",
    )


def test_no_tips_left_is_interlock(setup: Rig) -> None:
    rack = setup.handler.plr.deck.get_resource("tips_300ul")
    rack.set_tip_state([False] * 95 + [True])
    error = _refused(
        setup,
        "lh_pick_up_tips",
        {"tip_rack": "tips_300ul", "channels": [0, 1]},
        "interlock",
        "/tip_rack",
    )
    assert "1 tips left" in error["message"] and "tips_1000ul (96 left)" in error["hint"]
    assert setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [3]}) == {
        "tips": [{"channel": 3, "tip": "tips_300ul:H12", "tip_type": "tip_300ul"}],
        "tips_left": 0,
    }


def test_repeated_channels_are_invalid(setup: Rig) -> None:
    _refused(
        setup,
        "lh_pick_up_tips",
        {"tip_rack": "tips_300ul", "channels": [1, 1]},
        "invalid_arguments",
        "/channels/1",
    )


def test_plate_moves_to_occupied_or_unknown_sites_are_refused(setup: Rig) -> None:
    error = _refused(
        setup,
        "lh_move_plate",
        {"plate": "plate_1", "destination": "plate_carrier-2"},
        "interlock",
        "/destination",
    )
    assert "spare_carrier-0" in error["hint"] and "reader" in error["hint"]
    _refused(
        setup,
        "lh_move_plate",
        {"plate": "plate_1", "destination": "bench"},
        "unknown_resource",
        "/destination",
    )
    _refused(
        setup,
        "lh_move_plate",
        {"plate": "plate_1", "destination": "tip_carrier-3"},
        "unknown_resource",
        "/destination",
    )
    _refused(
        setup,
        "lh_move_plate",
        {"plate": "plate_7", "destination": "reader"},
        "unknown_resource",
        "/plate",
    )
    _refused(
        setup,
        "lh_move_plate",
        {"plate": "cuvette", "destination": "reader"},
        "unknown_resource",
        "/plate",
    )
    setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
    _refused(
        setup,
        "lh_move_plate",
        {"plate": "plate_2", "destination": "reader"},
        "interlock",
        "/destination",
    )


def test_python_proxy_raises_the_typed_errors(tipped: Rig) -> None:
    lh = tipped.lab.lh
    before = tipped.snapshot()
    with pytest.raises(Interlock):
        lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "100 uL"}])
    with pytest.raises(PreconditionFailed):
        lh.aspirate(items=[{"channel": 1, "well": "reservoir:A1", "volume": "10 uL"}])
    with pytest.raises(ToolError) as caught:
        lh.aspirate([{"channel": 0, "well": "reservoir:A1", "volume": "0.5 mL"}])
    assert caught.value.code == "out_of_range"
    assert tipped.snapshot() == before


# -- the safety net: PLR or the backend failing after our checks passed -----------------------
class _FailingBackend(PhysicsLiquidHandlerBackend):
    """Fails the next aspirate with a chosen exception, before touching the world."""

    failure: Exception | None = None

    async def aspirate(self, ops: Any, use_channels: list[int]) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        await super().aspirate(ops, use_channels)


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (ChannelizedError({0: TooLittleLiquidError("Not enough liquid")}), "interlock"),
        (RuntimeError("firmware: pressure fault"), "instrument_error"),
    ],
)
def test_backend_failure_restores_trackers_and_maps_the_error(
    failure: Exception, code: str
) -> None:
    setup = rig(seed=5, backend=_FailingBackend)
    backend = setup.backend
    assert isinstance(backend, _FailingBackend)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    before = setup.snapshot()
    backend.failure = failure
    result = setup.call(
        "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(50)}]}
    )
    assert not result.ok and result.error["code"] == code
    assert setup.snapshot() == before
    assert setup.call(
        "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(50)}]}
    ).ok


def test_plr_queue_failure_is_undone(tipped: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """With our own check disabled, PLR 0.2.2 refuses in its queue phase and would leave the
    well's pending volume changed; the adapter restores it."""
    from labtools.drivers.pylabrobot.multichannel import Belief

    monkeypatch.setattr(Belief, "draw", lambda *args: None)
    error = _refused(
        tipped,
        "lh_aspirate",
        {"items": [{"channel": 2, "well": "plate_1:B1", "volume": ul(80)}]},
        "interlock",
    )
    assert "Not enough liquid" in error["message"]


def test_tracking_switched_off_is_refused(tipped: Rig) -> None:
    from labtools.drivers.pylabrobot.plr import set_volume_tracking

    before = tipped.snapshot()
    set_volume_tracking(False)
    try:
        result = tipped.call(
            "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(10)}]}
        )
    finally:
        set_volume_tracking(True)
    assert not result.ok and result.error["code"] == "instrument_error"
    assert tipped.snapshot() == before
    assert InstrumentError.code == "instrument_error"
