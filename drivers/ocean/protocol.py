"""Ocean Binary Protocol (OBP, header version 0x1100) framing.

Written from the published layout (little-endian throughout)::

    offset  size  field
         0     2  start bytes 0xC0C1            (on the wire: C1 C0)
         2     2  protocol version 0x1100
         4     2  flags (FLAG_*)
         6     2  error number (ERRORS)
         8     4  message type
        12     4  regarding (passed through; the emulator echoes it)
        16     6  reserved (zero)
        22     1  checksum type (0 none, 1 MD5)
        23     1  immediate data length (0–16)
        24    16  immediate data
        40     4  bytes remaining = len(payload) + 20
        44     n  payload (used when the data exceed 16 bytes)
      44+n    16  checksum (MD5 of everything before it, or zeros)
      60+n     4  footer 0xC2C3C4C5           (on the wire: C5 C4 C3 C2)

A message with no more than 16 bytes of data carries them as immediate data, else as payload.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from enum import IntEnum, IntFlag

from labtools.errors import InstrumentError

__all__ = [
    "ERRORS",
    "FOOTER",
    "HEADER",
    "HEADER_SIZE",
    "MAX_PAYLOAD",
    "PROTOCOL_VERSION",
    "START",
    "TRAILER_SIZE",
    "Checksum",
    "Flag",
    "FramingError",
    "OBPMessage",
    "bytes_remaining",
    "decode",
]

START = 0xC0C1
PROTOCOL_VERSION = 0x1100
FOOTER = 0xC2C3C4C5
HEADER = struct.Struct("<HHHHII6sBB16sI")
TRAILER = struct.Struct("<16sI")
HEADER_SIZE = HEADER.size  # 44
TRAILER_SIZE = TRAILER.size  # 20
IMMEDIATE_MAX = 16
#: largest payload either side accepts (a 2048-pixel 16-bit spectrum is 4 KiB) [A]
MAX_PAYLOAD = 1 << 20


class Flag(IntFlag):
    """Header flags."""

    NONE = 0
    RESPONSE = 0x0001
    ACK = 0x0002
    ACK_REQUESTED = 0x0004
    NACK = 0x0008
    HW_EXCEPTION = 0x0010
    DEPRECATED = 0x0020


class Checksum(IntEnum):
    NONE = 0
    MD5 = 1


#: OBP error numbers and their published meanings
ERRORS: dict[int, str] = {
    0: "success",
    1: "invalid or unsupported protocol",
    2: "unknown message type",
    3: "bad checksum",
    4: "message too large",
    5: "payload length does not match message type",
    6: "payload data invalid",
    7: "device not ready for this message type",
    8: "unknown checksum type",
    9: "device reset unexpectedly",
    10: "too many buses (commands came from too many bus interfaces)",
    11: "out of memory",
    12: "command is valid, but the desired information does not exist",
    13: "internal device error, may be unrecoverable",
    14: "message did not end properly",
    15: "current scan interrupted",
    100: "could not decrypt properly",
    101: "firmware layout invalid",
    102: "data packet was the wrong size",
    103: "hardware revision not compatible with firmware",
    104: "existing flash map not compatible with firmware",
    255: "operation deferred; the reply will take some time",
}


class FramingError(InstrumentError):
    """Bytes that are not a well-formed OBP message. ``error`` is the OBP error number a device
    would answer with."""

    def __init__(self, message: str, *, error: int = 1, message_type: int | None = None) -> None:
        super().__init__(message, hint="the link may be out of step; reconnect if it persists")
        self.error = error
        self.message_type = message_type


@dataclass(frozen=True)
class OBPMessage:
    """One OBP message: type, data (immediate or payload, chosen by size), header fields."""

    message_type: int
    data: bytes = b""
    flags: Flag = Flag.NONE
    error: int = 0
    regarding: int = 0
    checksum: Checksum = Checksum.NONE

    def encode(self) -> bytes:
        """The message as bytes on the wire."""
        immediate = self.data if len(self.data) <= IMMEDIATE_MAX else b""
        payload = b"" if immediate or not self.data else self.data
        if len(payload) > MAX_PAYLOAD:
            raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
        head = HEADER.pack(
            START,
            PROTOCOL_VERSION,
            int(self.flags),
            self.error,
            self.message_type,
            self.regarding,
            b"",
            int(self.checksum),
            len(immediate),
            immediate,
            len(payload) + TRAILER_SIZE,
        )
        body = head + payload
        digest = hashlib.md5(body).digest() if self.checksum == Checksum.MD5 else b""
        return body + TRAILER.pack(digest, FOOTER)

    @property
    def nack(self) -> bool:
        return bool(self.flags & Flag.NACK) or self.error != 0

    def describe_error(self) -> str:
        meaning = ERRORS.get(self.error, "unknown error")
        return f"OBP error {self.error}: {meaning}"


def bytes_remaining(header: bytes) -> int:
    """Check a 44-byte header's start bytes and version; return how many bytes follow it."""
    if len(header) != HEADER_SIZE:
        raise FramingError(f"an OBP header is {HEADER_SIZE} bytes, got {len(header)}")
    start, version, *_, remaining = HEADER.unpack(header)
    if start != START:
        raise FramingError(f"bad start bytes {header[:2].hex(' ')} (expected c1 c0)")
    if version != PROTOCOL_VERSION:
        raise FramingError(f"protocol version 0x{version:04x} (expected 0x{PROTOCOL_VERSION:04x})")
    if remaining < TRAILER_SIZE:
        raise FramingError(f"bytes remaining {remaining} < {TRAILER_SIZE}", error=5)
    if remaining - TRAILER_SIZE > MAX_PAYLOAD:
        raise FramingError(f"payload of {remaining - TRAILER_SIZE} bytes is too large", error=4)
    return remaining


def decode(frame: bytes) -> OBPMessage:
    """Parse one complete message; raises :class:`FramingError` when it is malformed."""
    remaining = bytes_remaining(frame[:HEADER_SIZE])
    (
        _,
        _,
        flags,
        error,
        message_type,
        regarding,
        _,
        checksum_type,
        immediate_length,
        immediate,
        _,
    ) = HEADER.unpack(frame[:HEADER_SIZE])

    def fail(message: str, code: int) -> FramingError:
        return FramingError(message, error=code, message_type=message_type)

    if len(frame) != HEADER_SIZE + remaining:
        raise fail(f"frame is {len(frame)} bytes, header says {HEADER_SIZE + remaining}", 5)
    digest, footer = TRAILER.unpack(frame[-TRAILER_SIZE:])
    if footer != FOOTER:
        raise fail(f"bad footer {frame[-4:].hex(' ')} (expected c5 c4 c3 c2)", 14)
    if checksum_type not in (Checksum.NONE, Checksum.MD5):
        raise fail(f"unknown checksum type {checksum_type}", 8)
    if checksum_type == Checksum.MD5 and hashlib.md5(frame[:-TRAILER_SIZE]).digest() != digest:
        raise fail("MD5 checksum does not match", 3)
    if immediate_length > IMMEDIATE_MAX:
        raise fail(f"immediate data length {immediate_length} > {IMMEDIATE_MAX}", 5)
    payload = frame[HEADER_SIZE:-TRAILER_SIZE]
    data = payload if payload else immediate[:immediate_length]
    return OBPMessage(message_type, data, Flag(flags), error, regarding, Checksum(checksum_type))
