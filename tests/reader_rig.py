"""A small plate-reader setup for tests: a world, the physics backend in PLR's front end, plates
from PLR's labware factories, and the labtools driver in a lab."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pylabrobot.plate_reading import PlateReader
from pylabrobot.resources import Coordinate, Deck, Plate, cor_96_wellplate_360uL_Fb

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.simulators.plate_reading import PhysicsPlateReaderBackend
from labtools.simulators.profile import Profile
from labtools.simulators.world import Mixture, World
from labtools.units import qty

#: Corning 96 flat well diameter, mm [V: Opentrons labware JSON; physics reference §3]
CORNING_96_DIAMETER_MM = 6.86


def corning_path_cm(volume_ul: float) -> float:
    """Path length of ``volume_ul`` in a Corning 96 flat well as a cylinder (cm)."""
    return volume_ul / (math.pi * (CORNING_96_DIAMETER_MM / 2) ** 2) / 10.0


def plr_path_cm(volume_ul: float) -> float:
    """Liquid height of ``volume_ul`` in PLR's ``cor_96_wellplate_360uL_Fb`` well (cm), from
    PLR's own height–volume table (the simulator's default path model)."""
    well = cor_96_wellplate_360uL_Fb(name="reference").get_item("A1")
    return float(well.compute_height_from_volume(volume_ul)) / 10.0


nm = partial(qty, unit="nanometer")


@dataclass
class Rig:
    world: World
    backend: PhysicsPlateReaderBackend
    reader: PlateReader
    plate: Plate

    def fill(self, well: str, volume_ul: float, **molar: float) -> None:
        """Put ``volume_ul`` of a solution (species=molar) in a well of the plate."""
        self.world.fill(f"{self.plate.name}:{well}", Mixture.solution(volume_ul, molar))

    def lab(self) -> Lab:
        return Lab([PLRPlateReader("reader", self.reader)], clock=self.world.clock)


def rig(
    seed: int = 0,
    factory: Callable[..., Plate] = cor_96_wellplate_360uL_Fb,
    plate_name: str = "plate_1",
    profile: str | Profile | None = None,
) -> Rig:
    """A world on ``profile`` (the default ``published``) and its reader with one plate."""
    world = World(seed, profile=profile)
    backend = PhysicsPlateReaderBackend(world)
    reader = PlateReader(name="reader", size_x=130.0, size_y=90.0, size_z=30.0, backend=backend)
    plate = factory(name=plate_name)
    reader.assign_child_resource(plate)
    return Rig(world, backend, reader, plate)


def deck_rig(seed: int = 0) -> tuple[Rig, Plate]:
    """The reader and a second plate (``plate_2``) on a bare deck; ``plate_1`` is in the
    reader."""
    setup = rig(seed)
    deck = Deck(size_x=800.0, size_y=400.0, size_z=100.0)
    deck.assign_child_resource(setup.reader, location=Coordinate(500.0, 100.0, 0.0))
    outside = cor_96_wellplate_360uL_Fb(name="plate_2")
    deck.assign_child_resource(outside, location=Coordinate(100.0, 100.0, 0.0))
    return setup, outside


def read(lab: Lab, wavelength: float, wells: list[str], plate: str = "plate_1") -> dict:
    """Absorbance values through ``lab.call``; fails the test on an error."""
    result = lab.call(
        "reader_read_absorbance", {"plate": plate, "wavelength": nm(wavelength), "wells": wells}
    )
    if not result.ok:
        raise AssertionError(result.error)
    return result.data["values"]
