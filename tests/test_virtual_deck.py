"""The virtual deck: layout, independent copies of the template, stocks believed from labels."""

from __future__ import annotations

import pytest
from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.resources import Container, Plate, TipRack

from labtools.drivers.pylabrobot.deck_view import DeckView
from labtools.simulators.deck import _template, virtual_deck
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.world import World

STOCK = {
    "well": "reservoir:A3",
    "species": "tartrazine",
    "concentration_uM": 200,
    "volume_ul": 12000,
    "label": "tartrazine 200 µM",
}


def test_layout_has_what_the_tools_name() -> None:
    vd = virtual_deck(World(0), PlateReaderChatterboxBackend())
    deck = vd.deck
    for name, kind in (
        ("tips_300ul", TipRack),
        ("tips_1000ul", TipRack),
        ("reservoir", Plate),
        ("plate_1", Plate),
        ("plate_2", Plate),
        ("plate_384", Plate),
        ("cuvette", Container),
        ("reader", PlateReader),
    ):
        assert isinstance(deck.get_resource(name), kind), name
    assert deck.get_resource("plate_384").num_items == 384
    assert deck.get_resource("reservoir").num_items == 12
    tip = deck.get_resource("tips_300ul").get_item(0).get_tip()
    assert (tip.nominal_volume, tip.maximal_volume) == (300, 400)
    cuvette = deck.get_resource("cuvette")
    assert (cuvette.get_size_x(), cuvette.get_size_y(), cuvette.max_volume) == (10, 10, 3500)
    assert cuvette.compute_height_from_volume(1000) == pytest.approx(10.0)
    assert vd.reader.parent is deck and not vd.reader.children
    assert deck.get_trash_area().name == "trash"
    assert DeckView(deck).free_sites() == [
        "plate_carrier-4",
        "spare_carrier-0",
        "spare_carrier-1",
        "spare_carrier-2",
        "spare_carrier-3",
        "spare_carrier-4",
        "reader",
    ]


def test_reader_uses_the_given_backend() -> None:
    backend = PlateReaderChatterboxBackend()
    vd = virtual_deck(World(0), backend)
    assert vd.reader is vd.deck.get_resource("reader")
    assert vd.reader.backend is backend
    assert vd.reader.parent is vd.deck


def test_copies_are_independent_of_each_other_and_of_the_template() -> None:
    first = virtual_deck(World(0, stocks=[STOCK]), None)  # type: ignore[arg-type]
    second = virtual_deck(World(1), None)  # type: ignore[arg-type]
    well = first.deck.get_resource("reservoir").get_item("A3")
    assert well.tracker.volume == 12000
    assert second.deck.get_resource("reservoir").get_item("A3").tracker.volume == 0
    assert _template().copy().get_resource("reservoir").get_item("A3").tracker.volume == 0
    first.deck.get_resource("tips_300ul").get_item(0).tracker.remove_tip(commit=True)
    assert second.deck.get_resource("tips_300ul").get_item(0).has_tip()
    assert first.deck is not second.deck
    # every resource and tracker is a copy of its own; only PLR's volume ↔ height functions
    # (immutable closures) are shared, as copy.deepcopy shares functions
    ours = {id(r) for r in first.deck.get_all_resources()}
    assert not ours & {id(r) for r in second.deck.get_all_resources()}
    twin = second.deck.get_resource("reservoir").get_item("A3")
    assert well.tracker is not twin.tracker and well.tracker._callback.__self__ is well
    assert well.compute_height_from_volume(5000) == twin.compute_height_from_volume(5000)


def test_stocks_are_believed_at_their_labelled_volumes() -> None:
    world = World(
        3,
        stocks=[STOCK],
        unknowns=[
            {
                "well": "plate_1:A1",
                "volume_ul": 200,
                "label": "sample",
                "species": {"tartrazine": [10, 50]},
            }
        ],
    )
    deck = virtual_deck(world, None).deck  # type: ignore[arg-type]
    assert deck.get_resource("reservoir").get_item("A3").tracker.volume == 12000
    assert deck.get_resource("plate_1").get_item("A1").tracker.volume == 200
    assert deck.get_resource("plate_1").get_item("A2").tracker.volume == 0


@pytest.mark.parametrize(
    ("well", "volume", "message"),
    [
        ("shelf:A1", 100, "not on the virtual deck"),
        ("plate_1:Z1", 100, "not on the virtual deck"),
        ("reservoir:A1", 20000, "exceeds"),
    ],
)
def test_stocks_that_do_not_fit_the_deck_are_refused(
    well: str, volume: float, message: str
) -> None:
    world = World(0, stocks=[{**STOCK, "well": well, "volume_ul": volume}])
    with pytest.raises(ValueError, match=message):
        virtual_deck(world, None)  # type: ignore[arg-type]


def test_adapter_and_world_name_every_container_alike() -> None:
    """The backend's world names equal the adapter's tool names for every container."""
    world = World(0)
    deck = virtual_deck(world, None).deck  # type: ignore[arg-type]
    view, backend = DeckView(deck), PhysicsLiquidHandlerBackend(world)
    names = []
    for labware in view.labware:
        if isinstance(labware, Plate):
            names += [f"{labware.name}:{w.get_identifier()}" for w in labware.get_all_items()]
        else:
            names.append(labware.name)
    assert len(names) == 12 + 96 + 96 + 384 + 1
    for name in names:
        container, ref = view.container(name, "/well")
        assert ref == name == backend._ref(container)


def test_a_plate_may_start_in_the_reader() -> None:
    vd = virtual_deck(World(0), PlateReaderChatterboxBackend(), in_reader="plate_2")
    assert [c.name for c in vd.reader.children] == ["plate_2"]
    assert _template().copy().get_resource("plate_2").parent.name != "reader"  # template intact
    fresh = virtual_deck(World(0), PlateReaderChatterboxBackend())
    assert fresh.reader.children == []


def test_in_reader_must_name_a_plate_of_the_deck() -> None:
    from labtools.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        virtual_deck(World(0), PlateReaderChatterboxBackend(), in_reader="tips_300ul")
    assert str(caught.value) == (
        "in_reader: 'tips_300ul' is not a plate on the deck; "
        "plates: plate_1, plate_2, plate_384, reservoir"
    )
