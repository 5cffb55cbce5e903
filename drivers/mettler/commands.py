"""MT-SICS commands, one declaration each: what the host sends, how the balance answers.

Level 0 (every MT-SICS balance) and level 1 commands [V: MT-SICS command tables by level, e.g.
"LEVEL 0: @ I0 I1 I2 I3 I4 S SI SIR Z ZI; LEVEL 1: D DW SR T TA TAC TI", MT-SICS appendix of
the T104 indicator manual; the same split in the Excellence reference manual's overview]. The
answers [L: MT-SICS reference manuals, level 0 and 1 command pages]:

- ``S``  → ``S S <value> <unit>`` (stable); ``S I`` not executable (busy, or no stability
  within the balance's timeout); ``S +`` overload; ``S -`` underload [V: AT/AL operating
  instructions, "S – Send stable weight value"].
- ``SI`` → ``S S …`` or ``S D …`` (dynamic: not stable), ``S I``, ``S +``, ``S -``.
- ``T``  → ``T S <tare> <unit>``: the stable weight now stored as tare; ``T I``, ``T +``
  (upper limit of the taring range), ``T -`` (lower limit).
- ``TI`` → ``TI S …`` or ``TI D …`` (tare taken from a non-stable value), ``TI I/+/-``.
- ``Z``  → ``Z A`` zero set (stable); ``Z I``, ``Z +`` / ``Z -`` (upper / lower limit of the
  zero setting range).
- ``ZI`` → ``ZI S`` or ``ZI D`` (zero set under non-stable conditions), ``ZI I/+/-``.
- ``I2`` → ``I2 A "<type> <capacity> <unit>"``; ``I4`` → ``I4 A "<serial number>"``.
- ``@``  → ``I4 A "<serial number>"``: reset to the state after switching on, without zeroing
  (the tare memory is cleared, a command in progress is cancelled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from labtools.drivers.mettler.protocol import command_line

__all__ = [
    "ALL_COMMANDS",
    "BY_CODE",
    "IDENTIFY_SERIAL",
    "IDENTIFY_TYPE",
    "RESET",
    "TARE",
    "TARE_IMMEDIATELY",
    "WEIGH",
    "WEIGH_IMMEDIATELY",
    "ZERO",
    "ZERO_IMMEDIATELY",
    "Command",
]

Reply = Literal["weight", "status", "text"]


@dataclass(frozen=True)
class Command:
    """One MT-SICS command: its ``code``, the identification its answer carries (``reply_id``),
    the kind of answer (a weight value, a bare status or quoted text), the statuses that mean
    it was done (``done``; ``"D"`` among them marks a non-stable result), its MT-SICS level,
    and whether the balance waits for stability before answering."""

    code: str
    reply_id: str
    reply: Reply
    done: frozenset[str]
    level: int
    waits_for_stability: bool
    description: str

    def encode(self) -> bytes:
        return command_line(self.code)

    def __repr__(self) -> str:
        return f"<MT-SICS {self.code}>"


def _command(
    code: str,
    reply: Reply,
    done: str,
    level: int,
    description: str,
    *,
    reply_id: str | None = None,
    waits: bool = False,
) -> Command:
    return Command(code, reply_id or code, reply, frozenset(done), level, waits, description)


WEIGH = _command("S", "weight", "S", 0, "send stable weight value", waits=True)
WEIGH_IMMEDIATELY = _command("SI", "weight", "SD", 0, "send weight value immediately", reply_id="S")
TARE = _command("T", "weight", "S", 1, "tare (stable)", waits=True)
TARE_IMMEDIATELY = _command("TI", "weight", "SD", 1, "tare immediately")
ZERO = _command("Z", "status", "A", 0, "zero (stable)", waits=True)
ZERO_IMMEDIATELY = _command("ZI", "status", "SD", 0, "zero immediately")
IDENTIFY_TYPE = _command("I2", "text", "A", 0, "balance data: type, capacity and unit")
IDENTIFY_SERIAL = _command("I4", "text", "A", 0, "serial number")
RESET = _command("@", "text", "A", 0, "reset (cancel), answers the serial", reply_id="I4")

#: the commands this driver sends (and the emulator answers)
ALL_COMMANDS: tuple[Command, ...] = (
    WEIGH,
    WEIGH_IMMEDIATELY,
    TARE,
    TARE_IMMEDIATELY,
    ZERO,
    ZERO_IMMEDIATELY,
    IDENTIFY_TYPE,
    IDENTIFY_SERIAL,
    RESET,
)
BY_CODE: dict[str, Command] = {c.code: c for c in ALL_COMMANDS}
