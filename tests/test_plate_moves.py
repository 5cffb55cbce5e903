"""``lh_move_plate`` without PyLabRobot's whole-plate copy leaves PLR's belief exactly as PLR's
own ``move_plate`` does: placements, the resource tree, well volumes, tips and the deck index."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from lh_rig import Rig, rig, ul

from labtools.demo.protocol import batch
from labtools.drivers.pylabrobot.plate_moves import light_rotations, rotated_view
from labtools.drivers.pylabrobot.plr import Plate, PlateHolder, PlateReader

PLATES = ("plate_1", "plate_2", "plate_384", "reservoir")
MOVES = [
    ("plate_1", "reader"),
    ("plate_384", "spare_carrier-0"),
    ("plate_2", "plate_carrier-4"),
    ("plate_1", "spare_carrier-3"),
    ("reservoir", "spare_carrier-1"),
    ("plate_384", "plate_carrier-3"),
]


def _sites(setup: Rig) -> list[Any]:
    deck = setup.handler.plr.deck
    return [r for r in deck.get_all_resources() if isinstance(r, PlateHolder | PlateReader)]


@pytest.mark.parametrize("name", PLATES)
def test_the_view_places_a_plate_where_plrs_copy_does(name: str) -> None:
    """On every plate site and the reader, at every quarter turn: the same default location."""
    setup = rig(seed=0)
    plate = setup.handler.plr.deck.get_resource(name)
    for site in _sites(setup):
        for turn in (0, 90, 180, 270):
            copied = site.get_default_child_location(plate.rotated(z=turn))
            viewed = site.get_default_child_location(rotated_view(plate, z=turn))
            assert viewed == copied, (name, site.name, turn)


def test_the_view_leaves_the_plate_untouched() -> None:
    setup = rig(seed=0)
    plate = setup.handler.plr.deck.get_resource("plate_1")
    before = (plate.serialize(), plate.serialize_all_state(), plate.parent, plate.location)
    view = rotated_view(plate, z=90)
    assert isinstance(view, Plate) and view is not plate and view.rotation.z == 90
    assert view.parent is None and plate.rotation.z == 0
    after = (plate.serialize(), plate.serialize_all_state(), plate.parent, plate.location)
    assert after == before
    with light_rotations(plate):
        assert plate.rotated(z=180).rotation.z == 180
    assert "rotated" not in vars(plate)  # the method is PLR's again


def _belief(setup: Rig) -> str:
    """PLR's whole belief: the tree and its state, each plate's place, the head, the index."""
    lh = setup.handler.plr
    deck = lh.deck
    plates = [
        (
            p.name,
            p.parent.name if p.parent else None,
            repr(p.location),
            repr(p.rotation),
            [repr(w.get_absolute_location()) for w in p.get_all_items()],
        )
        for p in deck.get_all_resources()
        if isinstance(p, Plate)
    ]
    head = {ch: (t.has_tip, t.serialize()) for ch, t in lh.head.items()}
    layout = [
        (r.name, type(r).__name__, r.parent.name if r.parent else None, repr(r.location))
        for r in deck.get_all_resources()
    ]
    state = {
        "layout": layout,
        "state": deck.serialize_all_state(),
        "plates": plates,
        "head": head,
        "index": [r.name for r in deck.get_all_resources()],
        "children": {r.name: [c.name for c in r.children] for r in deck.get_all_resources()},
        "gripper": repr(lh.get_picked_up_resource()),
        "lab": setup.lab.state(),
        "clock": setup.world.clock.now(),
    }
    return json.dumps(state, sort_keys=True, default=str)


def _prepared(seed: int) -> Rig:
    """A lab with liquid in wells of every plate and a tip holding liquid on channel 0."""
    setup = rig(seed=seed)
    moves = [("reservoir:A1", w, 40.0) for w in ("plate_1:A1", "plate_2:B3", "plate_384:C5")]
    setup.ok("lh_transfer", batch(moves))
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_10ul", "channels": [0]})
    setup.ok("lh_aspirate", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": ul(4)}]})
    return setup


def test_moves_leave_plrs_belief_exactly_as_plrs_own_move_plate() -> None:
    fast, plain = _prepared(4), _prepared(4)
    assert _belief(fast) == _belief(plain)
    for plate, destination in MOVES:
        fast.ok("lh_move_plate", {"plate": plate, "destination": destination})
        lh = plain.handler.plr
        moving, site = lh.deck.get_resource(plate), lh.deck.get_resource(destination)
        asyncio.run(lh.move_plate(moving, site))  # PLR's own, with its deep copy
        assert _belief(fast) == _belief(plain), (plate, destination)
    # pipetting still reaches the moved plates' wells
    fast.ok("lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A2", "volume": ul(4)}]})
    assert fast.lab.state()["lh"]["labware"][1]["wells"]["A2"] == 4.0
