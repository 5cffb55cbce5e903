"""Ocean over USB through python-seabreeze, without hardware.

seabreeze's own classes run against this project's OBP emulator: its ``OBPProtocol`` and STS
spectrometer feature over a stand-in seabreeze transport (:class:`EmulatorTransport`), and its
whole USB stack (device discovery, the ``STS`` device class, ``USBTransport``) over a stand-in
pyusb device (:class:`EmulatorUSBDevice`), which is what ``SeaBreezeSpectrometer`` and the
``spec_*`` tools run on here. Both stand-ins answer an empty read as pyusb does, with
``usb.core.USBTimeoutError``.
"""

from __future__ import annotations

import array
import asyncio
import itertools
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import usb.core
from seabreeze.pyseabreeze import SeaBreezeDevice
from seabreeze.pyseabreeze.devices import STS
from seabreeze.pyseabreeze.exceptions import SeaBreezeError
from seabreeze.pyseabreeze.protocol import OBPProtocol
from seabreeze.pyseabreeze.transport import USBTransport
from seabreeze.pyseabreeze.types import PySeaBreezeProtocol, PySeaBreezeTransport

from labtools import Lab
from labtools.config import ConfigError
from labtools.drivers.ocean import SeaBreezeSpectrometer
from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import Flag, OBPMessage, decode
from labtools.errors import NotSupported, install_hint
from labtools.simulators.spectrometer import OBPEmulator, OBPSession, virtual_spectrometer
from labtools.simulators.world import Mixture, World
from tests.fresh_process import python_json

MS = "millisecond"
#: allura red AC at 504 nm: E1%1cm 540 × 496.42 g/mol / 10 (as in test_spectrometer_physics)
ALLURA_EPSILON = 540 * 496.42 / 10


def _usb_timeout() -> usb.core.USBTimeoutError:
    return usb.core.USBTimeoutError("Operation timed out", 110, -7)


class EmulatorTransport(PySeaBreezeTransport[OBPSession]):
    """A seabreeze transport into one emulator connection: writes go in, replies are read back
    in pieces of at most ``size`` bytes (64 by default, seabreeze's USB low-speed packet)."""

    def __init__(self, read_size: int = 64) -> None:
        self._session: OBPSession | None = None
        self._pending = bytearray()
        self._protocol: PySeaBreezeProtocol | None = None
        self._read_size = read_size

    def open_device(self, device: OBPSession) -> None:
        self._session = device
        self._protocol = OBPProtocol(self)

    @property
    def is_open(self) -> bool:
        return self._session is not None

    def close_device(self) -> None:
        self._session = self._protocol = None
        self._pending.clear()

    def write(self, data: bytes, timeout_ms: int | None = None, **kwargs: Any) -> int:
        assert self._session is not None, "device not opened"
        self._pending += self._session.feed(bytes(data))
        return len(data)

    def read(self, size: int | None = None, timeout_ms: int | None = None, **kwargs: Any) -> bytes:
        if not self._pending:
            raise _usb_timeout()
        size = self._read_size if size is None else size
        out = bytes(self._pending[:size])
        del self._pending[:size]
        return out

    @property
    def default_timeout_ms(self) -> int:
        return 1000

    @property
    def protocol(self) -> PySeaBreezeProtocol:
        assert self._protocol is not None, "device not opened"
        return self._protocol

    @classmethod
    def list_devices(cls) -> Iterable[OBPSession]:
        return ()

    @classmethod
    def register_model(cls, model_name: str, **kwargs: str) -> None:
        pass

    @classmethod
    def supported_model(cls, device: OBPSession) -> str | None:
        return None

    @classmethod
    def specialize(cls, model_name: str, **kwargs: str) -> type[EmulatorTransport]:
        return cls


class _Endpoint:
    def __init__(self, address: int, size: int) -> None:
        self.bEndpointAddress = address
        self.wMaxPacketSize = size


