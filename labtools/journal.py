"""The journal: one JSON line per tool call, flushed as it is written."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import IO, Any

__all__ = ["KEEP", "WALL_CLOCK_KEYS", "Journal", "read_journal"]

#: events a journal without a file keeps in memory: the most recent ones (≈ 2 KB each)
KEEP = 1000

#: Keys of an event that depend on the wall clock (``time``: Unix seconds at the call's end;
#: ``wall_s``: its duration); everything else is deterministic in a virtual lab.
WALL_CLOCK_KEYS = ("time", "wall_s")


class Journal:
    """Records tool-call events as JSONL.

    With a ``path`` each event is appended to that file and flushed, and nothing is kept in
    memory. Without one, the most recent ``keep`` events are kept (default :data:`KEEP`; ``0``
    keeps none), so a long-lived lab's memory stays bounded. ``count`` is every event recorded.
    """

    def __init__(self, path: str | Path | None = None, *, keep: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("w", encoding="utf-8")
        if keep is None:
            keep = 0 if self.path is not None else KEEP
        if keep < 0:
            raise ValueError(f"keep must be 0 or more events, not {keep}")
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self.count = 0

    def record(self, event: dict[str, Any]) -> None:
        self.count += 1
        if self._events.maxlen:
            self._events.append(event)
        if self._file is not None:
            self._file.write(_dumps(event) + "\n")
            self._file.flush()

    def events(self) -> list[dict[str, Any]]:
        """What was recorded: the whole file, or else the events kept in memory (the most
        recent ``keep``; ``count`` says how many there were in all)."""
        if self.path is not None:
            if self._file is not None:
                self._file.flush()
            return read_journal(self.path)
        return list(self._events)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _dumps(event: dict[str, Any]) -> str:
    """One strict JSON line (``allow_nan=False``). What strict JSON cannot hold is written as
    text: a non-finite number as ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, a key that is not
    a string, an int too long to print, and anything nested deeper than 64 levels."""
    try:
        return json.dumps(event, default=repr, separators=(",", ":"), allow_nan=False)
    except (RecursionError, ValueError, TypeError):
        pass
    import math

    from labtools.errors import brief

    def strict(value: Any, depth: int) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        if isinstance(value, int) and value.bit_length() > 14_000:
            return brief(
                value
            )  # past Python's int-to-str limit (4300 digits): json cannot print it
        if not isinstance(value, dict | list | tuple):
            return value
        if depth >= 64:
            return brief(value)
        if isinstance(value, dict):
            return {
                k if isinstance(k, str) else brief(k): strict(v, depth + 1)
                for k, v in value.items()
            }
        return [strict(v, depth + 1) for v in value]

    return json.dumps(strict(event, 0), default=repr, separators=(",", ":"), allow_nan=False)


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL journal file."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
