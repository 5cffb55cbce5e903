"""An OBP device emulator: parses the bytes a host sends and answers them like the device would.

Protocol handling only; the light path is :mod:`.optics` and the detector :mod:`.ccd`.

Behaviour (OBP, header version 0x1100): a command that returns data answers with the data (flag
RESPONSE); one that returns none answers RESPONSE|ACK only when the host asked for an ACK;
any refusal answers RESPONSE|NACK with the OBP error number — 1 bad version, 2 unknown or
unsupported message, 3 bad MD5, 5 wrong data length, 6 invalid value, 8 unknown checksum type,
12 no such coefficient, 14 bad footer. Replies (refusals too) echo ``regarding`` and the
request's checksum type, so a host can match each reply to its request and check its MD5.
Bytes before a start marker are dropped (resynchronisation).

Timing: exposures are taken on demand — a spectrum request starts ``scans to average`` fresh
exposures at the current integration time, so a new integration time applies from the next
exposure and never to one already under way. Each exposure advances the world's clock by the
integration time; nothing here waits on the wall clock (the socket server can, in real-time mode).
Resetting the world switches the device off and on: default settings, and the serial number and
optics of the new seed.
"""

from __future__ import annotations

import logging
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import (
    HEADER,
    HEADER_SIZE,
    Checksum,
    Flag,
    FramingError,
    OBPMessage,
    bytes_remaining,
    decode,
)
from labtools.simulators.spectrometer.ccd import CCD
from labtools.simulators.spectrometer.optics import Optics
from labtools.simulators.spectrometer.profiles import DetectorProfile, detector_of
from labtools.simulators.world import World

__all__ = ["OBPEmulator", "OBPSession"]

log = logging.getLogger(__name__)

_START = struct.pack("<H", 0xC0C1)
_COMMANDS: dict[int, m.Command[Any]] = {c.message_type: c for c in m.DEVICE_COMMANDS}


class _Refused(Exception):
    def __init__(self, error: int, reason: str) -> None:
        super().__init__(reason)
        self.error = error


class OBPEmulator:
    """An emulated Ocean spectrometer of ``model`` looking at ``container`` in ``world``.

    ``name`` names its hidden parameters (``<name>/wavelength_offset_nm``, …) and its noise
    stream ``world.stream(name)``. Thread-safe: sessions on several threads share one device.
    """

    def __init__(
        self,
        world: World,
        model: str = "FLAME-S",
        *,
        name: str = "spec",
        container: str = "cuvette",
        serial_number: str | None = None,
    ) -> None:
        self.profile: DetectorProfile = detector_of(world.profile, model)
        self.model = self.profile.model
        self.world = world
        self.optics = Optics(world, self.profile, name=name, container=container)
        self.ccd = CCD(self.profile, world.stream(name))
        # stored calibration as the device sends it: float32 on the wire
        self.coefficients = tuple(
            float(c) for c in np.asarray(self.profile.coefficients, dtype=np.float32)
        )
        self._serial_given = serial_number
        self._serial_stream = world.stream(f"{name}/serial")
        self._lock = threading.Lock()
        self._sessions: weakref.WeakSet[OBPSession] = weakref.WeakSet()
        self._power_on()
        world.on_reset(self._power_on)
        self._handlers: dict[int, Callable[..., Any]] = {
            m.GET_SERIAL_NUMBER.message_type: lambda: self.serial_number,
            m.GET_SERIAL_NUMBER_LENGTH.message_type: lambda: len(self.serial_number),
            m.GET_RAW_SPECTRUM.message_type: self._spectrum,
            m.GET_INTEGRATION_TIME.message_type: lambda: self.integration_us,
            m.SET_INTEGRATION_TIME.message_type: self._set_integration,
            m.SET_LAMP_ENABLE.message_type: self._set_lamp,
            m.SET_SHUTTER.message_type: self._set_shutter,
            m.GET_SCANS_TO_AVERAGE.message_type: lambda: self.scans_to_average,
            m.SET_SCANS_TO_AVERAGE.message_type: self._set_scans,
            m.GET_WAVELENGTH_COEFFICIENT_COUNT.message_type: lambda: len(self.coefficients),
            m.GET_WAVELENGTH_COEFFICIENT.message_type: self._coefficient,
        }
        if self.model.max_scans_to_average <= 1:  # no device-side averaging on this model
            for command in (m.GET_SCANS_TO_AVERAGE, m.SET_SCANS_TO_AVERAGE):
                del self._handlers[command.message_type]
        self._default_session = self.session()

    def _power_on(self) -> None:
        """The device as switched on: default settings, nothing pending on any connection, and
        a serial number drawn from its own stream (the seed's, never the seed: it must not tell
        an agent which world it is in). Runs again when the world is reset."""
        with self._lock:
            drawn = f"{self.profile.serial_prefix}{int(self._serial_stream.integers(100_000)):05d}"
            self.serial_number = self._serial_given or drawn
            self.integration_us = self.profile.default_integration_us
            self.scans_to_average = 1
            self.lamp_on = True
            self.shutter_open = True
            self._exposed_s = 0.0
            for session in list(self._sessions):
                session.clear()

    # -- connections ---------------------------------------------------------------------------
    def session(self) -> OBPSession:
        """A new connection to the device (its own input buffer)."""
        session = OBPSession(self)
        self._sessions.add(session)
        return session

    def feed(self, data: bytes) -> bytes:
        """Bytes in, reply bytes out, on the device's default connection."""
        return self._default_session.feed(data)

    # -- messages ------------------------------------------------------------------------------
    def answer(self, request: OBPMessage) -> tuple[OBPMessage | None, float]:
        """The reply to ``request`` (``None``: no reply due) and the exposure time it took, s."""
        with self._lock:
            try:
                command = _COMMANDS.get(request.message_type)
                handler = self._handlers.get(request.message_type)
                if command is None or handler is None:
                    raise _Refused(2, f"message 0x{request.message_type:08X} not supported")
                args = self._arguments(command, request.data)
                self._exposed_s = 0.0
                value = handler(*args)
                exposed = self._exposed_s
            except _Refused as refusal:
                log.debug("refused 0x%08X: %s", request.message_type, refusal)
                return _reply(request, Flag.RESPONSE | Flag.NACK, error=refusal.error), 0.0
        if command.reply is None:
            if request.flags & Flag.ACK_REQUESTED:
                return _reply(request, Flag.RESPONSE | Flag.ACK), exposed
            return None, exposed
        return _reply(request, Flag.RESPONSE, data=command.reply.pack(value)), exposed

    @staticmethod
    def _arguments(command: m.Command[Any], data: bytes) -> tuple[Any, ...]:
        if command.request is None:
            if data:
                raise _Refused(5, f"{command.name} takes no data, got {len(data)} bytes")
            return ()
        try:
            return (command.request.unpack(data),)
        except ValueError as exc:
            raise _Refused(5, f"{command.name}: {exc}") from exc

    # -- device behaviour ----------------------------------------------------------------------
    def _spectrum(self) -> np.ndarray:
        seconds = self.integration_us * 1e-6
        rate = self.optics.rate(light=self.lamp_on and self.shutter_open)
        counts = self.ccd.expose(rate, seconds, self.scans_to_average)
        self._exposed_s = seconds * self.scans_to_average
        self.world.clock.advance(self._exposed_s)
        return counts

    def _set_integration(self, micros: int) -> None:
        model = self.model
        if not model.integration_min_us <= micros <= model.integration_max_us:
            raise _Refused(
                6,
                f"integration time {micros} µs outside "
                f"{model.integration_min_us}–{model.integration_max_us} µs",
            )
        if micros % model.integration_step_us:
            raise _Refused(
                6,
                f"integration time {micros} µs is not a multiple of {model.integration_step_us} µs",
            )
        self.integration_us = micros

    def _set_scans(self, scans: int) -> None:
        if not 1 <= scans <= self.model.max_scans_to_average:
            raise _Refused(
                6, f"scans to average {scans} outside 1–{self.model.max_scans_to_average}"
            )
        self.scans_to_average = scans

    def _set_lamp(self, value: int) -> None:
        self.lamp_on = _switch(value)

    def _set_shutter(self, value: int) -> None:
        self.shutter_open = _switch(value)

    def _coefficient(self, index: int) -> float:
        if index >= len(self.coefficients):
            raise _Refused(12, f"no wavelength coefficient {index}")
        return self.coefficients[index]