class _Interface:
    def __init__(self, *endpoints: _Endpoint) -> None:
        self._endpoints = endpoints

    def endpoints(self) -> tuple[_Endpoint, ...]:
        return self._endpoints


_addresses = itertools.count(1)


class EmulatorUSBDevice:
    """What seabreeze's ``USBTransport`` needs of a pyusb ``Device``, for an emulated STS
    (vendor 0x2457, product 0x4000; bulk OUT 0x01, bulk IN 0x81 as in seabreeze's STS class).
    ``fail_next``: an exception the next transfer raises (an unplugged cable)."""

    idVendor = 0x2457
    idProduct = 0x4000
    default_timeout = 1000  # ms, pyusb's default
    backend = None

    def __init__(self, emulator: OBPEmulator) -> None:
        self.emulator = emulator
        self.session = emulator.session()
        self.bus, self.address = 1, next(_addresses)  # seabreeze keeps one device per address
        self.fail_next: Exception | None = None
        self.resets = 0
        self._pending = bytearray()

    def is_kernel_driver_active(self, interface: int) -> bool:
        return False

    def set_configuration(self) -> None:
        pass

    def get_active_configuration(self) -> list[_Interface]:
        return [_Interface(_Endpoint(0x01, 512), _Endpoint(0x81, 512))]

    def write(self, endpoint: int, data: bytes, timeout: int | None = None) -> int:
        assert endpoint == 0x01
        self._fail()
        self._pending += self.session.feed(bytes(data))
        return len(data)

    def read(self, endpoint: int, size: int, timeout: int | None = None) -> array.array[int]:
        assert endpoint == 0x81
        self._fail()
        if not self._pending:
            raise _usb_timeout()
        out = self._pending[:size]
        del self._pending[:size]
        return array.array("B", out)

    def reset(self) -> None:
        self.resets += 1
        self._pending.clear()

    def _fail(self) -> None:
        failure, self.fail_next = self.fail_next, None
        if failure is not None:
            raise failure


def make_emulator(seed: int = 3, species: dict[str, float] | None = None) -> OBPEmulator:
    world = World(seed)
    world.fill("cuvette", Mixture.solution(3000, species or {}))
    return OBPEmulator(world, "STS", name="spec")


@pytest.fixture
def usb_bus(monkeypatch: pytest.MonkeyPatch) -> list[EmulatorUSBDevice]:
    """The USB bus pyusb sees: the emulated devices appended to the list."""
    devices: list[EmulatorUSBDevice] = []

    def find(
        find_all: bool = False, custom_match: Callable[[Any], bool] | None = None, **_: Any
    ) -> list[EmulatorUSBDevice]:
        return [d for d in devices if custom_match is None or custom_match(d)]

    monkeypatch.setattr(usb.core, "find", find)
    return devices


def sts_feature(emulator: OBPEmulator) -> tuple[Any, EmulatorTransport]:
    """seabreeze's STS spectrometer feature (its own class and constants) over the stand-in."""
    transport = EmulatorTransport()
    transport.open_device(emulator.session())
    feature_class = STS._feature_classes["spectrometer"][0]
    return feature_class(transport.protocol, 0), transport


# -- seabreeze's protocol and feature classes over the stand-in transport ------------------------
def test_seabreeze_obp_reads_the_serial_number_and_calibration() -> None:
    emulator = make_emulator()
    feature, transport = sts_feature(emulator)
    protocol = transport.protocol
    length = ord(protocol.query(0x00000101))  # seabreeze asks for the length first
    assert protocol.query(0x00000100)[:length].decode() == emulator.serial_number
    assert length == len(emulator.serial_number)
    wavelengths = feature.get_wavelengths()
    expected = np.polynomial.polynomial.polyval(np.arange(1024.0), emulator.coefficients)
    assert wavelengths.shape == (1024,)
    np.testing.assert_allclose(wavelengths, expected, rtol=1e-12)


