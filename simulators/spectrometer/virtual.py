"""The virtual lab's spectrometer: the real OBP driver wired to an in-process emulator.

In a lab configuration::

    [instruments.spec]
    class = "labtools.simulators.spectrometer:virtual_spectrometer"
    world = "@world"
    model = "FLAME-S"          # optional
"""

from __future__ import annotations

from labtools.drivers.ocean import OBPSpectrometer
from labtools.simulators.spectrometer.emulator import OBPEmulator
from labtools.simulators.world import World
from labtools.transport import InProcessTransport

__all__ = ["virtual_spectrometer"]


def virtual_spectrometer(
    name: str,
    world: World,
    model: str = "FLAME-S",
    *,
    container: str = "cuvette",
    md5: bool | None = None,
) -> OBPSpectrometer:
    """An :class:`OBPSpectrometer` named ``name`` talking OBP bytes to an emulated ``model``
    that looks at ``container`` in ``world`` (noise from ``world.stream(name)``)."""
    emulator = OBPEmulator(world, model, name=name, container=container)
    transport = InProcessTransport(emulator.session(), label=f"{name}:emulator")
    spectrometer = OBPSpectrometer(name, transport, model, md5=md5)
    spectrometer.simulated = True
    return spectrometer
