"""An OBP conversation over a transport: send a command, read and check its reply.

Blocking (drivers run it off the event loop when the transport blocks). Every command that
returns no data asks for an acknowledgement, so a setter has been accepted — or refused with a
typed error — before the call returns. A NACK becomes :class:`OBPError` carrying the OBP error
number and its meaning; a read timeout :class:`~labtools.errors.Timeout`; after either, the next
command first drops any late bytes so replies cannot be taken for the wrong request.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, TypeVar, cast

from labtools.drivers.ocean.messages import Command
from labtools.drivers.ocean.protocol import (
    HEADER_SIZE,
    Checksum,
    Flag,
    OBPMessage,
    bytes_remaining,
    decode,
)
from labtools.errors import InstrumentError, Timeout, ToolError
from labtools.transport import Transport

__all__ = ["OBPError", "OBPLink"]

log = logging.getLogger(__name__)
R = TypeVar("R")


class OBPError(InstrumentError):
    """The device refused a command (NACK) or reported a hardware exception."""

    def __init__(self, message: str, *, obp_error: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.obp_error = obp_error


_HINTS = {
    2: "this device does not support the command",
    6: "the value is outside what the device accepts",
    7: "the device is busy; try again",
}


class OBPLink:
    """Request/reply over ``transport``; ``checksum`` chooses MD5 on outgoing messages."""

    def __init__(
        self, transport: Transport, *, checksum: Checksum = Checksum.NONE, timeout: float = 1.0
    ) -> None:
        self.transport = transport
        self.checksum = checksum
        self.timeout = timeout
        self._out_of_step = False
        self._lock = threading.Lock()

    def request(self, command: Command[R], *args: Any, wait: float = 0.0) -> R:
        """Send ``command`` with ``args``; return its parsed reply (``None`` for an ACK: such
        commands are declared ``Command[None]``).

        ``wait``: seconds the device needs before it can answer (e.g. the exposure), added to
        the read timeout.
        """
        flags = Flag.ACK_REQUESTED if command.acknowledged else Flag.NONE
        message = OBPMessage(
            command.message_type, command.pack(*args), flags, checksum=self.checksum
        )
        with self._lock:
            if self._out_of_step:
                self.transport.discard_input()
                self._out_of_step = False
            try:
                self.transport.timeout = self.timeout + wait
                self.transport.write(message.encode())
                reply = self._receive()
            except Timeout as exc:
                self._out_of_step = True
                raise Timeout(
                    f"{command.name}: {exc.message}",
                    hint="check the connection and that the device is powered",
                ) from exc
            except ToolError:  # framing error, broken link
                self._out_of_step = True
                raise
        return self._check(command, reply)

    def resync(self) -> None:
        """Drop any bytes not yet read and start in step, as on a new connection (after the
        device was reset)."""
        with self._lock:
            self.transport.discard_input()
            self._out_of_step = False

    def _receive(self) -> OBPMessage:
        header = self.transport.read_exactly(HEADER_SIZE)
        rest = self.transport.read_exactly(bytes_remaining(header))
        return decode(header + rest)

    def _check(self, command: Command[R], reply: OBPMessage) -> R:
        if reply.message_type != command.message_type:
            self._out_of_step = True
            raise InstrumentError(
                f"{command.name}: reply is for message 0x{reply.message_type:08X}, "
                f"expected 0x{command.message_type:08X}",
                hint="the link was out of step; the next command resynchronises",
            )
        if reply.nack:
            raise OBPError(
                f"{command.name} refused: {reply.describe_error()}",
                obp_error=reply.error,
                hint=_HINTS.get(reply.error),
            )
        if reply.flags & Flag.HW_EXCEPTION:
            raise OBPError(f"{command.name}: hardware exception", obp_error=reply.error)
        if command.reply is None:
            if not reply.flags & Flag.ACK:
                raise InstrumentError(
                    f"{command.name}: reply is neither ACK nor NACK "
                    f"(flags 0x{int(reply.flags):04x})"
                )
            return cast(R, None)  # an acknowledged command is declared Command[None]
        try:
            return command.reply.unpack(reply.data)
        except ValueError as exc:
            raise InstrumentError(f"{command.name}: malformed reply: {exc}") from exc
