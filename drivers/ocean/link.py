"""An OBP conversation over a transport: send a command, read and check its reply.

Blocking (drivers run it off the event loop when the transport blocks). Every command that
returns no data asks for an acknowledgement, so a setter has been accepted — or refused with a
typed error — before the call returns.

Trust rules:

* **Matching.** Each request carries a fresh ``regarding`` number, which the device echoes. A
  reply counts only if its ``regarding`` and message type are the request's; any other frame
  (a late reply to a request that timed out, a duplicate, a stale frame) is dropped and the
  read goes on until the request's deadline. Bytes before a start marker are skipped.
* **Checksums.** With :attr:`Checksum.MD5` every request carries an MD5 digest and a reply
  must carry a valid one (``require_checksum``; ``None``: learnt from the first reply, for
  devices that do not checksum their replies). A bad digest is an :class:`InstrumentError`,
  never data.
* **Failures.** A NACK is :class:`OBPError` (OBP error number and meaning); no reply in time
  :class:`~labtools.errors.Timeout`; a broken transport an ``InstrumentError`` that sets
  :attr:`OBPLink.broken` (the owner reopens the link). After any failure the next request first
  drops unread bytes. Nothing is retried here: a request reaches the device at most once.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, TypeVar, cast

from labtools.drivers.ocean.messages import Command
from labtools.drivers.ocean.protocol import (
    HEADER_SIZE,
    Checksum,
    Flag,
    FramingError,
    OBPMessage,
    bytes_remaining,
    decode,
)
from labtools.errors import InstrumentError, Timeout, ToolError
from labtools.transport import Transport

__all__ = ["OBPError", "OBPLink"]

log = logging.getLogger(__name__)
R = TypeVar("R")

_START = b"\xc1\xc0"
_MAX_ID = 0xFFFFFFFF


class OBPError(InstrumentError):
    """The device refused a command (NACK) or reported a hardware exception."""

    def __init__(self, message: str, *, obp_error: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.obp_error = obp_error


_HINTS = {
    2: "this device does not support the command",
    3: "a byte was corrupted on the way to the device; try again",
    6: "the value is outside what the device accepts",
    7: "the device is busy; try again",
}


class OBPLink:
    """Request/reply over ``transport``.

    ``checksum``: put MD5 on outgoing messages (:attr:`Checksum.MD5`) or not.
    ``require_checksum``: whether replies must carry a valid MD5 (``None``: learn it from the
    first reply; ignored without ``checksum``). ``timeout``: seconds to wait for a reply.
    ``first_id``: the first ``regarding`` number (a reopened link continues its predecessor's).
    ``drop_hint``: what the error says to do when the transport breaks.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        checksum: Checksum = Checksum.MD5,
        require_checksum: bool | None = True,
        timeout: float = 1.0,
        first_id: int = 1,
        drop_hint: str = "the link to the device dropped; reconnect it",
    ) -> None:
        self.transport = transport
        self.checksum = checksum
        self.require_checksum = require_checksum if checksum == Checksum.MD5 else False
        self.timeout = timeout
        self.drop_hint = drop_hint
        #: the transport failed: nothing more goes through this link
        self.broken = False
        #: frames dropped because they answered no request in progress
        self.dropped = 0
        self._next_id = _wrap(first_id)
        self._out_of_step = False
        self._lock = threading.Lock()

    @property
    def next_id(self) -> int:
        """The ``regarding`` number the next request will carry."""
        return self._next_id

    def request(self, command: Command[R], *args: Any, wait: float = 0.0) -> R:
        """Send ``command`` with ``args``; return its parsed reply (``None`` for an ACK: such
        commands are declared ``Command[None]``).

        ``wait``: seconds the device needs before it can answer (e.g. the exposure), added to
        the read timeout.
        """
        data = command.pack(*args)
        with self._lock:
            if self.broken:
                raise InstrumentError(f"{command.name}: the link is down", hint=self.drop_hint)
            ident, self._next_id = self._next_id, _wrap(self._next_id + 1)
            flags = Flag.ACK_REQUESTED if command.acknowledged else Flag.NONE
            message = OBPMessage(
                command.message_type, data, flags, regarding=ident, checksum=self.checksum
            )
            deadline = time.monotonic() + self.timeout + wait
            try:
                if self._out_of_step:
                    self.transport.discard_input()
                    self._out_of_step = False
                self._send(command, message)
                reply = self._receive(command, ident, deadline)
            except Timeout as exc:
                self._out_of_step = True
                raise Timeout(
                    f"{command.name}: {exc.message}",
                    hint="check the connection and that the device is powered",
                ) from exc
            except FramingError as exc:
                self._out_of_step = True
                raise InstrumentError(
                    f"{command.name}: corrupted reply: {exc.message}",
                    hint="a byte was damaged on the link; the next command resynchronises",
                ) from exc
            except ToolError:
                self._out_of_step = True
                raise
        return self._check(command, reply)

    def resync(self) -> None:
        """Drop any bytes not yet read and start in step, as on a new connection (after the
        device was reset)."""
        with self._lock:
            if not self.broken:
                self._discard()
                self._out_of_step = False

    # -- traffic -------------------------------------------------------------------------------
    def _send(self, command: Command[Any], message: OBPMessage) -> None:
        try:
            self.transport.write(message.encode())
        except ToolError as exc:
            raise self._dropped(command, exc) from exc

    def _discard(self) -> None:
        try:
            self.transport.discard_input()
        except ToolError:
            self.broken = True

    def _read(self, command: Command[Any], size: int, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        # an in-process device's reply is buffered already or never comes: no wall-clock limit
        # (a busy process would otherwise time out replies that are there)
        if left <= 0 and self.transport.blocking:
            raise Timeout(f"no reply within {self.timeout:g} s")
        try:
            if self.transport.blocking:
                self.transport.timeout = left
            return self.transport.read_exactly(size)
        except Timeout:
            raise
        except ToolError as exc:
            raise self._dropped(command, exc) from exc

    def _dropped(self, command: Command[Any], exc: ToolError) -> InstrumentError:
        self.broken = True
        return InstrumentError(f"{command.name}: {exc.message}", hint=self.drop_hint)

    def _frame(self, command: Command[Any], deadline: float) -> bytes:
        """The next frame's bytes: skips bytes before a start marker and headers that cannot
        start a frame (bad version or length)."""
        header = b""
        while True:
            header += self._read(command, HEADER_SIZE - len(header), deadline)
            start = header.find(_START)
            if start < 0:
                header = header[-1:] if header.endswith(_START[:1]) else b""
                continue
            if start:
                log.debug("%s: skipped %d bytes before a start marker", command.name, start)
                header = header[start:]
                continue
            try:
                remaining = bytes_remaining(header)
            except FramingError as exc:
                log.debug("%s: skipped a bad header: %s", command.name, exc)
                header = header[2:]
                continue
            return header + self._read(command, remaining, deadline)

    def _receive(self, command: Command[Any], ident: int, deadline: float) -> OBPMessage:
        while True:
            reply = decode(self._frame(command, deadline))
            if reply.regarding != ident:
                self.dropped += 1
                log.info(
                    "%s: dropped a frame regarding request %d (0x%08X); waiting for %d",
                    command.name,
                    reply.regarding,
                    reply.message_type,
                    ident,
                )
                continue
            self._trust(command, reply)
            return reply

    def _trust(self, command: Command[Any], reply: OBPMessage) -> None:
        """Refuse a reply without the checksum the link requires (or learn whether the device
        sends one)."""
        if self.checksum != Checksum.MD5:
            return
        has_md5 = reply.checksum == Checksum.MD5  # decode() has checked the digest
        if self.require_checksum is None:
            self.require_checksum = has_md5
            if not has_md5:
                log.warning("%s: the device sends no MD5 on its replies", command.name)
        elif self.require_checksum and not has_md5:
            self._out_of_step = True
            raise InstrumentError(
                f"{command.name}: reply carries no MD5 checksum",
                hint="a byte may have been damaged on the link; try again (md5=False for a "
                "device that never checksums its replies)",
            )

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


def _wrap(ident: int) -> int:
    """``regarding`` numbers run 1 … 2³²−1 (0 is what a host that does not number sends)."""
    return ident if 0 < ident <= _MAX_ID else 1
