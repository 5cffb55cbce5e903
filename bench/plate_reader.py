"""The virtual plate reader's cost beside PLR's chatterbox, measured in one run.

A 96-well absorbance read through PLR's ``PlateReader`` front end with the physics backend,
against the same read with ``PlateReaderChatterboxBackend`` (its printing sent to a null
stream). Goal: physics ≤ 0.1× chatterbox. Also the same read through ``lab.call``.
Run: ``python -m bench.plate_reader``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io

from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.plate_reading.backend import PlateReaderBackend
from pylabrobot.resources import Greiner_384_wellplate_28ul_Fb, Plate, cor_96_wellplate_360uL_Fb

from bench.timing import median_us, restore_sigint, row
from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.simulators.plate_reading import PhysicsPlateReaderBackend
from labtools.simulators.world import Mixture, World

WAVELENGTH = {"value": 450, "unit": "nanometer"}


def _reader(backend: PlateReaderBackend, plate: Plate) -> PlateReader:
    reader = PlateReader(name="reader", size_x=130.0, size_y=90.0, size_z=30.0, backend=backend)
    reader.assign_child_resource(plate)
    return reader


def _filled(world: World, plate: Plate) -> Plate:
    """Every well: 200 µL (or 20 µL in 384) of two dyes in pH 7 buffer."""
    volume = 200.0 if plate.num_items == 96 else 20.0
    for i, well in enumerate(plate.get_all_items()):
        ident = plate.get_child_identifier(well)
        world.fill(
            f"{plate.name}:{ident}",
            Mixture.solution(
                volume, {"tartrazine": 1e-6 * (i + 1), "allura_red": 5e-6, "buffer_ph7": 0.1}
            ),
        )
    return plate


def _ratio(label: str, value: float) -> str:
    return f"    {label:<56} {value:>10.3f} x"


def main() -> None:
    restore_sigint()
    loop = asyncio.new_event_loop()
    world = World(0)
    physics = _reader(
        PhysicsPlateReaderBackend(world), _filled(world, cor_96_wellplate_360uL_Fb(name="plate_1"))
    )
    chatter = _reader(PlateReaderChatterboxBackend(), cor_96_wellplate_360uL_Fb(name="plate_c"))
    physics_384 = _reader(
        PhysicsPlateReaderBackend(world),
        _filled(world, Greiner_384_wellplate_28ul_Fb(name="plate_384")),
    )
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        for reader in (physics, chatter, physics_384):
            loop.run_until_complete(reader.setup())

    def read(reader: PlateReader) -> object:
        return loop.run_until_complete(reader.read_absorbance(450, use_new_return_type=True))

    def chatty() -> object:
        sink.seek(0)
        sink.truncate()
        with contextlib.redirect_stdout(sink):
            return read(chatter)

    t_chatter = median_us(chatty, repeat=7, number=30, warmup=5)
    t_physics = median_us(lambda: read(physics), repeat=7, number=200)
    t_384 = median_us(lambda: read(physics_384), repeat=7, number=100)

    lab = Lab([PLRPlateReader("reader", physics)], clock=world.clock)
    args = {"plate": "plate_1", "wavelength": WAVELENGTH, "wells": []}
    first = lab.call("reader_read_absorbance", args)
    if not first.ok:
        raise SystemExit(f"lab.call failed: {first.error}")
    t_lab = median_us(lambda: lab.call("reader_read_absorbance", args), repeat=7, number=200)
    lab.close()
    loop.close()

    print("plate reader: 96-well absorbance read at 450 nm (medians, one run)")
    print(row("PLR PlateReader + PlateReaderChatterboxBackend (stdout off)", t_chatter))
    print(row("PLR PlateReader + PhysicsPlateReaderBackend", t_physics))
    print(_ratio("ratio physics / chatterbox (goal <= 0.1)", t_physics / t_chatter))
    print(row("lab.call('reader_read_absorbance') → PLRPlateReader → physics", t_lab))
    print(_ratio("ratio lab.call / chatterbox", t_lab / t_chatter))
    print(row("PLR PlateReader + physics, 384-well plate", t_384))


if __name__ == "__main__":
    main()