def test_seabreeze_sets_the_integration_time_the_device_then_reports() -> None:
    emulator = make_emulator()
    feature, transport = sts_feature(emulator)
    feature.set_integration_time_micros(25_000)
    assert emulator.integration_us == 25_000
    # seabreeze has no getter: ask with OBP's and let seabreeze's receive() parse the reply
    transport.write(OBPMessage(m.GET_INTEGRATION_TIME.message_type).encode())
    assert m.GET_INTEGRATION_TIME.reply.unpack(transport.protocol.receive()) == 25_000
    with pytest.raises(SeaBreezeError, match="Integration not in"):
        feature.set_integration_time_micros(5)  # seabreeze's own range check, nothing sent
    assert emulator.integration_us == 25_000


def test_seabreeze_spectra_are_the_emulators_and_show_the_dye() -> None:
    """Same seed, same exposures: seabreeze's spectrum equals the one the emulator answers
    this project's own OBP request with; and a 20 µM allura red absorbs as Beer–Lambert says."""
    ours, theirs = make_emulator(seed=5), make_emulator(seed=5)
    feature, _ = sts_feature(theirs)
    feature.set_integration_time_micros(100_000)
    ask = m.SET_INTEGRATION_TIME
    ours.feed(OBPMessage(ask.message_type, ask.pack(100_000), Flag.ACK_REQUESTED).encode())
    reply = decode(ours.feed(OBPMessage(m.GET_RAW_SPECTRUM.message_type).encode()))
    direct = m.GET_RAW_SPECTRUM.reply.unpack(reply.data)
    counts = feature.get_intensities()
    assert counts.shape == (1024,)
    np.testing.assert_array_equal(counts, direct.astype(float))

    def mean_of(scans: int) -> np.ndarray:
        return np.mean([feature.get_intensities() for _ in range(scans)], axis=0)

    theirs.lamp_on = False  # pyseabreeze has no lamp feature: switched on the emulator here
    dark = mean_of(10)
    theirs.lamp_on = True
    reference = mean_of(10)
    theirs.world.fill("cuvette", Mixture.solution(3000, {"allura_red": 20e-6}))
    sample = mean_of(10)
    absorbance = -np.log10((sample - dark) / (reference - dark))
    nm = feature.get_wavelengths()
    at_max = absorbance[np.abs(nm - 504) <= 1.5].mean()
    assert at_max == pytest.approx(ALLURA_EPSILON * 20e-6, rel=0.05)


def test_seabreeze_does_not_report_refusals() -> None:
    """What the driver guards against: seabreeze's send() returns 0 for a NACKed setting and a
    refused query surfaces as a USB timeout (seabreeze reads on after the NACK)."""
    emulator = make_emulator()
    _, transport = sts_feature(emulator)
    assert transport.protocol.send(0x00110010, 5) == 0  # 5 µs: the emulator NACKs (error 6)
    assert emulator.integration_us == emulator.profile.default_integration_us
    with pytest.raises(usb.core.USBTimeoutError):
        transport.protocol.query(0x00180101, 9)  # no coefficient 9: NACK, error 12


# -- seabreeze's USB stack over a stand-in pyusb device -------------------------------------------
def test_seabreeze_finds_and_opens_the_emulated_sts(usb_bus: list[EmulatorUSBDevice]) -> None:
    emulator = make_emulator()
    usb_bus.append(EmulatorUSBDevice(emulator))
    (handle,) = USBTransport.list_devices()  # pyusb's find, filtered by seabreeze's USB ids
    device = SeaBreezeDevice(handle)
    device.open()
    try:
        assert (device.model, device.serial_number) == ("STS", emulator.serial_number)
        assert device.f.spectrometer.get_maximum_intensity() == 16383
        assert device.f.spectrometer.get_intensities().shape == (1024,)
    finally:
        device.close()


