"""The journal: one JSON line per tool call, flushed as it is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

__all__ = ["WALL_CLOCK_KEYS", "Journal", "read_journal"]

#: Keys of an event that depend on the wall clock (``time``: Unix seconds at the call's end;
#: ``wall_s``: its duration); everything else is deterministic in a virtual lab.
WALL_CLOCK_KEYS = ("time", "wall_s")


class Journal:
    """Records tool-call events as JSONL.

    With a ``path`` each event is appended to that file and flushed; without one, events are kept
    in memory (``keep`` forces either way). :meth:`events` returns what was recorded.
    """

    def __init__(self, path: str | Path | None = None, *, keep: bool | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
        self._keep = keep if keep is not None else self.path is None
        self._events: list[dict[str, Any]] = []
        self.count = 0

    def record(self, event: dict[str, Any]) -> None:
        self.count += 1
        if self._keep:
            self._events.append(event)
        if self._file is not None:
            self._file.write(_dumps(event) + "\n")
            self._file.flush()

    def events(self) -> list[dict[str, Any]]:
        if self._keep:
            return list(self._events)
        if self.path is not None:
            return read_journal(self.path)
        return []

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _dumps(event: dict[str, Any]) -> str:
    try:
        return json.dumps(event, default=repr, separators=(",", ":"))
    except (RecursionError, ValueError):
        # Arguments nested past what json can walk: keep their shape, not their contents.
        try:
            shape = repr(event.get("arguments"))[:10_000]
        except RecursionError:
            shape = "<nested too deep to print>"
        safe = {**event, "arguments": shape}
        return json.dumps(safe, default=repr, separators=(",", ":"))


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL journal file."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
