"""Byte transports to instruments: one small interface, adapters over pyserial, pyvisa and
in-process emulators, traffic recording, and :func:`open_transport` for URIs.

Test helpers (the strict ``expected_protocol`` fixture) live in :mod:`labtools.transport.testing`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from labtools.transport.base import Transport
from labtools.transport.in_process import ByteDevice, InProcessTransport
from labtools.transport.recording import Recording
from labtools.transport.uri import check_transport, make_transport, open_transport

__all__ = [
    "ByteDevice",
    "InProcessTransport",
    "Recording",
    "SerialTransport",
    "Transport",
    "VisaTransport",
    "check_transport",
    "make_transport",
    "open_transport",
]

if TYPE_CHECKING:
    from labtools.transport.serial_port import SerialTransport
    from labtools.transport.visa import VisaTransport

# pyserial and (slower) pyvisa load only when their adapter is first used
_LAZY = {
    "SerialTransport": "labtools.transport.serial_port",
    "VisaTransport": "labtools.transport.visa",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labtools.transport' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
