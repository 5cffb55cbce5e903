"""Golden OBP frames, written out by hand from the published layout (little-endian):

start c1c0 · version 0011 · flags · error · message type (4) · regarding (4) · reserved (6) ·
checksum type (1) · immediate length (1) · immediate data (16) · bytes remaining (4) · payload ·
checksum (16) · footer c5c4c3c2.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import (
    Checksum,
    Flag,
    FramingError,
    OBPMessage,
    bytes_remaining,
    decode,
)

Z16 = "00" * 16
RESERVED = "000000000000"
FOOT = "c5c4c3c2"


def golden(
    flags: str,
    error: str,
    message_type: str,
    immediate_length: str,
    immediate: str,
    remaining: str,
    payload: str = "",
    checksum_type: str = "00",
) -> bytes:
    """Concatenate hand-written little-endian fields (hex) into a frame."""
    immediate = immediate.ljust(32, "0")
    text = (
        "c1c0"
        "0011"
        + flags
        + error
        + message_type
        + "00000000"
        + RESERVED
        + checksum_type
        + immediate_length
        + immediate
        + remaining
        + payload
        + Z16
        + FOOT
    )
    return bytes.fromhex(text)


# -- requests the driver sends --------------------------------------------------------------------
REQUESTS = [
    # command, args, frame
    (m.GET_SERIAL_NUMBER, (), golden("0000", "0000", "00010000", "00", "", "14000000")),
    (
        m.GET_WAVELENGTH_COEFFICIENT_COUNT,
        (),
        golden("0000", "0000", "00011800", "00", "", "14000000"),
    ),
    (
        m.GET_WAVELENGTH_COEFFICIENT,
        (2,),
        golden("0000", "0000", "01011800", "01", "02", "14000000"),
    ),
    # 100 ms = 100000 µs = 0x000186A0; setters ask for an ACK (flag 0x0004)
    (
        m.SET_INTEGRATION_TIME,
        (100_000,),
        golden("0400", "0000", "10001100", "04", "a0860100", "14000000"),
    ),
    (m.GET_INTEGRATION_TIME, (), golden("0000", "0000", "00001100", "00", "", "14000000")),
    (m.GET_RAW_SPECTRUM, (), golden("0000", "0000", "00111000", "00", "", "14000000")),
    (m.SET_SCANS_TO_AVERAGE, (10,), golden("0400", "0000", "10001200", "02", "0a00", "14000000")),
    (m.GET_SCANS_TO_AVERAGE, (), golden("0000", "0000", "00001200", "00", "", "14000000")),
    (m.SET_LAMP_ENABLE, (0,), golden("0400", "0000", "10041100", "01", "00", "14000000")),
    (m.SET_LAMP_ENABLE, (1,), golden("0400", "0000", "10041100", "01", "01", "14000000")),
    (m.SET_SHUTTER, (1,), golden("0400", "0000", "10061100", "01", "01", "14000000")),
]


@pytest.mark.parametrize(
    ("command", "args", "frame"), REQUESTS, ids=[f"{c.name}{a}" for c, a, _ in REQUESTS]
)
def test_request_frames(command: m.Command, args: tuple, frame: bytes) -> None:
    flags = Flag.ACK_REQUESTED if command.acknowledged else Flag.NONE
    encoded = OBPMessage(command.message_type, command.pack(*args), flags).encode()
    assert len(encoded) == 64
    assert encoded == frame
    assert decode(frame) == OBPMessage(command.message_type, command.pack(*args), flags)


def test_message_types_are_the_published_ones() -> None:
    assert {c.name: c.message_type for c in m.ALL_COMMANDS} == {
        "get serial number": 0x00000100,
        "get raw spectrum": 0x00101100,
        "get integration time": 0x00110000,
        "set integration time": 0x00110010,
        "set lamp enable": 0x00110410,
        "set shutter": 0x00110610,
        "get scans to average": 0x00120000,
        "set scans to average": 0x00120010,
        "get wavelength coefficient count": 0x00180100,
        "get wavelength coefficient": 0x00180101,
    }


# -- replies the driver parses ---------------------------------------------------------------------
def test_serial_number_reply() -> None:
    frame = golden("0100", "0000", "00010000", "09", "464c4d533030303031", "14000000")
    reply = decode(frame)
    assert reply.flags == Flag.RESPONSE
    assert m.GET_SERIAL_NUMBER.reply.unpack(reply.data) == "FLMS00001"


def test_wavelength_coefficient_replies() -> None:
    count = decode(golden("0100", "0000", "00011800", "01", "04", "14000000"))
    assert m.GET_WAVELENGTH_COEFFICIENT_COUNT.reply.unpack(count.data) == 4
    c0 = decode(golden("0100", "0000", "01011800", "04", "cdcc3143", "14000000"))
    assert m.GET_WAVELENGTH_COEFFICIENT.reply.unpack(c0.data) == pytest.approx(177.8, abs=1e-4)


def test_ack_and_nack_replies() -> None:
    ack = decode(golden("0300", "0000", "10001100", "00", "", "14000000"))
    assert ack.flags == Flag.RESPONSE | Flag.ACK and not ack.nack
    nack = decode(golden("0900", "0600", "10001100", "00", "", "14000000"))
    assert nack.nack and nack.error == 6
    assert nack.describe_error() == "OBP error 6: payload data invalid"


def test_spectrum_reply_uses_the_payload() -> None:
    counts = (np.arange(2048) * 31 % 65536).astype("<u2")
    frame = golden("0100", "0000", "00111000", "00", "", "14100000", counts.tobytes().hex())
    assert len(frame) == 44 + 4096 + 20
    assert bytes_remaining(frame[:44]) == 4116
    reply = decode(frame)
    np.testing.assert_array_equal(m.GET_RAW_SPECTRUM.reply.unpack(reply.data), counts)
    assert OBPMessage(0x00101100, counts.tobytes(), Flag.RESPONSE).encode() == frame


def test_sixteen_bytes_are_immediate_seventeen_are_payload() -> None:
    sixteen = OBPMessage(0x100, bytes(range(16))).encode()
    assert len(sixteen) == 64 and sixteen[23] == 16
    seventeen = OBPMessage(0x100, bytes(range(17))).encode()
    assert len(seventeen) == 64 + 17 and seventeen[23] == 0
    assert decode(seventeen).data == bytes(range(17))


# -- checksums and malformed frames ----------------------------------------------------------------
def test_md5_checksum_covers_header_and_payload() -> None:
    frame = OBPMessage(0x00000100, checksum=Checksum.MD5).encode()
    assert frame[22] == 1
    assert frame[44:60] == hashlib.md5(frame[:44]).digest()
    assert decode(frame).checksum == Checksum.MD5
    corrupted = frame[:30] + b"\x01" + frame[31:]
    with pytest.raises(FramingError, match="MD5") as info:
        decode(corrupted)
    assert info.value.error == 3 and info.value.message_type == 0x00000100


@pytest.mark.parametrize(
    ("position", "value", "error", "text"),
    [
        (0, 0x00, 1, "start bytes"),
        (2, 0x20, 1, "protocol version"),
        (-1, 0x00, 14, "footer"),
        (22, 0x07, 8, "checksum type"),
        (23, 0x11, 5, "immediate data length"),
    ],
)
def test_malformed_frames(position: int, value: int, error: int, text: str) -> None:
    frame = bytearray(OBPMessage(0x00000100).encode())
    frame[position] = value
    with pytest.raises(FramingError, match=text) as info:
        decode(bytes(frame))
    assert info.value.error == error


def test_length_must_match_bytes_remaining() -> None:
    frame = OBPMessage(0x00000100).encode()
    with pytest.raises(FramingError, match="header says") as info:
        decode(frame + b"\x00")
    assert info.value.error == 5
    huge = bytearray(frame)
    huge[40:44] = struct.pack("<I", 1 << 30)
    with pytest.raises(FramingError, match="too large") as info:
        bytes_remaining(bytes(huge[:44]))
    assert info.value.error == 4


def test_codecs_refuse_bad_data() -> None:
    with pytest.raises(ValueError):
        m.SET_INTEGRATION_TIME.pack(-1)
    with pytest.raises(ValueError):
        m.SET_INTEGRATION_TIME.pack(1 << 32)
    with pytest.raises(ValueError):
        m.GET_WAVELENGTH_COEFFICIENT.reply.unpack(b"\x00\x00")
    with pytest.raises(ValueError):
        m.GET_RAW_SPECTRUM.reply.unpack(b"\x00\x00\x00")
    with pytest.raises(ValueError):
        m.GET_SERIAL_NUMBER.reply.unpack(b"\xff")
    with pytest.raises(TypeError):
        m.GET_SERIAL_NUMBER.pack(1)
    with pytest.raises(TypeError):
        m.SET_LAMP_ENABLE.pack()
