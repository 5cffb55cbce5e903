"""One owner of container keys: the adapter, the physics backends and the reader's layout name
every container of the virtual deck alike, from PyLabRobot's own identifiers."""

from __future__ import annotations

import numpy as np
import pytest

from labtools.drivers.pylabrobot.deck_view import DeckView
from labtools.drivers.pylabrobot.naming import (
    ContainerNames,
    container_key,
    find_container,
    grid_position,
)
from labtools.drivers.pylabrobot.plate_reader import _build_index
from labtools.drivers.pylabrobot.plr import DeepWell_Greiner_1536_Well
from labtools.errors import UnknownResource
from labtools.simulators.deck import virtual_deck
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.plate_reading.layout import build_layout
from labtools.simulators.world import World


@pytest.mark.parametrize(
    ("identifier", "position"),
    [("A1", (0, 0)), ("H12", (7, 11)), ("P24", (15, 23)), ("AF48", (31, 47))],
)
def test_grid_positions_are_plr_s_parse_of_the_identifier(identifier: str, position) -> None:
    assert grid_position(identifier) == position


def test_a_1536_well_plate_is_placed_on_its_32_by_48_grid() -> None:
    """Two-letter rows (AA–AF): the reader's index and the simulator's layout agree."""
    plate = DeepWell_Greiner_1536_Well("p1536")
    index = _build_index(plate)
    layout = build_layout(plate, "cross_section")
    assert index.position["AF48"] == (31, 47) and index.position["AA1"] == (26, 0)
    assert index.identifiers[:2] == ["A1", "A2"] and index.identifiers[-1] == "AF48"
    assert (layout.rows, layout.cols) == (32, 48)
    assert int(layout.row.max()) == 31 and int(layout.col.max()) == 47
    positions = {ident: index.position[ident] for ident in layout.identifiers}
    assert [(int(r), int(c)) for r, c in zip(layout.row, layout.col, strict=True)] == list(
        positions.values()
    )
    assert layout.keys[-1] == "p1536:AF48" == container_key(plate.get_well("AF48"))


def test_every_container_has_one_key_across_adapter_backend_and_reader() -> None:
    world = World(0)
    deck = virtual_deck(world, None).deck
    view, backend = DeckView(deck), PhysicsLiquidHandlerBackend(world)
    seen = 0
    for labware in view.labware:
        if labware.name in view.names.wells:
            layout = build_layout(labware, "cross_section")
            wells = labware.get_all_items()
            assert list(layout.keys) == [container_key(w) for w in wells]
            for key, well in zip(layout.keys, wells, strict=True):
                assert view.container(key, "/well") == (well, key)
                assert backend._ref(well) == key
                seen += 1
        else:
            assert view.container(labware.name, "/well") == (labware, labware.name)
            assert backend._ref(labware) == container_key(labware) == labware.name
            seen += 1
    assert seen == 12 + 96 + 96 + 384 + 1


def test_keys_resolve_back_case_insensitively_and_unknown_keys_say_what_exists() -> None:
    deck = virtual_deck(World(0), None).deck
    well, key = find_container(deck, "plate_384:p24")
    assert key == "plate_384:P24" and well is deck.get_resource("plate_384").get_well("P24")
    names = ContainerNames(deck)
    with pytest.raises(UnknownResource) as caught:
        names.resolve("plate_1:I1", "/well")
    assert caught.value.message == "'plate_1' has no well 'I1'"
    assert caught.value.hint == "wells of plate_1: A1–H12 (96)"
    with pytest.raises(UnknownResource, match="no labware named 'tips_300ul'"):
        names.resolve("tips_300ul:A1")
    with pytest.raises(UnknownResource, match="'cuvette' has no wells; name it alone"):
        names.resolve("cuvette:A1")
    assert np.array_equal(
        build_layout(deck.get_resource("plate_1"), "cross_section").row[:8], np.arange(8)
    )
