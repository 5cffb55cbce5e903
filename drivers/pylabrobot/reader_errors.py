"""Plate-reader exceptions from PyLabRobot and its backends, mapped onto labtools' error codes.

The driver checks plate, wells and wavelengths before PLR sees them; this is the net for what a
backend raises itself (a range it knows better, a read it cannot do, a firmware fault).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from labtools.drivers.pylabrobot.plr import (
    MolecularDevicesError,
    NoPlateError,
    ResourceNotFoundError,
)
from labtools.drivers.usb import LIBUSB_HINT, no_libusb
from labtools.errors import (
    InstrumentError,
    NotSupported,
    OutOfRange,
    PreconditionFailed,
    Timeout,
    ToolError,
    UnknownResource,
)

__all__ = ["MOVE_HINT", "reader_errors", "tool_error"]

MOVE_HINT = "move the plate into the reader with lh_move_plate"


def tool_error(exc: BaseException, action: str, backend: str) -> ToolError:
    """The tool error for an exception raised by PLR or the ``backend`` during ``action``."""
    if isinstance(exc, ToolError):
        return exc
    text = f"{action} failed on {backend}: {exc}"
    if isinstance(exc, NoPlateError):
        return PreconditionFailed(f"{action}: there is no plate in the reader", hint=MOVE_HINT)
    if isinstance(exc, NotImplementedError):
        return NotSupported(f"{backend} cannot do this ({action}): {exc}".rstrip(": "))
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return Timeout(text)
    if isinstance(exc, ResourceNotFoundError):
        return UnknownResource(text)
    if isinstance(exc, MolecularDevicesError):
        return InstrumentError(text)
    if no_libusb(exc):  # a ValueError, but the machine's fault, not the call's
        return InstrumentError(text, hint=LIBUSB_HINT)
    if isinstance(exc, ValueError):
        return OutOfRange(text)
    if isinstance(exc, RuntimeError) and "setup" in str(exc).lower():
        return PreconditionFailed(
            text,
            hint="the reader is not set up; the lab sets it up on first use unless it was stopped",
        )
    return InstrumentError(f"{action} failed on {backend}: {type(exc).__name__}: {exc}")


@contextmanager
def reader_errors(action: str, backend: str) -> Iterator[None]:
    """Re-raise anything raised inside as the matching :class:`ToolError`."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        raise tool_error(exc, action, backend) from exc
