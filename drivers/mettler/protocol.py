"""MT-SICS framing: command lines out, response lines in, both directions' formats.

Written from Mettler Toledo's MT-SICS reference manuals (the XPR/XSR manual, 30324923, and the
Excellence manual, 11780711):

- a command is ASCII, upper case, its parameters separated by spaces, closed by CR LF
  [V: "Each command must be closed by CRLF (ASCII 13 dec., 10 dec.)", MT-SICS Reference Manual
  for XPR and XSR Balances, §2 Command Formats];
- a response is one CR LF line: the command's identification, a status and the data, separated
  by spaces, e.g. ``S S      100.00 g`` [V: "Response S S 100.00 g: the current stable weight
  value is 100.00 g", Mettler Toledo operating instructions, MT-SICS section (AT and AL
  balances)]; text fields in double quotes, e.g. ``I4 A "123456"`` and
  ``I2 A "T72XW Standard 50.00 kg"`` (type, then capacity and unit) [V: MT-SICS I2/I4 in the
  T72XW indicator manual's MT-SICS chapter];
- a weight value is right-aligned in a field of 10 characters with its sign [L: the reference
  manuals' "Format of the response with weight value"; parsed here as any number between
  spaces, so a balance that pads otherwise reads the same];
- three general errors answer any command: ``ES`` syntax error (not recognised), ``ET``
  transmission error (a faulty command, e.g. parity), ``EL`` logical error (cannot be executed)
  [V: MT-SICS reference manual §2.1.3 as quoted in PyLabRobot 0.2.2's Mettler Toledo backend].
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "GENERAL_ERRORS",
    "TERMINATOR",
    "Response",
    "SICSFormatError",
    "command_line",
    "parse",
    "status_line",
    "text_line",
    "weight_line",
]

TERMINATOR = b"\r\n"
#: the three errors any command may get, and what each means
GENERAL_ERRORS = {
    "ES": "syntax error: the balance did not recognise the command",
    "ET": "transmission error: the balance received a faulty command (parity, interface break)",
    "EL": "logical error: the balance cannot execute the command",
}
#: characters of the right-aligned weight field [L]
WEIGHT_FIELD = 10
_TOKEN = re.compile(rb'"([^"]*)"|(\S+)')
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)")


class SICSFormatError(ValueError):
    """A line that is not an MT-SICS response."""


@dataclass(frozen=True)
class Response:
    """One response line: the identification (``"S"``, ``"I4"``), the status (``"S"``, ``"D"``,
    ``"A"``, ``"I"``, ``"+"``, ``"-"``; ``""`` for a general error, whose identification is
    ``ES``/``ET``/``EL``) and the data fields (quotes removed)."""

    ident: str
    status: str
    fields: tuple[str, ...] = ()

    @property
    def general_error(self) -> bool:
        return self.ident in GENERAL_ERRORS and not self.status

    def weight(self) -> tuple[float, str]:
        """The weight value and unit of a weight response; :class:`SICSFormatError` if the
        data are not a number and a unit."""
        if len(self.fields) != 2 or not _NUMBER.fullmatch(self.fields[0]):
            raise SICSFormatError(f"not a weight value and unit: {' '.join(self.fields)!r}")
        return float(self.fields[0]), self.fields[1]


def command_line(code: str, *parameters: str) -> bytes:
    """The bytes of a command: ``code`` and its parameters, space-separated, then CR LF."""
    text = " ".join((code, *parameters))
    if not text.isascii() or "\r" in text or "\n" in text or code != code.upper():
        raise ValueError(f"not an MT-SICS command: {text!r}")
    return text.encode("ascii") + TERMINATOR


def parse(line: bytes) -> Response:
    """A response line (with or without its CR LF) as a :class:`Response`."""
    body = line.removesuffix(TERMINATOR)
    if not body or b"\r" in body or b"\n" in body:
        raise SICSFormatError(f"not one MT-SICS line: {line!r}")
    tokens = [
        (m.group(1) if m.group(1) is not None else m.group(2)).decode("latin-1")
        for m in _TOKEN.finditer(body)
    ]
    if not tokens or body.lstrip().startswith(b'"'):
        raise SICSFormatError(f"no identification in {line!r}")
    ident, rest = tokens[0], tokens[1:]
    if ident in GENERAL_ERRORS and not rest:
        return Response(ident, "")
    if not rest:
        raise SICSFormatError(f"no status in {line!r}")
    return Response(ident, rest[0], tuple(rest[1:]))


# -- the balance's side (the emulator formats with these) --------------------------------------
def weight_line(ident: str, status: str, grams: float, decimals: int, unit: str = "g") -> bytes:
    """``S S      100.00 g``: a weight response, the value right-aligned in its field."""
    value = f"{grams:.{decimals}f}"
    if value.lstrip("-").strip("0.") == "":
        value = value.lstrip("-")  # no "-0.00000"
    return f"{ident} {status} {value:>{WEIGHT_FIELD}} {unit}".encode("ascii") + TERMINATOR


def status_line(ident: str, status: str = "") -> bytes:
    """``Z A``, ``S I``, or a general error (``ES``) when ``status`` is empty."""
    text = f"{ident} {status}" if status else ident
    return text.encode("ascii") + TERMINATOR


def text_line(ident: str, status: str, *texts: str) -> bytes:
    """``I4 A "0123456789"``: quoted text fields."""
    quoted = " ".join(f'"{t}"' for t in texts)
    return f"{ident} {status} {quoted}".encode("latin-1") + TERMINATOR
