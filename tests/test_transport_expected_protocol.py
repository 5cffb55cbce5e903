"""The strict ``expected_protocol`` fixture: what it accepts and each way it fails."""

from __future__ import annotations

import contextlib
import re

import pytest

from labtools.errors import InstrumentError, Timeout
from labtools.transport.testing import (
    TIMEOUT,
    ProtocolMismatch,
    ProtocolTransport,
    expected_protocol,
)


def test_a_conversation_that_follows_the_script() -> None:
    with expected_protocol([(b"WAV 600\n", b"OK\n"), (b"WAV?\n", b"600\n")]) as link:
        link.write(b"WAV 600\n")
        assert link.read_until(b"\n") == b"OK\n"
        link.write(b"WAV?\n")
        assert link.read_exactly(4) == b"600\n"


def test_writes_may_come_in_pieces_and_replies_be_read_in_pieces() -> None:
    with expected_protocol([(b"ABCD", b"1234")]) as link:
        link.write(b"AB")
        link.write(b"CD")
        assert link.read(3) == b"123"
        assert link.read(3) == b"4"


def test_mismatched_write_fails() -> None:
    script = expected_protocol([(b"WAV 600\n", b"OK\n")])
    message = re.escape(r"wrote b'WAV 601\n'; expected b'WAV 600\n'")
    with pytest.raises(ProtocolMismatch, match=message), script as link:
        link.write(b"WAV 601\n")


def test_read_with_nothing_pending_fails() -> None:
    script = expected_protocol([(b"SET 1\n", None)])
    with pytest.raises(ProtocolMismatch, match="read with no reply pending"), script as link:
        link.write(b"SET 1\n")
        link.read(1)


def test_unread_reply_when_the_next_write_arrives_fails() -> None:
    script = expected_protocol([(b"SET 1\n", b"OK\n"), (b"GET?\n", b"1\n")])
    message = re.escape(r"while the reply b'OK\n' was unread")
    with pytest.raises(ProtocolMismatch, match=message), script as link:
        link.write(b"SET 1\n")
        link.write(b"GET?\n")


def test_leftover_pairs_fail_at_exit() -> None:
    script = expected_protocol([(b"A", b"1"), (b"B", b"2")])
    message = "1 expected exchanges never happened"
    with pytest.raises(ProtocolMismatch, match=message), script as link:
        link.write(b"A")
        link.read(1)


def test_unread_reply_fails_at_exit() -> None:
    script = expected_protocol([(b"A", b"1")])
    with pytest.raises(ProtocolMismatch, match="never read"), script as link:
        link.write(b"A")


def test_half_written_message_fails_at_exit() -> None:
    script = expected_protocol([(b"ABCD", b"")])
    with pytest.raises(ProtocolMismatch, match="wrote only b'AB'"), script as link:
        link.write(b"AB")


def test_writing_past_the_script_fails() -> None:
    script = expected_protocol([])
    with pytest.raises(ProtocolMismatch, match="expected no more traffic"), script as link:
        link.write(b"A")


def test_timeout_marker_makes_the_next_read_time_out() -> None:
    with expected_protocol([(b"GET?\n", TIMEOUT), (b"GET?\n", b"1\n")]) as link:
        link.write(b"GET?\n")
        with pytest.raises(Timeout):
            link.read(1)
        link.write(b"GET?\n")
        assert link.read(2) == b"1\n"


def test_discard_drops_late_unprompted_replies() -> None:
    script = [(b"GET?\n", TIMEOUT), (None, b"LATE\n"), (b"GET?\n", b"1\n")]
    with expected_protocol(script) as link:
        link.write(b"GET?\n")
        with pytest.raises(Timeout):
            link.read(1)
        assert link.discard_input() == 5
        link.write(b"GET?\n")
        assert link.read(2) == b"1\n"


def test_unprompted_reply() -> None:
    with expected_protocol([(None, b"READY\n"), (b"GO\n", b"OK\n")]) as link:
        assert link.read_until(b"\n") == b"READY\n"
        link.write(b"GO\n")
        assert link.read(3) == b"OK\n"


def test_a_swallowed_failure_is_raised_again_at_exit() -> None:
    def careless_driver(link: ProtocolTransport) -> None:
        try:
            link.write(b"WRONG")
        except AssertionError:
            raise InstrumentError("driver fault") from None

    script = expected_protocol([(b"RIGHT", b"1")])
    swallow = contextlib.suppress(InstrumentError)
    with pytest.raises(ProtocolMismatch, match="expected b'RIGHT'"), script as link, swallow:
        careless_driver(link)


def test_failure_while_another_exception_propagates() -> None:
    with pytest.raises(ProtocolMismatch), expected_protocol([(b"RIGHT", b"1")]) as link:
        with contextlib.suppress(ProtocolMismatch):
            link.write(b"WRONG")
        raise RuntimeError("driver crashed afterwards")


@pytest.mark.parametrize(
    "pairs",
    [
        [(b"A",)],
        [("text", b"1")],
        [(b"", b"1")],
        [(b"A", "text")],
        [(None, None)],
        [(None, TIMEOUT)],
    ],
)
def test_malformed_scripts_are_rejected(pairs: list) -> None:
    with pytest.raises((TypeError, ValueError)):
        ProtocolTransport(pairs)
