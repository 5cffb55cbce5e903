"""The OBP driver against scripted device traffic (``expected_protocol``).

Frames are built with the codec whose bytes ``test_obp_frames.py`` pins down by hand.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labtools import Lab
from labtools.drivers.ocean import OBPError, OBPSpectrometer
from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import Checksum, Flag, OBPMessage
from labtools.errors import InstrumentError, OutOfRange, PreconditionFailed, Timeout
from labtools.transport.testing import TIMEOUT, expected_protocol
from labtools.units import Quantity as Q

COEFFICIENTS = (177.8, 0.3867, -1.71e-5, -2.0e-10)


class Wire:
    """The traffic one driver produces, numbered as the driver numbers its requests
    (``regarding`` 1, 2, …) and with MD5 both ways unless ``md5=False``."""

    def __init__(self, *, md5: bool = True) -> None:
        self.checksum = Checksum.MD5 if md5 else Checksum.NONE
        self.ident = 0

    def request(self, command: m.Command[Any], *args: Any) -> bytes:
        self.ident += 1
        flags = Flag.ACK_REQUESTED if command.acknowledged else Flag.NONE
        return OBPMessage(
            command.message_type,
            command.pack(*args),
            flags,
            regarding=self.ident,
            checksum=self.checksum,
        ).encode()

    def reply(
        self,
        command: m.Command[Any],
        value: Any = None,
        *,
        error: int = 0,
        regarding: int | None = None,
        checksum: Checksum | None = None,
    ) -> bytes:
        """The device's answer to the latest request (or to request ``regarding``)."""
        if error:
            flags, data = Flag.RESPONSE | Flag.NACK, b""
        elif command.reply is None:
            flags, data = Flag.RESPONSE | Flag.ACK, b""
        else:
            flags, data = Flag.RESPONSE, command.reply.pack(value)
        return OBPMessage(
            command.message_type,
            data,
            flags,
            error,
            self.ident if regarding is None else regarding,
            self.checksum if checksum is None else checksum,
        ).encode()

    def exchange(
        self, command: m.Command[Any], *args: Any, answer: Any = None
    ) -> tuple[bytes, bytes]:
        sent = self.request(command, *args)
        return sent, self.reply(command, answer)

    def refused(self, command: m.Command[Any], *args: Any, error: int) -> tuple[bytes, bytes]:
        sent = self.request(command, *args)
        return sent, self.reply(command, error=error)

    def identify(self) -> list[tuple[bytes, bytes]]:
        pairs = [
            self.exchange(m.GET_SERIAL_NUMBER, answer="FLMS01234"),
            self.exchange(m.GET_WAVELENGTH_COEFFICIENT_COUNT, answer=4),
        ]
        pairs += [
            self.exchange(m.GET_WAVELENGTH_COEFFICIENT, i, answer=c)
            for i, c in enumerate(COEFFICIENTS)
        ]
        return pairs


def spectrum(level: int, pixels: int = 2048) -> np.ndarray:
    return np.full(pixels, level, dtype=np.uint16)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_constructor_does_no_io_and_schemas_export_offline() -> None:
    spec = OBPSpectrometer("spec", "socket://127.0.0.1:1", "FLAME-S")
    assert spec.transport is None
    tools = {t["name"]: t for t in Lab([spec]).tools()}
    assert "spec_set_integration_time" in tools
    time_schema = tools["spec_set_integration_time"]["input_schema"]["properties"]["time"]
    assert "1–65000 millisecond" in time_schema["description"]
    sts = OBPSpectrometer("sts", "socket://127.0.0.1:1", "sts")
    assert sts.limits.integration_time.low == 0.01


def test_unknown_model_and_bad_transport() -> None:
    with pytest.raises(ValueError, match="known: FLAME-S, STS, ST"):
        OBPSpectrometer("spec", "loop://", "USB9999")
    with pytest.raises(TypeError):
        OBPSpectrometer("spec", 42)  # type: ignore[arg-type]
    # a link of no known kind, or a mapping without one, fails when the lab is built, not at
    # the first call
    with pytest.raises(ValueError, match=r"cannot tell what kind of link 'tcp:10\.0\.0\.2:5000'"):
        OBPSpectrometer("spec", "tcp:10.0.0.2:5000")
    with pytest.raises(ValueError, match="needs a 'uri'"):
        OBPSpectrometer("spec", {"timeout": 2.0})


