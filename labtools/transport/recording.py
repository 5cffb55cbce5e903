"""Recorded traffic of a transport, for golden tests and replay.

A recording is the ordered list of what was written and what was read. :meth:`Recording.pairs`
folds it into ``(written, replied)`` exchanges, the form
:func:`labtools.transport.testing.expected_protocol` replays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["Direction", "Recording"]

Direction = Literal["write", "read"]


@dataclass
class Recording:
    """Traffic in order: ``(direction, bytes)`` with direction ``"write"`` or ``"read"``."""

    events: list[tuple[Direction, bytes]] = field(default_factory=list)

    def add(self, direction: Direction, data: bytes) -> None:
        if direction not in ("write", "read"):
            raise ValueError(f"direction must be 'write' or 'read', not {direction!r}")
        self.events.append((direction, bytes(data)))

    def written(self) -> bytes:
        """Everything written, concatenated."""
        return b"".join(d for k, d in self.events if k == "write")

    def replied(self) -> bytes:
        """Everything read, concatenated."""
        return b"".join(d for k, d in self.events if k == "read")

    def pairs(self) -> list[tuple[bytes | None, bytes | None]]:
        """Exchanges ``(written, replied)``: consecutive writes (and reads) are joined; a reply
        with no write before it is ``(None, reply)``, a write never answered ``(write, None)``."""
        out: list[tuple[bytes | None, bytes | None]] = []
        sent: bytearray | None = None
        got: bytearray | None = None
        for direction, data in self.events:
            if direction == "write":
                if got is not None:
                    out.append((None if sent is None else bytes(sent), bytes(got)))
                    sent, got = None, None
                sent = (sent or bytearray()) + data
            else:
                got = (got or bytearray()) + data
        if sent is not None or got is not None:
            out.append((None if sent is None else bytes(sent), None if got is None else bytes(got)))
        return out

    def clear(self) -> None:
        self.events.clear()

    # -- files: one JSON object per line, bytes in hex ------------------------------------------
    def save(self, path: str | Path) -> None:
        with Path(path).open("w", encoding="utf-8") as handle:
            for direction, data in self.events:
                handle.write(json.dumps({"direction": direction, "hex": data.hex()}) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        recording = cls()
        with Path(path).open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    recording.add(entry["direction"], bytes.fromhex(entry["hex"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}:{number}: not a recorded transfer ({exc})") from exc
        return recording
