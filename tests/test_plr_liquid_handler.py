"""The PyLabRobot liquid-handler adapter through ``Lab`` on the virtual deck and physics backend:
tips, liquid, plate moves, the deck view, result shapes, the Python proxy."""

from __future__ import annotations

import json

import jsonschema
import pytest
from lh_rig import Rig, rig, ul

from labtools.demo.protocol import with_tip
from labtools.units import Quantity


@pytest.fixture
def setup() -> Rig:
    return rig(seed=3)


def test_tips_come_in_rack_order_and_are_counted(setup: Rig) -> None:
    data = setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [2, 0]})
    assert data == {
        "tips": [
            {"channel": 0, "tip": "tips_300ul:A1", "tip_type": "tip_300ul"},
            {"channel": 2, "tip": "tips_300ul:B1", "tip_type": "tip_300ul"},
        ],
        "tips_left": 94,
    }
    data = setup.ok("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [1]})
    assert data["tips"] == [{"channel": 1, "tip": "tips_1000ul:A1", "tip_type": "tip_1000ul"}]
    deck = setup.ok("lh_get_deck", {})
    assert deck["tips_left"] == {
        "tips_300ul": 94,
        "tips_1000ul": 95,
        "tips_10ul": 96,
        "tips_50ul": 96,
    }
    assert [c["tip"] for c in deck["channels"][:3]] == [
        "tips_300ul:A1",
        "tips_1000ul:A1",
        "tips_300ul:B1",
    ]
    assert setup.ok("lh_drop_tips", {"channels": [0, 2]}) == {"channels": [0, 2]}
    assert (
        setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})["tips"][0]["tip"]
        == "tips_300ul:C1"
    )  # used tips go to the trash, not back to the rack


def test_volumes_are_the_handlers_belief_not_the_worlds_truth(setup: Rig) -> None:
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    moved = setup.ok(
        "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(120)}]}
    )["items"][0]
    assert moved == {
        "channel": 0,
        "well": "reservoir:A1",
        "volume": ul(120.0),
        "tip_volume": ul(120.0),
        "well_volume": ul(14880.0),
    }
    moved = setup.ok(
        "lh_dispense", {"items": [{"channel": 0, "well": "plate_1:a1", "volume": ul(120)}]}
    )["items"][0]
    assert moved["well"] == "plate_1:A1" and moved["well_volume"] == ul(120.0)
    assert moved["tip_volume"] == ul(0.0)
    deck = setup.ok("lh_get_deck", {})
    plate = next(lw for lw in deck["labware"] if lw["name"] == "plate_1")
    assert plate["wells"] == {"A1": 120.0}
    truth = setup.world.contents("plate_1:A1").volume_ul
    assert truth != 120.0 and abs(truth - 120.0) < 3.0  # the channel's error, hidden


def test_transfer_mix_and_single_container_names(setup: Rig) -> None:
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [0]})
    done = setup.ok(
        "lh_transfer",
        with_tip(0, "reservoir:A2", "cuvette", ul(1, "milliliter")),
    )
    assert done["volume"] == ul(1000.0) and done["transfers"] == done["trips"] == 1
    assert done["tips_used"] == 0 and done["notes"] == []
    assert setup.ok(
        "lh_mix", {"items": [{"channel": 0, "well": "cuvette", "volume": ul(500)}], "cycles": 3}
    ) == {"items": [{"channel": 0, "well": "cuvette", "volume": ul(500.0)}], "cycles": 3}
    deck = setup.ok("lh_get_deck", {})
    cuvette = next(lw for lw in deck["labware"] if lw["name"] == "cuvette")
    assert cuvette == {
        "name": "cuvette",
        "kind": "cuvette",
        "location": "cuvette_holder",
        "well_capacity": ul(3500.0),
        "wells": {"cuvette": 1000.0},
    }
    assert deck["channels"][0]["tip_volume"] == ul(0.0)
    # the 384-well plate and the last reservoir column resolve too
    done = setup.ok(
        "lh_transfer",
        with_tip(0, "reservoir:A2", "plate_384:P24", ul(40)),
    )
    assert setup.ok("lh_get_deck", {})["labware"][3]["wells"] == {"P24": 40.0}
    assert setup.world.contents("plate_384:P24").volume_ul > 39


