"""The transport interface: bytes to and from one instrument.

Public methods log (at DEBUG) and record traffic, then call the ``_write`` / ``_read`` an adapter
implements (template method). Errors are the typed tool errors: a read that gets nothing within
``timeout`` raises :class:`~labtools.errors.Timeout`, a broken link
:class:`~labtools.errors.InstrumentError`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from labtools.errors import Timeout
from labtools.transport.recording import Recording

T = TypeVar("T")

__all__ = ["Transport"]

log = logging.getLogger("labtools.transport")

#: bytes shown per logged transfer (spectra are kilobytes)
_LOG_BYTES = 64


def _show(data: bytes) -> str:
    text = data[:_LOG_BYTES].hex(" ")
    return f"{text} … ({len(data)} bytes)" if len(data) > _LOG_BYTES else text


class Transport(ABC):
    """A byte link to one instrument, with a read ``timeout`` in seconds.

    Adapters implement :meth:`_write`, :meth:`_read` (up to ``size`` bytes, ``b""`` when nothing
    arrived within the timeout) and :meth:`_close`; they may override :meth:`_read_exactly` and
    :meth:`_discard_input` with something faster than the defaults.
    """

    #: whether calls block the calling thread (drivers then run them off the event loop)
    blocking: ClassVar[bool] = True

    def __init__(self, *, timeout: float = 1.0, label: str = "") -> None:
        self._timeout = _check_timeout(timeout)
        self._closed = False
        self.label = label or type(self).__name__
        self.recording: Recording | None = None

    async def off_loop(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``, an exchange over this link: on a worker thread where calls
        block (:attr:`blocking`), else inline (an in-process device answers at once)."""
        if self.blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    # -- configuration -------------------------------------------------------------------------
    @property
    def timeout(self) -> float:
        """Seconds a read waits for its bytes (> 0)."""
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        seconds = _check_timeout(seconds)
        if seconds != self._timeout:
            self._timeout = seconds
            self._set_timeout(seconds)

    def record(self, recording: Recording | None = None) -> Recording:
        """Record all traffic from now on into ``recording`` (a new one by default)."""
        self.recording = recording if recording is not None else Recording()
        return self.recording

    @property
    def closed(self) -> bool:
        return self._closed

    # -- traffic -------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Send ``data`` to the instrument."""
        data = bytes(data)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s << %s", self.label, _show(data))
        if self.recording is not None:
            self.recording.add("write", data)
        self._write(data)

    def read(self, size: int) -> bytes:
        """Between 1 and ``size`` bytes; raises :class:`Timeout` if none arrive in time."""
        _check_size(size)
        data = self._read(size)
        self._received(data)
        if not data:
            raise Timeout(f"{self.label}: no reply within {self._timeout:g} s")
        return data

    def read_exactly(self, size: int) -> bytes:
        """Exactly ``size`` bytes within the timeout, else :class:`Timeout`."""
        _check_size(size)
        data = self._read_exactly(size)
        self._received(data)
        if len(data) < size:
            raise Timeout(f"{self.label}: {len(data)} of {size} bytes within {self._timeout:g} s")
        return data

    def read_until(self, terminator: bytes, max_size: int = 65536) -> bytes:
        """Bytes up to and including ``terminator`` (at most ``max_size``), else
        :class:`Timeout`."""
        if not terminator:
            raise ValueError("the terminator must not be empty")
        _check_size(max_size)
        deadline = time.monotonic() + self._timeout
        out = bytearray()
        while not out.endswith(terminator):
            if len(out) >= max_size or time.monotonic() > deadline:
                self._received(bytes(out))
                raise Timeout(
                    f"{self.label}: no {terminator!r} within {self._timeout:g} s "
                    f"({len(out)} bytes read)"
                )
            out += self._read(1)
        data = bytes(out)
        self._received(data)
        return data

    def query(self, data: bytes, size: int) -> bytes:
        """Write ``data`` and read exactly ``size`` bytes of reply."""
        self.write(data)
        return self.read_exactly(size)

    def discard_input(self) -> int:
        """Drop whatever the instrument sent that was not read; returns the byte count."""
        dropped = self._discard_input()
        if dropped:
            log.debug("%s: discarded %d unread bytes", self.label, dropped)
        return dropped

    def close(self) -> None:
        """Close the link (idempotent)."""
        if not self._closed:
            self._closed = True
            log.debug("%s: close", self.label)
            self._close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"

    def _received(self, data: bytes) -> None:
        if not data:
            return
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s >> %s", self.label, _show(data))
        if self.recording is not None:
            self.recording.add("read", data)

    # -- adapter hooks -------------------------------------------------------------------------
    @abstractmethod
    def _write(self, data: bytes) -> None:
        """Send all of ``data``."""

    @abstractmethod
    def _read(self, size: int) -> bytes:
        """Up to ``size`` bytes; ``b""`` when nothing arrived within the timeout."""

    @abstractmethod
    def _close(self) -> None:
        """Release the link."""

    def _read_exactly(self, size: int) -> bytes:
        """``size`` bytes, or fewer when the timeout ran out first."""
        deadline = time.monotonic() + self._timeout
        out = bytearray()
        while len(out) < size:
            chunk = self._read(size - len(out))
            out += chunk
            if not chunk or time.monotonic() > deadline:
                break
        return bytes(out)

    def _discard_input(self) -> int:
        return 0

    def _set_timeout(self, seconds: float) -> None:
        """Pass a new timeout to the underlying link (if it keeps its own)."""


def _check_timeout(seconds: float) -> float:
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not (math.isfinite(seconds) and seconds > 0)
    ):
        raise ValueError(f"a timeout must be a positive number of seconds, not {seconds!r}")
    return float(seconds)


def _check_size(size: int) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"a read size must be a positive integer, not {size!r}")
