"""End to end over a real TCP socket: the OBP driver → pyserial ``socket://`` or pyvisa-py
``TCPIP::…::SOCKET`` → the emulator's server on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from labtools import Lab
from labtools.drivers.ocean import OBPSpectrometer
from labtools.simulators.spectrometer import OBPEmulator, OBPSocketServer
from labtools.simulators.world import Mixture, World

MS = "millisecond"


@pytest.fixture
def world() -> World:
    world = World(seed=7)
    world.fill("cuvette", Mixture.solution(3000, {}))
    return world


@pytest.fixture
def server(world: World) -> Iterator[OBPSocketServer]:
    with OBPSocketServer(OBPEmulator(world, "FLAME-S")) as running:
        yield running


def measure_tartrazine(lab: Lab, world: World) -> dict:
    assert lab.call("spec_set_integration_time", {"time": {"value": 100, "unit": MS}}).ok
    assert lab.call("spec_acquire_dark", {"scans": 4}).ok
    assert lab.call("spec_acquire_reference", {"scans": 4}).ok
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 20e-6}))
    result = lab.call("spec_measure_absorbance", {"scans": 8})
    assert result.ok, result.error
    return result.data


@pytest.mark.parametrize("kind", ["pyserial", "pyvisa"])
def test_absorbance_over_tcp(server: OBPSocketServer, world: World, kind: str) -> None:
    from labtools.transport import SerialTransport, VisaTransport

    uri = server.url if kind == "pyserial" else server.visa_resource
    spec = OBPSpectrometer("spec", uri, "FLAME-S", timeout=2.0)
    with Lab([spec]) as lab:
        data = measure_tartrazine(lab, world)
        assert isinstance(spec.transport, SerialTransport if kind == "pyserial" else VisaTransport)
        assert spec.serial_number == server.emulator.serial_number
    assert spec.transport is None  # closed by the lab
    # 20 µM × 28,321 M⁻¹cm⁻¹ × 1 cm ≈ 0.57 at ~426 nm; the compact bins average ±5 nm
    compact = dict(zip(data["wavelengths"], data["absorbance"], strict=True))
    assert compact[430.0] == pytest.approx(0.566, rel=0.05)


def test_socket_and_in_process_give_the_same_bytes() -> None:
    """Determinism across transports: the same seed and calls ⇒ identical spectra."""
    from labtools.simulators.spectrometer import virtual_spectrometer

    spectra = []
    for remote in (False, True):
        world = World(seed=11)
        world.fill("cuvette", Mixture.solution(3000, {}))
        if remote:
            with OBPSocketServer(OBPEmulator(world, name="spec")) as srv:
                lab = Lab([OBPSpectrometer("spec", srv.url)])
                spectra.append(_two_spectra(lab))
                lab.close()
        else:
            spectra.append(_two_spectra(Lab([virtual_spectrometer("spec", world)])))
    assert spectra[0] == spectra[1]


def _two_spectra(lab: Lab) -> list[list[float]]:
    lab.call("spec_set_integration_time", {"time": {"value": 30, "unit": MS}})
    handles = [lab.call("spec_acquire_spectrum", {"scans": 2}).data["data"] for _ in range(2)]
    return [lab.data(h)["counts"] for h in handles]


def test_shutter_darkens_the_emulator(server: OBPSocketServer) -> None:
    with Lab([OBPSpectrometer("spec", server.url, dark_with="shutter")]) as lab:
        lab.call("spec_set_integration_time", {"time": {"value": 100, "unit": MS}})
        dark = lab.call("spec_acquire_dark", {"scans": 1}).data
        light = lab.call("spec_acquire_spectrum", {"scans": 1}).data
        assert dark["max_counts"] < 3000 < 30000 < light["max_counts"]


def test_realtime_mode_waits_the_exposure(world: World) -> None:
    with OBPSocketServer(OBPEmulator(world), realtime=True) as srv:
        spec = OBPSpectrometer("spec", srv.url)
        with Lab([spec]) as lab:
            lab.call("spec_set_integration_time", {"time": {"value": 50, "unit": MS}})
            started = time.perf_counter()
            assert lab.call("spec_acquire_spectrum", {"scans": 3}).ok
            # a lower bound only: the device cannot answer before its exposures are done
            assert time.perf_counter() - started >= 0.15


def test_two_clients_share_one_device(server: OBPSocketServer) -> None:
    labs = [Lab([OBPSpectrometer("spec", server.url)]) for _ in range(2)]
    accepted = [
        lab.call("spec_set_integration_time", {"time": {"value": 5, "unit": MS}}).ok for lab in labs
    ]
    assert accepted == [True, True]
    for lab in labs:
        lab.close()


def test_stop_closes_connections_and_threads(world: World) -> None:
    srv = OBPSocketServer(OBPEmulator(world)).start()
    port = srv.port
    listening = threading.active_count()
    client = socket.create_connection(("127.0.0.1", port))
    deadline = time.monotonic() + 120
    while threading.active_count() == listening:  # accepted: a thread serves the connection
        assert time.monotonic() < deadline, "the server never accepted the connection"
        time.sleep(0.01)
    before = threading.active_count()
    srv.stop()
    assert threading.active_count() < before
    client.settimeout(2.0)
    assert client.recv(1) == b""  # the server hung up
    client.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1.0)
    with pytest.raises(RuntimeError):
        _ = srv.port
    srv.stop()  # idempotent


def test_connection_refused_is_a_typed_tool_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    lab = Lab([OBPSpectrometer("spec", f"socket://127.0.0.1:{port}")])
    result = lab.call("spec_set_integration_time", {"time": {"value": 5, "unit": MS}})
    assert result.error["code"] == "instrument_error"
    assert "cannot open" in result.error["message"]
