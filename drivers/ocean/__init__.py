"""Ocean spectrometers over the Ocean Binary Protocol (OBP), written from the published
protocol: facade → device models → commands → framing → transport."""

from drivers.ocean.link import OBPError, OBPLink
from drivers.ocean.models import MODELS, DeviceModel, get_model
from drivers.ocean.protocol import Checksum, Flag, OBPMessage
from drivers.ocean.spectrometer import OBPSpectrometer

__all__ = [
    "MODELS",
    "Checksum",
    "DeviceModel",
    "Flag",
    "OBPError",
    "OBPLink",
    "OBPMessage",
    "OBPSpectrometer",
    "get_model",
]