def test_a_lab_file_with_a_bad_address_is_a_config_error_when_it_loads() -> None:
    from labtools.config import ConfigError
    from labtools.lab import Lab

    example = Path(__file__).parents[1] / "docs" / "examples" / "ocean_tcp.toml"
    with pytest.raises(ConfigError, match=r"\[instruments\.spec\].*cannot tell what kind"):
        Lab.load(example, address="192.0.2.10:5000")


def test_setup_reads_serial_and_calibration() -> None:
    w = Wire()
    with expected_protocol(w.identify()) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        assert spec.serial_number == "FLMS01234"
        nm = spec.wavelengths()
        assert nm.size == 2048
        assert nm[0] == pytest.approx(177.8, abs=1e-4)
        assert nm[1000] == pytest.approx(
            np.polynomial.polynomial.polyval(1000, COEFFICIENTS), abs=1e-3
        )
        assert spec.state()["serial_number"] == "FLMS01234"


def test_a_full_absorbance_measurement_on_the_wire() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 100_000),
        # dark: lamp off, device averages 3 scans
        w.exchange(m.SET_LAMP_ENABLE, 0),
        w.exchange(m.SET_SCANS_TO_AVERAGE, 3),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(1000)),
        # reference: lamp on; scans unchanged, so not resent
        w.exchange(m.SET_LAMP_ENABLE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(41000)),
        # sample: lamp already on, averaging changes to 5
        w.exchange(m.SET_SCANS_TO_AVERAGE, 5),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(5000)),
    ]
    with expected_protocol(pairs) as link:
        lab = Lab([OBPSpectrometer("spec", link)])
        assert lab.call("spec_set_integration_time", {"time": {"value": 0.1, "unit": "second"}}).ok
        assert lab.call("spec_acquire_dark", {"scans": 3}).data["max_counts"] == 1000
        assert lab.call("spec_acquire_reference", {"scans": 3}).data["max_counts"] == 41000
        result = lab.call("spec_measure_absorbance", {"scans": 5})
        assert result.ok, result.error
        assert result.data["peak_absorbance"] == pytest.approx(1.0, abs=1e-4)


def test_md5_checksums_both_ways() -> None:
    for md5 in (True, False):
        w = Wire(md5=md5)
        pairs = [*w.identify(), w.exchange(m.SET_INTEGRATION_TIME, 20_000)]
        with expected_protocol(pairs) as link:
            spec = OBPSpectrometer("spec", link, md5=md5)
            run(spec.setup())
            run(spec.set_integration_time(Q(20, "millisecond")))


def test_integration_time_converts_at_the_boundary_and_rounds_to_device_steps() -> None:
    w = Wire()
    # ST: 10 µs steps, so 2.004 ms → 2000 µs
    pairs = [*w.identify(), w.exchange(m.SET_INTEGRATION_TIME, 2000)]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link, "ST")
        run(spec.setup())
        run(spec.set_integration_time(Q(2.004, "millisecond")))


def test_out_of_range_integration_time_is_refused_before_any_io() -> None:
    w = Wire()
    with expected_protocol(w.identify()) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        with pytest.raises(OutOfRange, match="outside"):
            run(spec._set_integration_time(70.0))
        result = Lab([spec]).call(
            "spec_set_integration_time", {"time": {"value": 0.5, "unit": "millisecond"}}
        )
        assert result.error["code"] == "out_of_range"


