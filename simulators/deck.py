"""The virtual deck: a Hamilton STARLet deck in PyLabRobot, with the world's stocks on it.

Layout (all PLR factories, offline):

- rails 1, ``tip_carrier``: Hamilton CO-RE tip racks of 96 — ``tips_300ul`` (300 µL),
  ``tips_1000ul`` (1000 µL), ``tips_10ul`` (10 µL low-volume tips) and ``tips_50ul`` (50 µL);
  site 4 free
- rails 7, ``plate_carrier``: ``reservoir`` (NEST 12-column, 15 mL a column), ``plate_1`` and
  ``plate_2`` (Corning 96 flat, 360 µL), ``plate_384`` (Bio-Rad 384 V-bottom), site 4 free
- rails 13, ``spare_carrier``: five free plate sites ``spare_carrier-0`` … ``-4``
- ``cuvette``: a 10 mm × 10 mm cuvette (3.5 mL) built from PLR primitives, in ``cuvette_holder``
- ``reader``: a PLR ``PlateReader`` on the deck, so ``move_plate(plate, "reader")`` works
- ``trash``: the STARLet's own
- with ``balance=True``: ``weighing_vessel``, a 20 mm glass weighing vessel (10 mL) on the pan
  of a balance (the site ``balance``), for gravimetric checks; the liquid handler names it
  ``"weighing_vessel"`` as it names the cuvette

Building this deck takes ~0.35 s (PLR checks names and heights over the whole tree on every
assignment), so one template is built per process, pickled once, and each call unpickles a copy
(:class:`_Template`; ~10 ms, a fifth of ``copy.deepcopy``, the collector paused meanwhile),
then gives the copy its reader backend and the world's stock volumes.
"""

from __future__ import annotations

import functools
import io
import math
import pickle
import types
from dataclasses import dataclass
from typing import Any

from labtools.collector import paused
from labtools.config import ConfigError
from labtools.drivers.pylabrobot.internals import skip_safe_z_check
from labtools.drivers.pylabrobot.naming import ContainerNames
from labtools.drivers.pylabrobot.plr import (
    PLT_CAR_L5AC_A00,
    TIP_CAR_480_A00,
    Container,
    Coordinate,
    Deck,
    Plate,
    PlateReader,
    PlateReaderBackend,
    ResourceHolder,
    STARLetDeck,
    biorad_384_wellplate_50uL_Vb,
    cor_96_wellplate_360uL_Fb,
    hamilton_96_tiprack_10uL,
    hamilton_96_tiprack_50uL,
    hamilton_96_tiprack_300uL,
    hamilton_96_tiprack_1000uL,
    nest_12_troughplate_15000uL_Vb,
)
from labtools.errors import UnknownResource, brief
from labtools.simulators.world import World

__all__ = ["VirtualDeck", "build_deck", "virtual_deck"]

#: a standard 10 mm macro cuvette: inner 10 × 10 mm, 45 mm tall, filled to 35 mm (3.5 mL),
#: 1.25 mm walls and bottom [L: common 12.5 × 12.5 × 45 mm cuvette dimensions]
CUVETTE_INNER_MM = 10.0
CUVETTE_HEIGHT_MM = 45.0
CUVETTE_WALL_MM = 1.25
CUVETTE_MAX_UL = 3500.0
#: the weighing vessel: a glass cylinder, inner diameter 20 mm, 40 mm deep, 1.5 mm walls, filled
#: to at most 10 mL (32 mm) [A: a small weighing vessel for pipette checks]; on a 60 × 60 mm
#: pan at x = 700 mm, right of the reader and clear of the waste block [A]
VESSEL_DIAMETER_MM = 20.0
VESSEL_DEPTH_MM = 40.0
VESSEL_WALL_MM = 1.5
VESSEL_MAX_UL = 10_000.0
BALANCE_PAN_MM = 60.0
BALANCE_AT = (700.0, 100.0, 100.0)


@dataclass
class VirtualDeck:
    """The PLR deck and the PLR plate reader placed on it; with its world, the colour of every
    filled container (the live view's ``well_colours`` hook, :mod:`..well_colours`)."""

    deck: Deck
    reader: PlateReader
    world: World | None = None

    def well_colours(self) -> dict[str, str]:
        """Container key → ``"#rrggbb"``: each filled container's colour in daylight."""
        if self.world is None:
            return {}
        colours = self.__dict__.get("_colours")
        if colours is None:
            from labtools.simulators.well_colours import WellColours

            colours = self.__dict__["_colours"] = WellColours(self.deck, self.world)
        return colours.well_colours()


