"""A transport over pyserial: real ports and every ``serial_for_url`` URL.

``/dev/ttyUSB0``, ``COM3``, ``socket://127.0.0.1:5000`` (raw TCP, e.g. to an emulator),
``loop://`` (in-process echo), ``rfc2217://…``, ``spy://…``.
"""

from __future__ import annotations

from typing import Any

import serial

from labtools.errors import InstrumentError
from labtools.transport.base import Transport

__all__ = ["SerialTransport"]


class SerialTransport(Transport):
    """Bytes over a pyserial port, given as a URL/port name or an already opened port."""

    def __init__(
        self, port: str | serial.SerialBase, *, timeout: float = 1.0, **options: Any
    ) -> None:
        """``options`` go to ``serial.serial_for_url`` (``baudrate``, ``parity``, …)."""
        if isinstance(port, serial.SerialBase):
            if options:
                raise ValueError("options only apply when the transport opens the port itself")
            self._port = port
            label = port.name or "serial"
        else:
            label = port
            try:
                self._port = serial.serial_for_url(port, timeout=timeout, **options)
            except (serial.SerialException, ValueError, OSError) as exc:
                raise InstrumentError(
                    f"cannot open {port!r}: {exc}", hint="check the port name or URL"
                ) from exc
        super().__init__(timeout=timeout, label=label)
        self._port.timeout = timeout

    @property
    def port(self) -> serial.SerialBase:
        """The pyserial port object."""
        return self._port

    def _set_timeout(self, seconds: float) -> None:
        self._port.timeout = seconds

    def _write(self, data: bytes) -> None:
        try:
            self._port.write(data)
            self._port.flush()
        except (serial.SerialException, OSError) as exc:
            raise InstrumentError(f"{self.label}: write failed: {exc}") from exc

    def _waiting(self) -> int:
        """Bytes already received (every concrete pyserial port has ``in_waiting``; the
        ``SerialBase`` it is typed as does not declare it)."""
        return int(getattr(self._port, "in_waiting", 0))

    def _read(self, size: int) -> bytes:
        try:
            data = self._port.read(1)
            while data and len(data) < size and (waiting := self._waiting()):
                more = self._port.read(min(size - len(data), waiting))
                if not more:
                    break
                data += more
            return data
        except (serial.SerialException, OSError) as exc:
            raise InstrumentError(f"{self.label}: read failed: {exc}") from exc

    def _read_exactly(self, size: int) -> bytes:
        # pyserial's read(size) waits for all of it within one timeout
        try:
            return self._port.read(size)
        except (serial.SerialException, OSError) as exc:
            raise InstrumentError(f"{self.label}: read failed: {exc}") from exc

    def _discard_input(self) -> int:
        dropped = 0
        try:
            saved = self._port.timeout
            self._port.timeout = 0
            try:
                while chunk := self._port.read(65536):
                    dropped += len(chunk)
            finally:
                self._port.timeout = saved
        except (serial.SerialException, OSError) as exc:
            raise InstrumentError(f"{self.label}: flush failed: {exc}") from exc
        return dropped

    def _close(self) -> None:
        self._port.close()
