"""The virtual plate reader: a PyLabRobot backend with absorbance, fluorescence and luminescence
physics computed from the world's true well contents.

Modules by measurement: :mod:`.absorbance`, :mod:`.fluorescence`, :mod:`.luminescence`; shared:
:mod:`.layout` (wells, grid, path length), :mod:`.composition` (contents, ε(λ)),
:mod:`.params` (constants and hidden truth with sources), :mod:`.variation` (plate-to-plate
path spread, defect wells), :mod:`.backend` (the PLR backend).
"""

from labtools.simulators.plate_reading.backend import PhysicsPlateReaderBackend
from labtools.simulators.plate_reading.params import PlateTruth, ReaderConstants, ReaderTruth

__all__ = ["PhysicsPlateReaderBackend", "PlateTruth", "ReaderConstants", "ReaderTruth"]
