"""The transport layer: adapters, timeouts, logging, recording and URI parsing."""

from __future__ import annotations

import logging
import re
import socket

import pytest

from labtools.errors import InstrumentError, Timeout
from labtools.transport import (
    InProcessTransport,
    Recording,
    SerialTransport,
    Transport,
    make_transport,
    open_transport,
)


class Echo:
    """A device that answers every chunk with it reversed."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    def feed(self, data: bytes) -> bytes:
        self.seen.append(data)
        return data[::-1]


def test_in_process_round_trip_and_immediate_timeout() -> None:
    device = Echo()
    with InProcessTransport(device, timeout=5.0) as link:
        link.write(b"abc")
        assert link.read(2) == b"cb"
        assert link.read_exactly(1) == b"a"
        # nothing can ever arrive: the read fails at once, not after 5 s of wall clock
        with pytest.raises(Timeout):
            link.read(1)
        link.write(b"xyz")
        with pytest.raises(Timeout, match="3 of 4 bytes"):
            link.read_exactly(4)
    assert link.closed
    assert device.seen == [b"abc", b"xyz"]


def test_in_process_needs_a_byte_device() -> None:
    with pytest.raises(TypeError, match="feed"):
        InProcessTransport(object())  # type: ignore[arg-type]


def test_read_until_and_discard() -> None:
    link = InProcessTransport(Echo())
    link.write(b"\n2\n1")
    assert link.read_until(b"\n") == b"1\n"
    assert link.discard_input() == 2
    with pytest.raises(Timeout):
        link.read_until(b"\n")


def test_serial_loop_url() -> None:
    with open_transport("loop://", timeout=0.05) as link:
        assert isinstance(link, SerialTransport)
        link.write(b"\x01\x02\x03\x04")
        assert link.read_exactly(2) == b"\x01\x02"
        assert link.read(10) == b"\x03\x04"
        link.write(b"\xff" * 3)
        assert link.discard_input() == 3
        with pytest.raises(Timeout):
            link.read_exactly(1)
        link.timeout = 0.02
        assert link.port.timeout == 0.02


def test_serial_open_failure_is_typed() -> None:
    with pytest.raises(InstrumentError, match="cannot open"):
        open_transport("/dev/no-such-port-labtools")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "1"])
def test_timeout_must_be_positive(bad: object) -> None:
    with pytest.raises(ValueError):
        InProcessTransport(Echo(), timeout=bad)  # type: ignore[arg-type]
    link = InProcessTransport(Echo())
    with pytest.raises(ValueError):
        link.timeout = bad  # type: ignore[assignment]


@pytest.mark.parametrize("size", [0, -3, 1.5, True])
def test_read_size_must_be_positive_integer(size: object) -> None:
    link = InProcessTransport(Echo())
    with pytest.raises(ValueError):
        link.read(size)  # type: ignore[arg-type]


def test_public_methods_log_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    link = InProcessTransport(Echo(), label="echo")
    with caplog.at_level(logging.DEBUG, logger="labtools.transport"):
        link.write(b"\x01\x02")
        link.read_exactly(2)
    assert "echo << 01 02" in caplog.text
    assert "echo >> 02 01" in caplog.text


def test_long_transfers_are_logged_truncated(caplog: pytest.LogCaptureFixture) -> None:
    link = InProcessTransport(Echo())
    with caplog.at_level(logging.DEBUG, logger="labtools.transport"):
        link.write(bytes(1000))
    assert "(1000 bytes)" in caplog.text
    assert len(caplog.text) < 1000


def test_recording_pairs_and_files(tmp_path: pytest.TempPathFactory) -> None:
    link = InProcessTransport(Echo())
    recording = link.record()
    link.write(b"ab")
    link.write(b"c")
    assert link.read_exactly(3) == b"bac"  # the device answered each write on its own
    link.write(b"q")
    link.read(1)
    assert recording.pairs() == [(b"abc", b"bac"), (b"q", b"q")]
    assert recording.written() == b"abcq"
    path = tmp_path / "traffic.jsonl"  # type: ignore[operator]
    recording.save(path)
    assert Recording.load(path).events == recording.events


def test_recording_unprompted_and_unanswered() -> None:
    recording = Recording()
    recording.add("read", b"hello")
    recording.add("write", b"x")
    assert recording.pairs() == [(None, b"hello"), (b"x", None)]
    with pytest.raises(ValueError):
        recording.add("sideways", b"")  # type: ignore[arg-type]


def test_recording_load_rejects_garbage(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "bad.jsonl"  # type: ignore[operator]
    path.write_text('{"direction": "write", "hex": "zz"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        Recording.load(path)


@pytest.mark.parametrize("uri", ["", "nothing-here", "http//x"])
def test_open_transport_rejects_unknown_kinds(uri: str) -> None:
    with pytest.raises(ValueError):
        open_transport(uri)


def test_open_transport_sends_visa_names_to_pyvisa() -> None:
    from labtools.transport import VisaTransport

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for uri in (
            f"TCPIP::127.0.0.1::{port}::SOCKET",
            f"visa://TCPIP::127.0.0.1::{port}::SOCKET",
        ):
            with open_transport(uri, timeout=0.5) as link:
                assert isinstance(link, VisaTransport)
                assert link.resource.timeout == 500


def test_visa_open_failure_is_typed() -> None:
    with pytest.raises(InstrumentError, match=re.escape("cannot open 'TCPIP::127.0.0.1::SOCKET'")):
        open_transport("TCPIP::127.0.0.1::SOCKET")


def test_make_transport_from_each_form() -> None:
    link = InProcessTransport(Echo())
    assert make_transport(link) is link
    with make_transport({"uri": "loop://", "timeout": 0.25}) as opened:
        assert isinstance(opened, SerialTransport)
        assert opened.timeout == 0.25
    with make_transport("loop://") as opened:
        assert isinstance(opened, Transport)
    with pytest.raises(ValueError, match="'uri'"):
        make_transport({"timeout": 1})
    with pytest.raises(TypeError):
        make_transport(42)  # type: ignore[arg-type]


def test_close_is_idempotent() -> None:
    link = open_transport("loop://")
    link.close()
    link.close()
    assert link.closed