def test_get_deck_is_compact_and_json(setup: Rig) -> None:
    deck = setup.ok("lh_get_deck", {})
    assert [lw["name"] for lw in deck["labware"]] == [
        "reservoir",
        "plate_1",
        "plate_2",
        "plate_384",
        "cuvette",
    ]
    reservoir = deck["labware"][0]
    assert reservoir["kind"] == "reservoir" and reservoir["location"] == "plate_carrier-0"
    assert reservoir["wells"] == {"A1": 15000.0, "A2": 15000.0}
    assert deck["labels"] == {
        "reservoir:A1": "tartrazine 500 µM",
        "reservoir:A2": "phosphate buffer pH 7",
    }
    assert deck["free_sites"][:2] == ["plate_carrier-4", "spare_carrier-0"]
    assert "reader" in deck["free_sites"]
    assert deck == setup.handler.state() == setup.lab.state()["lh"]
    assert len(json.dumps(deck, allow_nan=False)) < 3000


def test_results_match_the_declared_output_schemas(setup: Rig) -> None:
    def check(tool: str, data: dict) -> None:
        schema = setup.lab.tool_spec(tool).output_schema
        jsonschema.validate(data, schema)

    check(
        "lh_pick_up_tips", setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    )
    check(
        "lh_aspirate",
        setup.ok(
            "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(50)}]}
        ),
    )
    check(
        "lh_dispense",
        setup.ok(
            "lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": ul(50)}]}
        ),
    )
    check(
        "lh_transfer",
        setup.ok(
            "lh_transfer",
            with_tip(0, "reservoir:A1", "plate_1:A2", ul(50)),
        ),
    )
    check(
        "lh_mix",
        setup.ok(
            "lh_mix",
            {"items": [{"channel": 0, "well": "plate_1:A2", "volume": ul(20)}], "cycles": 2},
        ),
    )
    check("lh_move_plate", setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "reader"}))
    check("lh_drop_tips", setup.ok("lh_drop_tips", {"channels": [0]}))
    check("lh_get_deck", setup.ok("lh_get_deck", {}))


def test_move_plate_into_the_reader_and_back(setup: Rig) -> None:
    deck = setup.handler.plr.deck
    start = setup.world.clock.now()
    assert setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "reader"}) == {
        "plate": "plate_1",
        "location": "reader",
    }
    assert deck.get_resource("reader").get_plate().name == "plate_1"
    assert setup.world.clock.now() - start == pytest.approx(16.0)  # grip 6 + carry 4 + release 6
    view = setup.ok("lh_get_deck", {})
    assert next(lw for lw in view["labware"] if lw["name"] == "plate_1")["location"] == "reader"
    assert "plate_carrier-1" in view["free_sites"] and "reader" not in view["free_sites"]
    before = setup.snapshot()
    assert (
        setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "reader"})["location"]
        == "reader"
    )  # idempotent: already there, nothing moves
    assert setup.snapshot() == before
    setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "spare_carrier-2"})
    assert deck.get_resource("plate_1").parent.name == "spare_carrier-2"
    # wells keep their names (and the world its contents) wherever the plate goes
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    setup.ok(
        "lh_transfer",
        with_tip(0, "reservoir:A1", "plate_1:H12", ul(30)),
    )
    assert setup.world.contents("plate_1:H12").volume_ul > 29


def test_dropped_tips_take_their_liquid_to_the_trash(setup: Rig) -> None:
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    setup.ok("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(80)}]})
    in_tip = setup.backend.tip_contents(0).volume_ul
    setup.ok("lh_drop_tips", {"channels": [0]})
    assert setup.world.contents("trash").volume_ul == pytest.approx(in_tip)
    assert setup.backend.tip_contents(0) is None


def test_a_successful_call_does_change_the_snapshot(setup: Rig) -> None:
    before = setup.snapshot()
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    after_tip = setup.snapshot()
    assert after_tip != before
    setup.ok("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(10)}]})
    assert setup.snapshot() != after_tip


def test_python_proxy_takes_quantities_and_strings(setup: Rig) -> None:
    lh = setup.lab.lh
    lh.pick_up_tips("tips_300ul", [0])
    lh.aspirate([{"channel": 0, "well": "reservoir:A1", "volume": "0.1 mL"}])
    item = {"channel": 0, "well": "plate_2:B3", "volume": Quantity(60, "microliter")}
    moved = lh.dispense(items=[item])["items"][0]
    assert moved["tip_volume"] == ul(40.0) and moved["well_volume"] == ul(60.0)
