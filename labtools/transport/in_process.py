"""A transport that hands bytes to a device emulator in the same process.

The emulator answers synchronously: whatever it replies is buffered at once, so a read with
nothing buffered times out immediately (nothing will ever arrive) and no call waits on the clock.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from labtools.transport.base import Transport

__all__ = ["ByteDevice", "InProcessTransport"]


@runtime_checkable
class ByteDevice(Protocol):
    """An emulated instrument: takes the bytes the host wrote, returns the bytes it sends back."""

    def feed(self, data: bytes) -> bytes:
        """Process ``data`` (possibly part of a message) and return the reply bytes (maybe
        ``b""``)."""
        ...


class InProcessTransport(Transport):
    """Bytes to and from a :class:`ByteDevice`, without threads or sockets."""

    blocking = False

    def __init__(self, device: ByteDevice, *, timeout: float = 1.0, label: str = "") -> None:
        if not isinstance(device, ByteDevice):
            raise TypeError(f"{type(device).__name__} has no feed(bytes) -> bytes")
        super().__init__(timeout=timeout, label=label or f"in-process:{type(device).__name__}")
        self.device = device
        self._pending = bytearray()

    def _write(self, data: bytes) -> None:
        self._pending += self.device.feed(data)

    def _read(self, size: int) -> bytes:
        out = bytes(self._pending[:size])
        del self._pending[:size]
        return out

    def _discard_input(self) -> int:
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

    def _close(self) -> None:
        self._pending.clear()
