"""Ocean spectrometers over the Ocean Binary Protocol (OBP), written from the published
protocol: facade → device models → commands → framing → transport; and over USB through
python-seabreeze (:class:`SeaBreezeSpectrometer`, the ``ocean`` extra, imported on first use)."""

from labtools.drivers.ocean.link import OBPError, OBPLink
from labtools.drivers.ocean.models import MODELS, DeviceModel, get_model
from labtools.drivers.ocean.protocol import Checksum, Flag, OBPMessage
from labtools.drivers.ocean.spectrometer import OBPSpectrometer
from labtools.drivers.ocean.usb import SeaBreezeSpectrometer

__all__ = [
    "MODELS",
    "Checksum",
    "DeviceModel",
    "Flag",
    "OBPError",
    "OBPLink",
    "OBPMessage",
    "OBPSpectrometer",
    "SeaBreezeSpectrometer",
    "get_model",
]
