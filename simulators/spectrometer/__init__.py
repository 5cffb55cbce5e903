"""An emulated Ocean spectrometer: OBP device emulator, CCD physics, TCP server, and the
virtual lab's spectrometer (the real OBP driver over an in-process emulator)."""

from labtools.simulators.spectrometer.emulator import OBPEmulator, OBPSession
from labtools.simulators.spectrometer.server import OBPSocketServer
from labtools.simulators.spectrometer.virtual import virtual_spectrometer

__all__ = ["OBPEmulator", "OBPSession", "OBPSocketServer", "virtual_spectrometer"]