def virtual_deck(
    world: World,
    reader_backend: PlateReaderBackend | None = None,
    *,
    in_reader: str | None = None,
    balance: bool = False,
) -> VirtualDeck:
    """A fresh copy of the virtual deck, its reader driven by ``reader_backend`` (``None``: a
    reader that cannot read, for labs that only pipette), and PLR's volume trackers set to the
    world's labelled containers (the labels' nominal volumes). ``in_reader``: a plate that
    starts in the reader instead of on its carrier. ``balance``: put the weighing vessel on a
    balance's pan (the site ``balance``, beside the reader; the rest of the deck as without).

    A stock that is not on the deck or does not fit its container, or an ``in_reader`` that is
    not a plate of the deck, is a :class:`~labtools.config.ConfigError` (key ``world`` or
    ``in_reader``)."""
    if not isinstance(world, World):
        raise ConfigError(f"needs a World, not a {type(world).__name__}", key="world")
    if reader_backend is not None:
        _check_backend(reader_backend)
    deck = _template().copy()
    # The Hamilton deck re-checks the safe z height of a whole plate (every well's absolute
    # position) each time one is assigned: ~0.1 s per plate move, for a warning that cannot
    # fire here: the layout passed the check when the template was built, and moves only put
    # plates on sites of the same height.
    skip_safe_z_check(deck)
    reader = deck.get_resource("reader")
    reader.backend = reader_backend
    if balance:
        deck.assign_child_resource(_balance_pan(), location=Coordinate(*BALANCE_AT))
    if in_reader is not None:
        _load_reader(deck, reader, in_reader)
    _believe_stocks(deck, world)
    return VirtualDeck(deck, reader, world)


def _load_reader(deck: Deck, reader: PlateReader, name: str) -> None:
    plates = sorted(p.name for p in deck.get_all_resources() if isinstance(p, Plate))
    if name not in plates:
        raise ConfigError(
            f"{brief(name)} is not a plate on the deck; plates: {', '.join(plates)}",
            key="in_reader",
        )
    plate = deck.get_resource(name)
    plate.unassign()
    reader.assign_child_resource(plate)


class _Template:
    """A deck kept as bytes, each :meth:`copy` a new deck as ``copy.deepcopy`` would make it.

    Pickled with the functions PLR's containers build in their constructors (volume ↔ height
    closures, which pickle cannot name) left out and shared by every copy, as ``deepcopy``
    shares functions; everything else (resources, trackers, bound callbacks) is copied."""

    def __init__(self, deck: Deck) -> None:
        self._shared: list[Any] = []
        buffer = io.BytesIO()
        _Pickler(buffer, self._shared).dump(deck)
        self._bytes = buffer.getvalue()

    def copy(self) -> Deck:
        """A new deck, the collector paused meanwhile: collections started by its 23,000 new
        objects would walk every other live lab (with many alive, as in a server, four times the
        copy's own time)."""
        with paused():
            deck: Deck = _Unpickler(io.BytesIO(self._bytes), self._shared).load()
        return deck


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = shared

    def persistent_id(self, obj: Any) -> int | None:
        if isinstance(obj, types.FunctionType) and "<locals>" in obj.__qualname__:
            self._shared.append(obj)
            return len(self._shared) - 1
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, shared: list[Any]) -> None:
        super().__init__(file)
        self._shared = shared

    def persistent_load(self, pid: Any) -> Any:
        return self._shared[pid]


@functools.cache
def _template() -> _Template:
    """The deck built once per process. Never handed out: :func:`virtual_deck` copies it."""
    return _Template(build_deck())


