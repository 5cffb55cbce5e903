"""The OBP device emulator at the byte level: replies, refusals, resynchronisation."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import Checksum, Flag, OBPMessage, decode
from labtools.simulators.spectrometer import OBPEmulator
from labtools.simulators.world import Mixture, World


def make(model: str = "FLAME-S", seed: int = 0) -> OBPEmulator:
    world = World(seed)
    world.fill("cuvette", Mixture.solution(3000, {}))
    return OBPEmulator(world, model)


def ask(
    emulator: OBPEmulator,
    command: m.Command[Any],
    *args: Any,
    ack: bool | None = None,
    regarding: int = 0,
    checksum: Checksum = Checksum.NONE,
) -> OBPMessage | None:
    ack = command.acknowledged if ack is None else ack
    frame = OBPMessage(
        command.message_type,
        command.pack(*args),
        Flag.ACK_REQUESTED if ack else Flag.NONE,
        regarding=regarding,
        checksum=checksum,
    ).encode()
    out = emulator.feed(frame)
    return decode(out) if out else None


def test_the_serial_number_is_drawn_per_seed_and_never_is_the_seed() -> None:
    """An agent reading the serial must not learn which world it is in."""
    serials = {seed: make(seed=seed).serial_number for seed in range(40)}
    assert make(seed=7).serial_number == serials[7]  # same seed, same device
    assert len(set(serials.values())) > 35  # 100,000 numbers: a few collisions at most
    assert all(not serial.endswith(f"{seed:05d}") for seed, serial in serials.items())


def test_queries_answer_with_data() -> None:
    emulator = make(seed=42)
    serial = ask(emulator, m.GET_SERIAL_NUMBER)
    assert serial.flags == Flag.RESPONSE
    number = m.GET_SERIAL_NUMBER.reply.unpack(serial.data)
    assert re.fullmatch(r"FLMS\d{5}", number) and number == emulator.serial_number
    count = ask(emulator, m.GET_WAVELENGTH_COEFFICIENT_COUNT)
    assert m.GET_WAVELENGTH_COEFFICIENT_COUNT.reply.unpack(count.data) == 4
    c1 = ask(emulator, m.GET_WAVELENGTH_COEFFICIENT, 1)
    assert m.GET_WAVELENGTH_COEFFICIENT.reply.unpack(c1.data) == pytest.approx(0.3867, rel=1e-6)


def test_setters_ack_only_when_asked() -> None:
    emulator = make()
    ack = ask(emulator, m.SET_INTEGRATION_TIME, 50_000)
    assert ack.flags == Flag.RESPONSE | Flag.ACK and ack.data == b""
    assert ask(emulator, m.SET_INTEGRATION_TIME, 60_000, ack=False) is None
    reading = ask(emulator, m.GET_INTEGRATION_TIME)
    assert m.GET_INTEGRATION_TIME.reply.unpack(reading.data) == 60_000


def test_replies_echo_regarding_and_checksum_type() -> None:
    emulator = make()
    reply = ask(emulator, m.GET_SERIAL_NUMBER, regarding=0xDEADBEEF, checksum=Checksum.MD5)
    assert reply.regarding == 0xDEADBEEF
    assert reply.checksum == Checksum.MD5


@pytest.mark.parametrize(
    ("command", "args", "error"),
    [
        (m.SET_INTEGRATION_TIME, (999,), 6),  # below the Flame-S's 1 ms
        (m.SET_INTEGRATION_TIME, (65_000_001,), 6),
        (m.SET_LAMP_ENABLE, (2,), 6),
        (m.SET_SCANS_TO_AVERAGE, (0,), 6),
        (m.GET_WAVELENGTH_COEFFICIENT, (4,), 12),
    ],
)
def test_invalid_values_are_nacked(command: m.Command[Any], args: tuple, error: int) -> None:
    reply = ask(make(), command, *args)
    assert reply.flags == Flag.RESPONSE | Flag.NACK
    assert reply.error == error


def test_unknown_message_and_wrong_length() -> None:
    emulator = make()
    unknown = decode(emulator.feed(OBPMessage(0x00420004).encode()))  # TEC temperature
    assert unknown.nack and unknown.error == 2 and unknown.message_type == 0x00420004
    short = OBPMessage(
        m.SET_INTEGRATION_TIME.message_type, b"\x10\x27", Flag.ACK_REQUESTED
    ).encode()
    assert decode(emulator.feed(short)).error == 5
    extra = OBPMessage(m.GET_SERIAL_NUMBER.message_type, b"\x01").encode()
    assert decode(emulator.feed(extra)).error == 5


def test_models_without_device_averaging_refuse_it() -> None:
    reply = ask(make("ST"), m.SET_SCANS_TO_AVERAGE, 4)
    assert reply.nack and reply.error == 2


def test_bad_checksum_and_bad_version_are_nacked() -> None:
    emulator = make()
    frame = bytearray(OBPMessage(m.GET_SERIAL_NUMBER.message_type, checksum=Checksum.MD5).encode())
    frame[50] ^= 0xFF
    assert decode(emulator.feed(bytes(frame))).error == 3
    frame = bytearray(OBPMessage(m.GET_SERIAL_NUMBER.message_type).encode())
    frame[3] = 0x20  # version 0x2000 (OBP2)
    reply = decode(emulator.feed(bytes(frame)))
    assert reply.error == 1 and reply.message_type == m.GET_SERIAL_NUMBER.message_type


def test_garbage_is_skipped_and_frames_may_arrive_in_pieces() -> None:
    emulator = make()
    frame = OBPMessage(m.GET_SERIAL_NUMBER.message_type).encode()
    assert emulator.feed(b"\x00\xffnoise\xc1") == b""
    stream = frame + frame
    out = b"".join(emulator.feed(stream[i : i + 7]) for i in range(0, len(stream), 7))
    assert len(out) == 2 * 64
    assert decode(out[:64]).data == decode(out[64:]).data


def test_spectrum_counts_and_clock() -> None:
    emulator = make()
    ask(emulator, m.SET_INTEGRATION_TIME, 20_000)
    ask(emulator, m.SET_SCANS_TO_AVERAGE, 5)
    before = emulator.world.clock.now()
    reply = ask(emulator, m.GET_RAW_SPECTRUM)
    counts = m.GET_RAW_SPECTRUM.reply.unpack(reply.data)
    assert counts.dtype == np.dtype("<u2") and counts.size == 2048
    assert emulator.world.clock.now() - before == pytest.approx(0.1)
    session = emulator.session()
    frame = OBPMessage(m.GET_RAW_SPECTRUM.message_type).encode()
    session.feed(frame)
    assert session.take_exposure_s() == pytest.approx(0.1)
    assert session.take_exposure_s() == 0.0


def test_a_new_integration_time_applies_from_the_next_exposure() -> None:
    emulator = make()
    ask(emulator, m.SET_LAMP_ENABLE, 0)
    means = []
    for micros in (10_000, 2_000_000, 10_000):
        ask(emulator, m.SET_INTEGRATION_TIME, micros)
        counts = m.GET_RAW_SPECTRUM.reply.unpack(ask(emulator, m.GET_RAW_SPECTRUM).data)
        means.append(float(counts.mean()))
    # dark current: ≈1640 counts/s on top of the offset, from the very first spectrum after a set
    assert means[1] - means[0] == pytest.approx(1638 * 1.99, rel=0.05)
    assert means[2] == pytest.approx(means[0], abs=10)