# -- SeaBreezeSpectrometer and the spec_* tools --------------------------------------------------
def usb_lab(usb_bus: list[EmulatorUSBDevice], emulator: OBPEmulator, **options: Any) -> Lab:
    usb_bus.append(EmulatorUSBDevice(emulator))
    device = f"seabreeze://{emulator.serial_number}"
    return Lab([SeaBreezeSpectrometer("spec", device, "STS", **options)])


def call(lab: Lab, tool: str, **arguments: object) -> dict[str, Any]:
    result = lab.call(f"spec_{tool}", arguments)
    assert result.ok and result.data is not None, result.error
    return result.data


def test_the_tools_are_the_obp_drivers(usb_bus: list[EmulatorUSBDevice]) -> None:
    over_usb = usb_lab(usb_bus, make_emulator())
    over_obp = Lab([virtual_spectrometer("spec", World(0), "STS")])
    schemas = {s.name: s.input_schema for s in over_obp.tool_specs()}
    assert {s.name: s.input_schema for s in over_usb.tool_specs()} == schemas


def test_the_tools_measure_over_seabreeze(usb_bus: list[EmulatorUSBDevice]) -> None:
    emulator = make_emulator(seed=8)
    lab = usb_lab(usb_bus, emulator)
    assert call(lab, "set_integration_time", time={"value": 100, "unit": MS})
    assert emulator.integration_us == 100_000
    call(lab, "acquire_dark", scans=10)
    assert not emulator.lamp_on  # dark: the lamp-enable line, sent over seabreeze's transport
    call(lab, "acquire_reference", scans=10)
    assert emulator.lamp_on
    emulator.world.fill("cuvette", Mixture.solution(3000, {"allura_red": 20e-6}))
    result = call(lab, "measure_absorbance", scans=10)
    assert result["peak_wavelength"]["value"] == pytest.approx(504, abs=6)
    full = lab.data(result["data"])
    nm = np.array(full["wavelengths_nm"])
    absorbance = np.array([np.nan if a is None else a for a in full["absorbance"]])
    assert nm.size == 1024
    at_max = np.nanmean(absorbance[np.abs(nm - 504) <= 1.5])
    assert at_max == pytest.approx(ALLURA_EPSILON * 20e-6, rel=0.05)
    state = lab.state()["spec"]
    assert (state["model"], state["serial_number"]) == ("STS", emulator.serial_number)


def test_the_same_calls_give_the_same_counts_as_the_obp_driver(
    usb_bus: list[EmulatorUSBDevice],
) -> None:
    def counts(lab: Lab) -> list[list[float]]:
        call(lab, "set_integration_time", time={"value": 50, "unit": MS})
        handles = [
            call(lab, tool, scans=1)["data"] for tool in ("acquire_dark", "acquire_spectrum")
        ]
        return [lab.data(handle)["counts"] for handle in handles]

    emulator = make_emulator(seed=11)
    over_obp = Lab([virtual_spectrometer("spec", make_emulator(seed=11).world, "STS")])
    assert counts(usb_lab(usb_bus, emulator)) == counts(over_obp)


def test_a_time_seabreeze_will_not_send_is_a_typed_error(usb_bus: list[EmulatorUSBDevice]) -> None:
    emulator = make_emulator()
    lab = usb_lab(usb_bus, emulator)
    call(lab, "set_integration_time", time={"value": 20, "unit": MS})
    # within the STS's 0.01–85000 ms, but seabreeze's STS bound excludes 85 s itself
    result = lab.call("spec_set_integration_time", {"time": {"value": 85, "unit": "second"}})
    assert not result.ok and result.error is not None
    assert (result.error["code"], result.error["field"]) == ("out_of_range", "/time")
    assert "not including" in (result.error["hint"] or "")
    assert emulator.integration_us == 20_000  # nothing was sent
    below = lab.call("spec_set_integration_time", {"time": {"value": 5, "unit": "microsecond"}})
    assert below.error is not None
    assert (below.error["code"], below.error["field"]) == ("out_of_range", "/time")
    assert lab.state()["spec"]["integration_time"] == {"value": 20.0, "unit": MS}


