"""The instrument interfaces: each declares its tools once."""

from labtools.instruments.balance import Balance, BalanceLimits
from labtools.instruments.liquid_handler import LiquidHandler, LiquidHandlerLimits, TipType
from labtools.instruments.plate_reader import PlateReader, PlateReaderLimits
from labtools.instruments.spectrometer import Spectrometer, SpectrometerLimits

__all__ = [
    "Balance",
    "BalanceLimits",
    "LiquidHandler",
    "LiquidHandlerLimits",
    "PlateReader",
    "PlateReaderLimits",
    "Spectrometer",
    "SpectrometerLimits",
    "TipType",
]