def test_driver_side_averaging_when_the_model_cannot_average() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 10_000),
        w.exchange(m.SET_LAMP_ENABLE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(100, 1516)),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(200, 1516)),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("st", link, "ST")
        lab = Lab([spec])
        lab.call("st_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}})
        result = lab.call("st_acquire_spectrum", {"scans": 2})
        assert result.data["max_counts"] == 150.0


def test_nack_becomes_a_typed_error_with_the_obp_meaning() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.refused(m.SET_INTEGRATION_TIME, 50_000, error=6),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        with pytest.raises(OBPError, match="payload data invalid") as info:
            run(spec.set_integration_time(Q(50, "millisecond")))
        assert info.value.obp_error == 6
        assert info.value.code == "instrument_error"
        assert isinstance(info.value, InstrumentError)


def test_read_timeout_becomes_timeout_and_the_link_resynchronises() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        (w.request(m.SET_INTEGRATION_TIME, 50_000), TIMEOUT),
        # the late ACK arrives unprompted; the driver must drop it, not take it as a reply
        (None, w.reply(m.SET_INTEGRATION_TIME)),
        w.exchange(m.SET_INTEGRATION_TIME, 60_000),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        with pytest.raises(Timeout, match="set integration time"):
            run(spec.set_integration_time(Q(50, "millisecond")))
        run(spec.set_integration_time(Q(60, "millisecond")))


def test_reply_to_another_message_is_an_error() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        (w.request(m.SET_LAMP_ENABLE, 1), w.reply(m.GET_SERIAL_NUMBER, "X")),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        spec._integration_s = 0.01
        spec._device_integration_us = 10_000
        with pytest.raises(InstrumentError, match="reply is for message 0x00000100"):
            run(spec._acquire(1, dark=False))


def test_wrong_pixel_count_is_an_error() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 10_000),
        w.exchange(m.SET_LAMP_ENABLE, 0),
        w.exchange(m.SET_SCANS_TO_AVERAGE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(1, 1024)),
    ]
    with expected_protocol(pairs) as link:
        lab = Lab([OBPSpectrometer("spec", link)])
        lab.call("spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}})
        result = lab.call("spec_acquire_dark", {"scans": 1})
        assert result.error["code"] == "instrument_error"
        assert "1024 pixels" in result.error["message"]


def test_acquiring_without_an_integration_time_changes_nothing() -> None:
    w = Wire()
    with expected_protocol(w.identify()) as link:
        lab = Lab([OBPSpectrometer("spec", link)])
        result = lab.call("spec_acquire_dark", {"scans": 1})
        assert result.error["code"] == "precondition_failed"


def test_not_connected() -> None:
    spec = OBPSpectrometer("spec", "loop://")
    with pytest.raises(PreconditionFailed):
        spec.wavelengths()


def test_a_setup_that_fails_leaves_the_driver_disconnected() -> None:
    pairs = [Wire().refused(m.GET_SERIAL_NUMBER, error=13)]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        with pytest.raises(OBPError, match="internal device error"):
            run(spec.setup())
        with pytest.raises(PreconditionFailed, match="not connected"):
            run(spec.set_integration_time(Q(30, "millisecond")))


def test_setup_from_a_uri_opens_and_stop_closes() -> None:
    # loop:// echoes the request back: the driver sees its own request, which is not a reply
    spec = OBPSpectrometer("spec", {"uri": "loop://", "timeout": 0.2})
    with pytest.raises(InstrumentError, match=r"neither ACK nor NACK|malformed reply"):
        run(spec.setup())
    assert spec.transport is None


def test_reply_codec_errors_are_instrument_errors() -> None:
    w = Wire()
    pairs = [w.exchange(m.GET_SERIAL_NUMBER, answer="X")]
    sent = w.request(m.GET_WAVELENGTH_COEFFICIENT_COUNT)
    bad = OBPMessage(
        m.GET_WAVELENGTH_COEFFICIENT_COUNT.message_type,
        struct.pack("<H", 4),
        Flag.RESPONSE,
        regarding=w.ident,
        checksum=Checksum.MD5,
    ).encode()
    pairs.append((sent, bad))
    with expected_protocol(pairs) as link, pytest.raises(InstrumentError, match="malformed"):
        run(OBPSpectrometer("spec", link).setup())


def test_a_recorded_session_replays_against_the_driver() -> None:
    """Record traffic with the emulator, replay it strictly: golden traffic for the driver."""
    from labtools.simulators.spectrometer import virtual_spectrometer
    from labtools.simulators.world import Mixture, World

    def session(lab: Lab) -> list[float]:
        lab.call("spec_set_integration_time", {"time": {"value": 40, "unit": "millisecond"}})
        lab.call("spec_acquire_dark", {"scans": 2})
        lab.call("spec_acquire_reference", {"scans": 2})
        return lab.call("spec_measure_absorbance", {"scans": 3}).data["absorbance"]

    world = World(seed=5)
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 10e-6}))
    live = virtual_spectrometer("spec", world)
    recording = live.transport.record()
    recorded = session(Lab([live]))
    with expected_protocol(recording.pairs()) as link:
        assert session(Lab([OBPSpectrometer("spec", link)])) == recorded  # MD5 both ways