class OBPSession:
    """One connection's byte stream into the device: frames are cut out and answered."""

    def __init__(self, device: OBPEmulator) -> None:
        self.device = device
        self._buffer = bytearray()
        self._exposed_s = 0.0

    def feed(self, data: bytes) -> bytes:
        """Take host bytes (any chunking); return every reply they complete."""
        self._buffer += data
        out = bytearray()
        while self._synchronise() and len(self._buffer) >= HEADER_SIZE:
            header = bytes(self._buffer[:HEADER_SIZE])
            try:
                size = HEADER_SIZE + bytes_remaining(header)
            except FramingError as exc:
                del self._buffer[:2]  # skip this start marker, look for the next one
                out += _refusal(header, exc.error)
                continue
            if len(self._buffer) < size:
                break
            frame = bytes(self._buffer[:size])
            del self._buffer[:size]
            out += self._respond(frame)
        return bytes(out)

    def clear(self) -> None:
        """Drop unanswered bytes and untaken exposure time (the device was switched off)."""
        self._buffer.clear()
        self._exposed_s = 0.0

    def take_exposure_s(self) -> float:
        """Exposure time (s) of the spectra answered since the last call."""
        exposed, self._exposed_s = self._exposed_s, 0.0
        return exposed

    def _respond(self, frame: bytes) -> bytes:
        try:
            request = decode(frame)
        except FramingError as exc:
            return _refusal(frame[:HEADER_SIZE], exc.error)
        reply, exposed = self.device.answer(request)
        self._exposed_s += exposed
        return reply.encode() if reply is not None else b""

    def _synchronise(self) -> bool:
        """Drop bytes before the next start marker; False when none is (fully) there."""
        index = self._buffer.find(_START)
        if index < 0:
            keep = 1 if self._buffer.endswith(_START[:1]) else 0
            dropped = len(self._buffer) - keep
            if dropped:
                log.warning("dropped %d bytes that are not OBP", dropped)
            del self._buffer[:dropped]
            return False
        if index:
            log.warning("dropped %d bytes before an OBP start marker", index)
            del self._buffer[:index]
        return True


def _switch(value: int) -> bool:
    if value not in (0, 1):
        raise _Refused(6, f"expected 0 or 1, got {value}")
    return bool(value)


def _reply(request: OBPMessage, flags: Flag, *, error: int = 0, data: bytes = b"") -> OBPMessage:
    return OBPMessage(request.message_type, data, flags, error, request.regarding, request.checksum)


def _refusal(header: bytes, error: int) -> bytes:
    """A NACK for a frame too malformed to decode (type, regarding and checksum type read from
    its header; an unknown checksum type is answered without)."""
    fields = HEADER.unpack(header)
    message_type, regarding, checksum = fields[4], fields[5], fields[7]
    kind = Checksum.MD5 if checksum == Checksum.MD5 else Checksum.NONE
    return OBPMessage(message_type, b"", Flag.RESPONSE | Flag.NACK, error, regarding, kind).encode()
