"""A transport over a pyvisa resource (imported lazily: pyvisa costs ~125 ms to import).

Raw bytes only: terminations are switched off, so binary protocols pass unchanged. Resources such
as ``TCPIP::127.0.0.1::5000::SOCKET`` with the ``@py`` backend (pyvisa-py) reach a TCP device;
``ASRL…::INSTR`` a serial one.
"""

from __future__ import annotations

from typing import Any

from labtools.errors import InstrumentError
from labtools.transport.base import Transport

__all__ = ["VisaTransport"]


class VisaTransport(Transport):
    """Bytes over a pyvisa message-based resource.

    ``resource`` is a VISA resource name (opened with ``visa_library``, ``"@py"`` by default) or
    an already opened resource. A read that times out loses any partial data (pyvisa discards
    it), so a timeout here leaves the stream in an unknown state; drivers resynchronise.
    """

    def __init__(
        self,
        resource: str | Any,
        *,
        timeout: float = 1.0,
        visa_library: str = "@py",
        **options: Any,
    ) -> None:
        import pyvisa

        self._errors = (pyvisa.errors.VisaIOError, pyvisa.errors.InvalidSession, OSError)
        self._timeout_code = pyvisa.constants.StatusCode.error_timeout
        self._manager: Any = None
        if isinstance(resource, str):
            label = resource
            try:
                self._manager = pyvisa.ResourceManager(visa_library)
                self._resource = self._manager.open_resource(resource, **options)
            except (*self._errors, ValueError) as exc:
                if self._manager is not None:
                    self._manager.close()
                raise InstrumentError(
                    f"cannot open {resource!r}: {exc}",
                    hint="check the VISA resource name and backend",
                ) from exc
        else:
            if options:
                raise ValueError("options only apply when the transport opens the resource")
            self._resource = resource
            label = str(getattr(resource, "resource_name", "visa"))
        super().__init__(timeout=timeout, label=label)
        self._resource.read_termination = None
        self._resource.write_termination = None
        self._resource.timeout = timeout * 1000.0

    @property
    def resource(self) -> Any:
        """The pyvisa resource."""
        return self._resource

    def _set_timeout(self, seconds: float) -> None:
        self._resource.timeout = seconds * 1000.0

    def _write(self, data: bytes) -> None:
        try:
            self._resource.write_raw(data)
        except self._errors as exc:
            raise InstrumentError(f"{self.label}: write failed: {exc}") from exc

    def _read(self, size: int) -> bytes:
        return self._read_exactly(1)

    def _read_exactly(self, size: int) -> bytes:
        try:
            return bytes(self._resource.read_bytes(size))
        except self._errors as exc:
            if getattr(exc, "error_code", None) == self._timeout_code:
                return b""
            raise InstrumentError(f"{self.label}: read failed: {exc}") from exc

    def _discard_input(self) -> int:
        try:
            self._resource.clear()
        except self._errors as exc:
            raise InstrumentError(f"{self.label}: clear failed: {exc}") from exc
        return 0

    def _close(self) -> None:
        try:
            self._resource.close()
        finally:
            if self._manager is not None:
                self._manager.close()