def test_reconnecting_sends_the_integration_time_again() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 30_000),
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 30_000),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        run(spec.set_integration_time(Q(30, "millisecond")))
        run(spec.stop())
        run(spec.setup())


def test_dark_with_the_shutter() -> None:
    w = Wire()
    pairs = [
        *w.identify(),
        w.exchange(m.SET_INTEGRATION_TIME, 10_000),
        w.exchange(m.SET_SHUTTER, 0),
        w.exchange(m.SET_SCANS_TO_AVERAGE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(900)),
        w.exchange(m.SET_SHUTTER, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(9000)),
    ]
    with expected_protocol(pairs) as link:
        lab = Lab([OBPSpectrometer("spec", link, dark_with="shutter")])
        lab.call("spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}})
        assert lab.call("spec_acquire_dark", {"scans": 1}).data["max_counts"] == 900
        assert lab.call("spec_acquire_spectrum", {"scans": 1}).data["max_counts"] == 9000
    with pytest.raises(ValueError, match="dark_with"):
        OBPSpectrometer("spec", "loop://", dark_with="curtain")  # type: ignore[arg-type]


# -- trust: reply matching, device state after a failure, checksums -----------------------------
def test_a_stale_reply_is_dropped_not_returned() -> None:
    w = Wire()
    pairs = [*w.identify(), w.exchange(m.SET_INTEGRATION_TIME, 10_000)]
    pairs += [w.exchange(m.SET_LAMP_ENABLE, 1), w.exchange(m.SET_SCANS_TO_AVERAGE, 1)]
    sent = w.request(m.GET_RAW_SPECTRUM)
    stale = w.reply(m.GET_RAW_SPECTRUM, spectrum(111), regarding=w.ident - 1)
    pairs.append((sent, stale + w.reply(m.GET_RAW_SPECTRUM, spectrum(222))))
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        lab = Lab([spec])
        assert lab.call(
            "spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}}
        ).ok
        assert lab.call("spec_acquire_spectrum", {"scans": 1}).data["max_counts"] == 222
        assert spec.link is not None and spec.link.dropped == 1


def test_after_a_timeout_on_a_setter_the_device_is_read_back_before_a_scan() -> None:
    w = Wire()
    pairs = [*w.identify(), w.exchange(m.SET_INTEGRATION_TIME, 20_000)]
    pairs += [(w.request(m.SET_INTEGRATION_TIME, 10_000), TIMEOUT)]
    pairs += [
        w.exchange(m.GET_INTEGRATION_TIME, answer=10_000),  # the device took it after all
        w.exchange(m.SET_INTEGRATION_TIME, 20_000),  # so the time the driver reports is sent
        w.exchange(m.SET_LAMP_ENABLE, 1),
        w.exchange(m.SET_SCANS_TO_AVERAGE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(500)),
    ]
    with expected_protocol(pairs) as link:
        lab = Lab([OBPSpectrometer("spec", link)])
        assert lab.call(
            "spec_set_integration_time", {"time": {"value": 20, "unit": "millisecond"}}
        ).ok
        failed = lab.call(
            "spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}}
        )
        assert failed.error["code"] == "timeout"
        result = lab.call("spec_acquire_spectrum", {"scans": 1})
        assert result.data["integration_time"]["value"] == 20


def test_a_light_switch_in_doubt_and_a_missing_getter_mean_re_applying() -> None:
    w = Wire()
    pairs = [*w.identify(), w.exchange(m.SET_INTEGRATION_TIME, 20_000)]
    pairs += [(w.request(m.SET_LAMP_ENABLE, 0), TIMEOUT)]
    pairs += [(w.request(m.SET_INTEGRATION_TIME, 30_000), TIMEOUT)]
    pairs += [
        w.refused(m.GET_INTEGRATION_TIME, error=2),  # no getter: send the time again
        w.exchange(m.SET_INTEGRATION_TIME, 20_000),
        w.exchange(m.SET_LAMP_ENABLE, 1),  # the lamp may be off: switch it on
        w.exchange(m.SET_SCANS_TO_AVERAGE, 1),
        w.exchange(m.GET_RAW_SPECTRUM, answer=spectrum(7)),
    ]
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        run(spec.set_integration_time(Q(20, "millisecond")))
        with pytest.raises(Timeout):
            run(spec._acquire(1, dark=True))
        assert spec._light_on is None
        with pytest.raises(Timeout):
            run(spec.set_integration_time(Q(30, "millisecond")))
        assert run(spec._acquire(1, dark=False)).max() == 7


def test_a_corrupted_reply_is_an_error_never_data() -> None:
    w = Wire()
    pairs = [w.exchange(m.GET_SERIAL_NUMBER, answer="FLMS01234")]
    sent = w.request(m.GET_WAVELENGTH_COEFFICIENT_COUNT)
    damaged = bytearray(w.reply(m.GET_WAVELENGTH_COEFFICIENT_COUNT, 4))
    damaged[24] ^= 0x01  # the immediate data: 4 → 5
    pairs.append((sent, bytes(damaged)))
    with expected_protocol(pairs) as link, pytest.raises(InstrumentError, match="MD5"):
        run(OBPSpectrometer("spec", link).setup())


def test_checksums_once_seen_are_required() -> None:
    w = Wire()
    pairs = [w.exchange(m.GET_SERIAL_NUMBER, answer="FLMS01234")]
    sent = w.request(m.GET_WAVELENGTH_COEFFICIENT_COUNT)
    pairs.append((sent, w.reply(m.GET_WAVELENGTH_COEFFICIENT_COUNT, 4, checksum=Checksum.NONE)))
    with expected_protocol(pairs) as link, pytest.raises(InstrumentError, match="no MD5"):
        run(OBPSpectrometer("spec", link).setup())


def test_a_device_that_never_checksums_is_accepted_unless_md5_is_required() -> None:
    def plain_replies() -> list[tuple[bytes, bytes]]:
        w = Wire()
        pairs = []
        for sent, _ in w.identify():
            ident = int.from_bytes(sent[12:16], "little")
            kind = int.from_bytes(sent[8:12], "little")
            command = next(c for c in m.ALL_COMMANDS if c.message_type == kind)
            value = {
                m.GET_SERIAL_NUMBER: "FLMS01234",
                m.GET_WAVELENGTH_COEFFICIENT_COUNT: 4,
            }.get(command, COEFFICIENTS[sent[24]] if command is m.GET_WAVELENGTH_COEFFICIENT else 0)
            pairs.append((sent, w.reply(command, value, regarding=ident, checksum=Checksum.NONE)))
        return pairs

    with expected_protocol(plain_replies()) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        assert spec.link is not None and spec.link.require_checksum is False
    with (
        expected_protocol(plain_replies()[:1]) as link,
        pytest.raises(InstrumentError, match="no MD5"),
    ):
        run(OBPSpectrometer("spec", link, md5=True).setup())


def test_a_device_that_refuses_md5_is_spoken_to_without() -> None:
    w = Wire()
    sent = w.request(m.GET_SERIAL_NUMBER)
    pairs = [(sent, w.reply(m.GET_SERIAL_NUMBER, error=8, checksum=Checksum.NONE))]
    plain = Wire(md5=False)
    plain.ident = w.ident
    pairs += plain.identify()
    with expected_protocol(pairs) as link:
        spec = OBPSpectrometer("spec", link)
        run(spec.setup())
        assert spec.serial_number == "FLMS01234"
        assert spec.link is not None and spec.link.checksum == Checksum.NONE
