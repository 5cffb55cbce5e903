"""The OBP driver through a fault-injecting proxy to the emulator's TCP server.

For every fault: the faulted call returns (a typed error, or correct data when the fault is
harmless), no later call returns stale or mislabelled data (each spectrum is compared with what
the emulator produced for it, and with the settings it had), no exposure reaches the device
twice, and the next call succeeds. Timeouts are generous; nothing asserts on wall-clock time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from obp_proxy import REQUEST_FAULTS, OBPProxy, Tap

from labtools import Lab
from labtools.drivers.ocean import OBPSpectrometer
from labtools.drivers.ocean import messages as m
from labtools.result import ToolResult
from labtools.simulators.spectrometer import OBPEmulator, OBPSocketServer
from labtools.simulators.world import Mixture, World

TIMEOUT_S = 1.0
#: the deadline of the calls before a fault is armed: a loaded machine's emulator may take more
#: than TIMEOUT_S to answer the first (the device's identity, on connecting)
PATIENCE_S = 60.0
#: a reply held back this long arrives during the next request (its deadline is 1 s later)
LATE_S = 1.5
SPECTRUM = m.GET_RAW_SPECTRUM.message_type


@dataclass
class Rig:
    lab: Lab
    spec: OBPSpectrometer
    emulator: OBPEmulator
    tap: Tap
    proxy: OBPProxy

    def set_time(self, ms: float) -> ToolResult:
        return self.lab.call(
            "spec_set_integration_time", {"time": {"value": ms, "unit": "millisecond"}}
        )

    def spectrum(self, tool: str = "spec_acquire_spectrum") -> ToolResult:
        return self.lab.call(tool, {"scans": 1})

    def check(self, result: ToolResult, *, ms: float, light: bool = True) -> None:
        """``result`` is the spectrum the emulator last produced, labelled as it was taken."""
        assert result.ok, result.error
        taken = self.tap.last(SPECTRUM)
        counts = np.asarray(self.lab.data(result.data["data"])["counts"])
        np.testing.assert_array_equal(counts, np.frombuffer(taken.data, dtype="<u2"))
        assert result.data["integration_time"]["value"] == pytest.approx(ms)
        assert taken.integration_us == round(ms * 1000)
        assert taken.light is light
        assert taken.scans_to_average == 1


@pytest.fixture
def rig() -> Iterator[Rig]:
    world = World(seed=3)
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 10e-6}))
    emulator = OBPEmulator(world, "FLAME-S")
    tap = Tap(emulator)
    with OBPSocketServer(emulator) as server, OBPProxy(server.port) as proxy:
        spec = OBPSpectrometer("spec", proxy.url, timeout=PATIENCE_S)
        lab = Lab([spec])
        try:
            assert lab.call("spec_set_integration_time", _ms(20)).ok
            spec._timeout = spec._need_link().timeout = TIMEOUT_S  # the faults' deadlines
            yield Rig(lab, spec, emulator, tap, proxy)
        finally:
            lab.close()


def _ms(value: float) -> dict:
    return {"time": {"value": value, "unit": "millisecond"}}


#: fault → the faulted call's error code (None: the call succeeds with correct data)
ON_A_SPECTRUM = {
    "delay": "timeout",
    "flip": "instrument_error",  # MD5 mismatch
    "truncate": "timeout",
    "drop_mid_frame": "instrument_error",  # the link dropped
    "duplicate": None,
    "garbage": None,
    "drop_request": "timeout",
    "close": "instrument_error",
}


@pytest.mark.parametrize(("kind", "code"), ON_A_SPECTRUM.items())
def test_a_fault_on_a_spectrum(rig: Rig, kind: str, code: str | None) -> None:
    rig.check(rig.spectrum(), ms=20)
    before = rig.tap.count(SPECTRUM)
    fault = rig.proxy.arm(kind, SPECTRUM, seconds=LATE_S)  # type: ignore[arg-type]
    result = rig.spectrum()
    if code is None:
        rig.check(result, ms=20)
    else:
        assert result.error["code"] == code, result.error
        assert result.error["hint"]
    exposed = 0 if kind in REQUEST_FAULTS else 1
    assert rig.tap.count(SPECTRUM) - before == exposed  # the faulted call: at most once
    # at once: a delayed reply arrives during this call and must be dropped
    rig.check(rig.spectrum(), ms=20)
    assert fault.fired.wait(5.0)
    for _ in range(2):
        rig.check(rig.spectrum(), ms=20)
    assert rig.tap.count(SPECTRUM) - before == exposed + 3  # nothing repeated
    if kind in ("delay", "duplicate"):
        assert rig.spec.link is not None and rig.spec.link.dropped == 1  # the extra reply
    if kind in ("drop_mid_frame", "close"):
        assert rig.proxy.connections == 2  # reopened once


@pytest.mark.parametrize(
    "offset",
    [12, 22, 40, 100, -1],
    ids=["regarding", "checksum-type", "length", "payload", "footer"],
)
def test_a_flipped_byte_anywhere_is_never_data(rig: Rig, offset: int) -> None:
    rig.check(rig.spectrum(), ms=20)
    rig.proxy.arm("flip", SPECTRUM, offset=offset)
    result = rig.spectrum()
    assert result.error["code"] in ("instrument_error", "timeout"), result.error
    rig.check(rig.spectrum(), ms=20)


SETTING_FAULTS = ["delay", "flip", "truncate", "drop_mid_frame", "drop_request", "close"]


@pytest.mark.parametrize("kind", SETTING_FAULTS)
def test_a_fault_on_setting_the_integration_time(rig: Rig, kind: str) -> None:
    """Whether or not the device took the new time, the next spectrum is taken and labelled
    at the time the driver reports."""
    rig.check(rig.spectrum(), ms=20)
    fault = rig.proxy.arm(kind, m.SET_INTEGRATION_TIME.message_type, seconds=LATE_S)  # type: ignore[arg-type]
    result = rig.set_time(10)
    assert result.error["code"] in ("timeout", "instrument_error"), result.error
    assert rig.lab.state()["spec"]["integration_time"]["value"] == 20
    rig.check(rig.spectrum(), ms=20)
    assert fault.fired.wait(5.0)
    assert rig.set_time(10).ok
    rig.check(rig.spectrum(), ms=10)


@pytest.mark.parametrize("kind", SETTING_FAULTS)
def test_a_fault_on_switching_the_lamp(rig: Rig, kind: str) -> None:
    """A lamp switch that may or may not have happened is switched again before a scan."""
    rig.check(rig.spectrum(), ms=20)
    fault = rig.proxy.arm(kind, m.SET_LAMP_ENABLE.message_type, seconds=LATE_S)  # type: ignore[arg-type]
    before = rig.tap.count(SPECTRUM)
    result = rig.spectrum("spec_acquire_dark")
    assert result.error["code"] in ("timeout", "instrument_error"), result.error
    assert rig.tap.count(SPECTRUM) == before  # no exposure with the lamp in doubt
    rig.check(rig.spectrum(), ms=20, light=True)
    assert fault.fired.wait(5.0)
    rig.check(rig.spectrum("spec_acquire_dark"), ms=20, light=False)
    rig.check(rig.spectrum(), ms=20, light=True)


def test_a_link_that_stays_down_fails_with_a_hint_then_recovers(rig: Rig) -> None:
    rig.check(rig.spectrum(), ms=20)
    rig.proxy.stop()
    dropped = rig.spectrum()
    assert dropped.error["code"] == "instrument_error"
    assert "next call reopens" in dropped.error["hint"]
    down = rig.spectrum()
    assert down.error["code"] == "instrument_error"
    assert "attempts to reopen" in down.error["message"]
    assert "next call tries again" in down.error["hint"]
    rig.proxy.start()  # the same port
    rig.check(rig.spectrum(), ms=20)


def test_lab_connect_reopens_a_dropped_link(rig: Rig) -> None:
    rig.check(rig.spectrum(), ms=20)
    rig.proxy.arm("close", SPECTRUM)
    assert rig.spectrum().error["code"] == "instrument_error"
    assert rig.spec.link_lost and rig.proxy.connections == 1
    rig.lab.connect()  # no tool call: the lab sets the spectrometer up again
    assert not rig.spec.link_lost and rig.proxy.connections == 2
    rig.check(rig.spectrum(), ms=20)


def test_the_emulator_saw_every_setting_at_most_as_often_as_needed(rig: Rig) -> None:
    """Fault-free, through the proxy: one request per action, and MD5 on by default."""
    counts = {}
    for _ in range(3):
        rig.check(rig.spectrum(), ms=20)
    for command in (m.SET_INTEGRATION_TIME, m.SET_LAMP_ENABLE, m.SET_SCANS_TO_AVERAGE):
        counts[command.name] = rig.tap.count(command.message_type)
    assert counts == {
        "set integration time": 1,
        "set lamp enable": 1,
        "set scans to average": 1,
    }
    assert rig.tap.count(SPECTRUM) == 3
    assert rig.spec.link is not None and rig.spec.link.require_checksum is True


def test_checksums_are_on_by_default_so_a_flipped_payload_byte_is_an_instrument_error() -> None:
    """Built with no ``md5`` argument (as a lab file without the key builds it), a byte
    flipped in a spectrum's payload is a typed ``instrument_error`` whose hint says the
    belief may be stale; with ``md5=False`` (the switch) the same flip comes back as data."""
    from labtools.lab import STALE_BELIEF

    world = World(seed=3)
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 10e-6}))
    emulator = OBPEmulator(world, "FLAME-S")
    tap = Tap(emulator)
    outcomes = {}
    with OBPSocketServer(emulator) as server, OBPProxy(server.port) as proxy:
        for md5 in (None, False):
            kwargs = {} if md5 is None else {"md5": md5}
            lab = Lab([OBPSpectrometer("spec", proxy.url, timeout=PATIENCE_S, **kwargs)])
            try:
                assert lab.call("spec_set_integration_time", _ms(20)).ok
                fault = proxy.arm("flip", SPECTRUM, offset=100)
                result = lab.call("spec_acquire_spectrum", {"scans": 1})
                assert fault.fired.wait(5.0)
                if result.ok:
                    counts = np.asarray(lab.data(result.data["data"])["counts"])
                    sent = np.frombuffer(tap.last(SPECTRUM).data, dtype="<u2")
                    outcomes[md5] = ("data", bool(np.array_equal(counts, sent)))
                else:
                    outcomes[md5] = (result.error["code"], STALE_BELIEF in result.error["hint"])
            finally:
                lab.close()
    assert outcomes == {None: ("instrument_error", True), False: ("data", False)}


def test_the_virtual_spectrometer_checksums_too() -> None:
    from labtools.drivers.ocean.protocol import Checksum

    with Lab.virtual(seed=0) as lab:
        link = lab.instruments["spec"].link
        assert link is not None and link.checksum == Checksum.MD5 and link.require_checksum