def test_a_dropped_usb_link_is_reopened(usb_bus: list[EmulatorUSBDevice]) -> None:
    emulator = make_emulator()
    lab = usb_lab(usb_bus, emulator)
    call(lab, "set_integration_time", time={"value": 20, "unit": MS})
    usb_bus[0].fail_next = usb.core.USBError("No such device", 19)
    result = lab.call("spec_acquire_spectrum", {"scans": 1})
    assert result.error is not None and result.error["code"] == "instrument_error"
    assert "reopens" in (result.error["hint"] or "")
    assert lab.spec.instrument.link_lost
    assert call(lab, "acquire_spectrum", scans=1)["max_counts"] > 0
    assert not lab.spec.instrument.link_lost
    assert emulator.integration_us == 20_000  # re-sent after reopening


def test_a_lab_file_selects_the_usb_device(
    usb_bus: list[EmulatorUSBDevice], tmp_path: Path
) -> None:
    emulator = make_emulator()
    usb_bus.append(EmulatorUSBDevice(emulator))
    path = tmp_path / "usb_lab.toml"
    path.write_text(
        "[instruments.spec]\n"
        'class = "labtools.drivers.ocean.usb:SeaBreezeSpectrometer"\n'
        'device = "seabreeze://"\n'
        'model = "STS"\n'
    )
    lab = Lab.load(path)
    call(lab, "set_integration_time", time={"value": 30, "unit": MS})
    assert emulator.integration_us == 30_000
    assert lab.state()["spec"]["serial_number"] == emulator.serial_number
    path.write_text(path.read_text().replace("seabreeze://", "usb:STS"))
    with pytest.raises(ConfigError, match="device"):
        Lab.load(path)


def test_no_matching_device_names_what_is_there(usb_bus: list[EmulatorUSBDevice]) -> None:
    emulator = make_emulator()
    usb_bus.append(EmulatorUSBDevice(emulator))
    lab = Lab([SeaBreezeSpectrometer("spec", "seabreeze://NOPE1", "STS")])
    result = lab.call("spec_set_integration_time", {"time": {"value": 30, "unit": MS}})
    assert result.error is not None and result.error["code"] == "instrument_error"
    assert f"STS:{emulator.serial_number}" in (result.error["hint"] or "")


def test_without_seabreeze_setup_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "seabreeze.pyseabreeze", None)  # import fails
    spectrometer = SeaBreezeSpectrometer("spec", "seabreeze://", "STS")
    with pytest.raises(NotSupported) as refused:
        asyncio.run(spectrometer.setup())
    assert install_hint("ocean") in (refused.value.hint or "")


def test_seabreeze_is_imported_only_when_a_device_is_opened() -> None:
    loaded = python_json(
        "import json, sys\n"
        "from labtools import Lab\n"
        "from labtools.drivers.ocean import SeaBreezeSpectrometer\n"
        "lab = Lab([SeaBreezeSpectrometer('spec', 'seabreeze://S01234', 'STS')])\n"
        "lab.tools()\n"
        "roots = {'seabreeze', 'usb'}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in roots)))"
    )
    assert loaded == []


def test_a_missing_libusb_says_what_to_install() -> None:
    """seabreeze's RuntimeError for a pyusb without libusb, and pyusb's own NoBackendError,
    are instrument errors whose hint names libusb."""
    import usb.core

    from labtools.drivers.ocean.seabreeze_link import _translate
    from labtools.drivers.usb import LIBUSB_HINT

    for exc in (
        RuntimeError("No pyusb backend found"),
        usb.core.NoBackendError("No backend available"),
    ):
        error, reopen = _translate("spec", "open", exc)
        assert error.code == "instrument_error" and error.hint == LIBUSB_HINT and not reopen
