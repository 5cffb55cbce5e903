"""The MT-SICS driver's strings, held strictly (``expected_protocol``): what it sends for each
tool, how it reads each answer, and the typed error of every refusal."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from labtools.drivers.mettler import SICSBalance, parse
from labtools.drivers.mettler.protocol import SICSFormatError, weight_line
from labtools.errors import (
    Busy,
    InstrumentError,
    NotSupported,
    PreconditionFailed,
    Timeout,
    ToolError,
)
from labtools.transport.testing import TIMEOUT, expected_protocol

SETUP = [
    (b"@\r\n", b'I4 A "B012345678"\r\n'),
    (b"I2\r\n", b'I2 A "XPR205 220.00000 g"\r\n'),
]


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


def connected(link) -> SICSBalance:
    balance = SICSBalance("balance", link, "XPR205")
    run(balance.setup())
    return balance


def test_setup_resets_and_identifies_the_balance() -> None:
    with expected_protocol(SETUP) as link:
        balance = connected(link)
        run(balance.setup())  # idempotent: nothing more on the wire
    info = run(balance.get_info())
    assert info == {
        "model": "XPR205",
        "serial_number": "B012345678",
        "capacity": {"value": 220.0, "unit": "gram"},
        "readability": {"value": 1e-05, "unit": "gram"},
        "tare": None,
    }


def test_each_tool_sends_its_command_and_reads_its_answer() -> None:
    script = [
        *SETUP,
        (b"S\r\n", b"S S   24.85467 g\r\n"),
        (b"SI\r\n", b"S D   24.80001 g\r\n"),
        (b"T\r\n", b"T S   24.85463 g\r\n"),
        (b"TI\r\n", b"TI D    0.00012 g\r\n"),
        (b"S\r\n", b"S S   -0.00003 g\r\n"),
        (b"SI\r\n", b"S S     99.8 mg\r\n"),
        (b"ZI\r\n", b"ZI D\r\n"),
        (b"Z\r\n", b"Z A\r\n"),
    ]
    with expected_protocol(script) as link:
        balance = connected(link)
        assert run(balance.weigh("stable")) == {
            "mass": {"value": 24.85467, "unit": "gram"},
            "stable": True,
        }
        assert run(balance.weigh("immediate")) == {
            "mass": {"value": 24.80001, "unit": "gram"},
            "stable": False,
        }
        assert run(balance.tare("stable")) == {
            "tare": {"value": 24.85463, "unit": "gram"},
            "stable": True,
        }
        assert run(balance.tare("immediate"))["stable"] is False
        assert run(balance.weigh("stable"))["mass"]["value"] == -3e-05
        assert run(balance.weigh("immediate"))["mass"] == {"value": 0.0998, "unit": "gram"}
        assert run(balance.zero("immediate")) == {"zeroed": True, "stable": False}
        assert balance.state()["tare"] is None  # zeroing clears the tare
        assert run(balance.zero("stable")) == {"zeroed": True, "stable": True}


REFUSALS = [
    ("weigh", "stable", b"S\r\n", b"S I\r\n", Timeout),
    ("weigh", "immediate", b"SI\r\n", b"S I\r\n", Busy),
    ("weigh", "stable", b"S\r\n", b"S +\r\n", PreconditionFailed),
    ("weigh", "immediate", b"SI\r\n", b"S -\r\n", PreconditionFailed),
    ("tare", "stable", b"T\r\n", b"T +\r\n", PreconditionFailed),
    ("tare", "stable", b"T\r\n", b"ES\r\n", NotSupported),
    ("tare", "immediate", b"TI\r\n", b"EL\r\n", PreconditionFailed),
    ("zero", "stable", b"Z\r\n", b"Z +\r\n", PreconditionFailed),
    ("zero", "immediate", b"ZI\r\n", b"ET\r\n", InstrumentError),
    ("weigh", "stable", b"S\r\n", b'garbled "\r\n', InstrumentError),
    ("weigh", "stable", b"S\r\n", b"S S    1.00000 lb\r\n", InstrumentError),
    ("weigh", "stable", b"S\r\n", b"T S    1.00000 g\r\n", InstrumentError),
    ("weigh", "stable", b"S\r\n", TIMEOUT, Timeout),
]


@pytest.mark.parametrize(("tool", "mode", "sent", "answer", "error"), REFUSALS)
def test_every_refusal_is_its_typed_error_and_keeps_the_tare(
    tool: str, mode: str, sent: bytes, answer: Any, error: type[ToolError]
) -> None:
    script = [*SETUP, (b"T\r\n", b"T S   10.00000 g\r\n"), (sent, answer)]
    with expected_protocol(script) as link:
        balance = connected(link)
        run(balance.tare("stable"))
        with pytest.raises(error) as caught:
            run(getattr(balance, tool)(mode))
    assert type(caught.value) is error, caught.value
    assert caught.value.message and caught.value.hint
    assert balance.state()["tare"] == {"value": 10.0, "unit": "gram"}


def test_zero_out_of_range_says_to_tare() -> None:
    with expected_protocol([*SETUP, (b"Z\r\n", b"Z +\r\n")]) as link:
        balance = connected(link)
        with pytest.raises(PreconditionFailed, match="zero-setting range") as caught:
            run(balance.zero("stable"))
    assert "tare" in (caught.value.hint or "")


def test_a_late_answer_is_dropped_before_the_next_command() -> None:
    script = [
        *SETUP,
        (b"S\r\n", TIMEOUT),
        (None, b"S S    1.00000 g\r\n"),
        (b"SI\r\n", b"S S    2.00000 g\r\n"),
    ]
    with expected_protocol(script) as link:
        balance = connected(link)
        with pytest.raises(Timeout):
            run(balance.weigh("stable"))
        assert run(balance.weigh("immediate"))["mass"]["value"] == 2.0


def test_type_text_without_a_capacity_falls_back_to_the_model() -> None:
    script = [(b"@\r\n", b'I4 A "1234"\r\n'), (b"I2\r\n", b'I2 A "Excellence"\r\n')]
    with expected_protocol(script) as link:
        balance = connected(link)
    info = run(balance.get_info())
    assert (info["model"], info["capacity"]["value"]) == ("Excellence", 220.0)


def test_the_framing_both_ways() -> None:
    assert weight_line("S", "S", 100.0, 2) == b"S S     100.00 g\r\n"
    assert weight_line("S", "D", -0.0000001, 5) == b"S D    0.00000 g\r\n"
    response = parse(b"S S      100.00 g\r\n")
    assert (response.ident, response.status, response.weight()) == ("S", "S", (100.0, "g"))
    assert parse(b'I2 A "T72XW Standard 50.00 kg"\r\n').fields == ("T72XW Standard 50.00 kg",)
    assert parse(b"ES\r\n").general_error
    for bad in (b"", b"S\r\n", b'"x" A\r\n', b"S S\r\nS S\r\n"):
        with pytest.raises(SICSFormatError):
            parse(bad)
    with pytest.raises(SICSFormatError):
        parse(b"S S abc g\r\n").weight()
