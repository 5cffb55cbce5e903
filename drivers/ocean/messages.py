"""OBP commands, one declaration each: message type, request data and reply data.

Message types are the published OBP ones (Ocean's OBP message list, as also used by
python-seabreeze). Request and reply data are codecs, so the driver packs requests and parses
replies with the same declaration the emulator uses to parse requests and pack replies.
A command whose ``reply`` is ``None`` returns no data: the host asks for an acknowledgement.
Device units stay here (µs, counts); the facade converts at this boundary.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

__all__ = [
    "ALL_COMMANDS",
    "DEVICE_COMMANDS",
    "GET_INTEGRATION_TIME",
    "GET_RAW_SPECTRUM",
    "GET_SCANS_TO_AVERAGE",
    "GET_SERIAL_NUMBER",
    "GET_SERIAL_NUMBER_LENGTH",
    "GET_WAVELENGTH_COEFFICIENT",
    "GET_WAVELENGTH_COEFFICIENT_COUNT",
    "SET_INTEGRATION_TIME",
    "SET_LAMP_ENABLE",
    "SET_SCANS_TO_AVERAGE",
    "SET_SHUTTER",
    "Codec",
    "Command",
    "Pixels16",
    "Scalar",
    "Text",
]

T = TypeVar("T")


class Codec(Protocol[T]):
    """Packs a value to message data and back; ``unpack`` raises ``ValueError`` on bad data."""

    def pack(self, value: T) -> bytes: ...

    def unpack(self, data: bytes) -> T: ...


@dataclass(frozen=True)
class Scalar:
    """One little-endian number, e.g. ``"<I"`` (uint32) or ``"<f"`` (float32)."""

    fmt: str

    def pack(self, value: Any) -> bytes:
        try:
            return struct.pack(self.fmt, value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit {self.fmt}: {exc}") from exc

    def unpack(self, data: bytes) -> Any:
        size = struct.calcsize(self.fmt)
        if len(data) != size:
            raise ValueError(f"expected {size} bytes for {self.fmt}, got {len(data)}")
        return struct.unpack(self.fmt, data)[0]


@dataclass(frozen=True)
class Text:
    """ASCII, at most ``max_bytes``, NUL-padded on the wire."""

    max_bytes: int = 16

    def pack(self, value: str) -> bytes:
        data = value.encode("ascii")
        if len(data) > self.max_bytes:
            raise ValueError(f"{value!r} is longer than {self.max_bytes} bytes")
        return data

    def unpack(self, data: bytes) -> str:
        if len(data) > self.max_bytes:
            raise ValueError(f"{len(data)} bytes of text, at most {self.max_bytes}")
        try:
            return data.split(b"\0", 1)[0].decode("ascii")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not ASCII: {data!r}") from exc


@dataclass(frozen=True)
class Pixels16:
    """A spectrum: one little-endian uint16 count per pixel."""

    def pack(self, value: np.ndarray) -> bytes:
        return np.asarray(value, dtype="<u2").tobytes()

    def unpack(self, data: bytes) -> np.ndarray:
        if len(data) % 2:
            raise ValueError(f"a 16-bit spectrum has an even byte count, got {len(data)}")
        return np.frombuffer(data, dtype="<u2")


R = TypeVar("R")


@dataclass(frozen=True)
class Command(Generic[R]):
    """One OBP command: ``name``, ``message_type``, the request's data codec (``None``: no data)
    and the reply's (``None``: acknowledged, no data)."""

    name: str
    message_type: int
    request: Codec[Any] | None = None
    reply: Codec[R] | None = None

    @property
    def acknowledged(self) -> bool:
        """True for commands that return no data (the host requests an ACK instead)."""
        return self.reply is None

    def pack(self, *args: Any) -> bytes:
        """Request data for ``args`` (none, or the one value the request codec takes)."""
        if self.request is None:
            if args:
                raise TypeError(f"{self.name} takes no arguments")
            return b""
        if len(args) != 1:
            raise TypeError(f"{self.name} takes one argument")
        return self.request.pack(args[0])

    def __repr__(self) -> str:
        return f"<{self.name} 0x{self.message_type:08X}>"


GET_SERIAL_NUMBER: Command[str] = Command("get serial number", 0x00000100, reply=Text(16))
GET_SERIAL_NUMBER_LENGTH: Command[int] = Command(  # bytes of the serial number
    "get serial number length", 0x00000101, reply=Scalar("<B")
)
GET_RAW_SPECTRUM: Command[np.ndarray] = Command("get raw spectrum", 0x00101100, reply=Pixels16())
GET_INTEGRATION_TIME: Command[int] = Command(  # µs
    "get integration time", 0x00110000, reply=Scalar("<I")
)
SET_INTEGRATION_TIME: Command[None] = Command(  # µs
    "set integration time", 0x00110010, request=Scalar("<I")
)
SET_LAMP_ENABLE: Command[None] = Command(  # 1 on, 0 off (the lamp-enable output line)
    "set lamp enable", 0x00110410, request=Scalar("<B")
)
SET_SHUTTER: Command[None] = Command(  # 1 open, 0 closed
    "set shutter", 0x00110610, request=Scalar("<B")
)
GET_SCANS_TO_AVERAGE: Command[int] = Command("get scans to average", 0x00120000, reply=Scalar("<H"))
SET_SCANS_TO_AVERAGE: Command[None] = Command(
    "set scans to average", 0x00120010, request=Scalar("<H")
)
GET_WAVELENGTH_COEFFICIENT_COUNT: Command[int] = Command(
    "get wavelength coefficient count", 0x00180100, reply=Scalar("<B")
)
GET_WAVELENGTH_COEFFICIENT: Command[float] = Command(  # request: index; reply: float32
    "get wavelength coefficient", 0x00180101, request=Scalar("<B"), reply=Scalar("<f")
)

#: the commands this project's OBP driver sends
ALL_COMMANDS: tuple[Command[Any], ...] = (
    GET_SERIAL_NUMBER,
    GET_RAW_SPECTRUM,
    GET_INTEGRATION_TIME,
    SET_INTEGRATION_TIME,
    SET_LAMP_ENABLE,
    SET_SHUTTER,
    GET_SCANS_TO_AVERAGE,
    SET_SCANS_TO_AVERAGE,
    GET_WAVELENGTH_COEFFICIENT_COUNT,
    GET_WAVELENGTH_COEFFICIENT,
)
#: every command an OBP device answers here: the driver's, and those other hosts send first
#: (python-seabreeze reads the serial number's length before the serial number)
DEVICE_COMMANDS: tuple[Command[Any], ...] = (*ALL_COMMANDS, GET_SERIAL_NUMBER_LENGTH)
