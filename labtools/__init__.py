"""labtools: unit-checked JSON-schema tools for laboratory instruments, real or virtual.

Attributes load on first use, so ``import labtools`` stays cheap for command-line tools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Lab": "labtools.lab",
    "ToolResult": "labtools.result",
    "ToolError": "labtools.errors",
    "ERROR_CODES": "labtools.errors",
    "Instrument": "labtools.instrument",
    "LiquidHandler": "labtools.instruments.liquid_handler",
    "PlateReader": "labtools.instruments.plate_reader",
    "Spectrometer": "labtools.instruments.spectrometer",
    "Journal": "labtools.journal",
    "Arg": "labtools.tool",
    "tool": "labtools.tool",
    "Quantity": "labtools.units",
    "ureg": "labtools.units",
}

__all__ = [
    "ERROR_CODES",
    "Arg",
    "Instrument",
    "Journal",
    "Lab",
    "LiquidHandler",
    "PlateReader",
    "Quantity",
    "Spectrometer",
    "ToolError",
    "ToolResult",
    "tool",
    "ureg",
]

if TYPE_CHECKING:
    from labtools.errors import ERROR_CODES, ToolError
    from labtools.instrument import Instrument
    from labtools.instruments.liquid_handler import LiquidHandler
    from labtools.instruments.plate_reader import PlateReader
    from labtools.instruments.spectrometer import Spectrometer
    from labtools.journal import Journal
    from labtools.lab import Lab
    from labtools.result import ToolResult
    from labtools.tool import Arg, tool
    from labtools.units import Quantity, ureg


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'labtools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