def build_deck(reader_backend: PlateReaderBackend | None = None) -> Deck:
    """Build the virtual deck from scratch (~0.35 s); the reader's backend may be set later."""
    if reader_backend is not None:
        _check_backend(reader_backend)
    deck = STARLetDeck()
    tips = TIP_CAR_480_A00(name="tip_carrier")
    tips[0] = hamilton_96_tiprack_300uL(name="tips_300ul")
    tips[1] = hamilton_96_tiprack_1000uL(name="tips_1000ul")
    tips[2] = hamilton_96_tiprack_10uL(name="tips_10ul")
    tips[3] = hamilton_96_tiprack_50uL(name="tips_50ul")
    plates = PLT_CAR_L5AC_A00(name="plate_carrier")
    plates[0] = nest_12_troughplate_15000uL_Vb(name="reservoir")
    plates[1] = cor_96_wellplate_360uL_Fb(name="plate_1")
    plates[2] = cor_96_wellplate_360uL_Fb(name="plate_2")
    plates[3] = biorad_384_wellplate_50uL_Vb(name="plate_384")
    deck.assign_child_resource(tips, rails=1)
    deck.assign_child_resource(plates, rails=7)
    deck.assign_child_resource(PLT_CAR_L5AC_A00(name="spare_carrier"), rails=13)
    deck.assign_child_resource(_cuvette_holder(), location=Coordinate(520.0, 100.0, 100.0))
    reader = PlateReader(
        name="reader", size_x=130.0, size_y=100.0, size_z=50.0, backend=reader_backend
    )
    deck.assign_child_resource(reader, location=Coordinate(560.0, 100.0, 100.0))
    return deck


def _check_backend(reader_backend: object) -> None:
    if not isinstance(reader_backend, PlateReaderBackend):
        raise ConfigError(
            f"needs a PyLabRobot PlateReaderBackend, not a {type(reader_backend).__name__}",
            key="reader_backend",
        )


def _cuvette_holder() -> ResourceHolder:
    outer = CUVETTE_INNER_MM + 2 * CUVETTE_WALL_MM
    holder = ResourceHolder(
        name="cuvette_holder",
        size_x=outer,
        size_y=outer,
        size_z=0.0,
        child_location=Coordinate(CUVETTE_WALL_MM, CUVETTE_WALL_MM, 0.0),
    )
    area = CUVETTE_INNER_MM * CUVETTE_INNER_MM
    cuvette = Container(
        name="cuvette",
        size_x=CUVETTE_INNER_MM,
        size_y=CUVETTE_INNER_MM,
        size_z=CUVETTE_HEIGHT_MM,
        material_z_thickness=CUVETTE_WALL_MM,
        max_volume=CUVETTE_MAX_UL,
        category="cuvette",
        model="cuvette_10mm_3500uL",
        height_volume_data={0.0: 0.0, CUVETTE_HEIGHT_MM: area * CUVETTE_HEIGHT_MM},
    )
    holder.assign_child_resource(cuvette)
    return holder


def _balance_pan() -> ResourceHolder:
    """The balance's pan with the weighing vessel on it (a cylinder: volume = area × height)."""
    outer = VESSEL_DIAMETER_MM + 2 * VESSEL_WALL_MM
    offset = (BALANCE_PAN_MM - outer) / 2
    pan = ResourceHolder(
        name="balance",
        size_x=BALANCE_PAN_MM,
        size_y=BALANCE_PAN_MM,
        size_z=0.0,
        child_location=Coordinate(offset + VESSEL_WALL_MM, offset + VESSEL_WALL_MM, 0.0),
    )
    area = math.pi * (VESSEL_DIAMETER_MM / 2) ** 2
    vessel = Container(
        name="weighing_vessel",
        size_x=VESSEL_DIAMETER_MM,
        size_y=VESSEL_DIAMETER_MM,
        size_z=VESSEL_DEPTH_MM,
        material_z_thickness=VESSEL_WALL_MM,
        max_volume=VESSEL_MAX_UL,
        category="weighing_vessel",
        model="weighing_vessel_20mm_10mL",
        height_volume_data={0.0: 0.0, VESSEL_DEPTH_MM: area * VESSEL_DEPTH_MM},
    )
    pan.assign_child_resource(vessel)
    return pan


def _believe_stocks(deck: Deck, world: World) -> None:
    """Set PLR's belief (volume trackers) for every labelled container of the world."""
    names = ContainerNames(deck)
    filled = []  # all checked before any tracker is set
    for ref in world.labels:
        try:
            container, _ = names.resolve(ref)
        except UnknownResource as exc:
            raise ConfigError(
                f"the world's stock {brief(ref)} is not on the virtual deck: "
                f"{exc.message}; {exc.hint}",
                key="world",
            ) from None
        volume = world.peek(ref).volume_ul
        if volume > container.max_volume:
            raise ConfigError(
                f"the world's stock {ref}: {volume:g} µL exceeds the container's capacity of "
                f"{container.max_volume:g} µL",
                key="world",
            )
        filled.append((container, volume))
    for container, volume in filled:
        container.tracker.set_volume(volume)
