"""A plate reader on the bench, with no liquid handler's deck: a PLR ``PlateReader`` front end
holding the plate a person puts in.

Configuration (TOML)::

    [shared.clariostar]
    class = "labtools.drivers.pylabrobot.standalone:plate_reader"
    backend = { class = "pylabrobot.plate_reading:CLARIOstarBackend" }
    plate = { class = "pylabrobot.resources:cor_96_wellplate_360uL_Fb", name = "plate_1" }

    [instruments.reader]
    class = "labtools.drivers.pylabrobot.plate_reader:PLRPlateReader"
    reader = "@clariostar"

Reads name the plate (``plate_1``); to read another plate of the same type, put it in the
reader in its place. The constructor does no I/O.
"""

from __future__ import annotations

from labtools.config import ConfigError
from labtools.drivers.pylabrobot.plr import Plate, PlateReader, PlateReaderBackend

__all__ = ["plate_reader"]

#: the front end's footprint (mm): a plate reader's plate carrier takes an SBS plate
_SIZE_MM = (130.0, 100.0, 50.0)


def plate_reader(backend: PlateReaderBackend, plate: Plate, *, name: str = "reader") -> PlateReader:
    """A PLR ``PlateReader`` named ``name`` on ``backend``, holding ``plate``."""
    if not isinstance(backend, PlateReaderBackend):
        raise ConfigError(
            f"needs a PyLabRobot PlateReaderBackend, not a {type(backend).__name__}",
            key="backend",
        )
    if not isinstance(plate, Plate):
        raise ConfigError(
            f"needs a PyLabRobot Plate (a table with a 'class'), not a {type(plate).__name__}",
            key="plate",
        )
    if plate.name == name:
        raise ConfigError(f"the plate and the reader are both named {name!r}", key="plate")
    size_x, size_y, size_z = _SIZE_MM
    reader = PlateReader(name=name, size_x=size_x, size_y=size_y, size_z=size_z, backend=backend)
    reader.assign_child_resource(plate)
    return reader
