"""An emulated Ocean spectrometer: OBP device emulator, CCD physics, TCP server, and the
virtual lab's spectrometer (the real OBP driver over an in-process emulator)."""

from simulators.spectrometer.emulator import OBPEmulator, OBPSession
from simulators.spectrometer.server import OBPSocketServer
from simulators.spectrometer.virtual import virtual_spectrometer

__all__ = ["OBPEmulator", "OBPSession", "OBPSocketServer", "virtual_spectrometer"]
