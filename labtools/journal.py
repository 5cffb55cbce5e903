"""The journal: one JSON line per tool call, flushed as it is written."""

from __future__ import annotations

import json
import logging
from collections import deque
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

__all__ = ["BACKUPS", "KEEP", "MAX_BYTES", "WALL_CLOCK_KEYS", "Journal", "read_journal"]

#: events a journal without a file keeps in memory: the most recent ones (≈ 2 KB each)
KEEP = 1000
#: bytes a journal file grows to before it rotates (≈ 90,000 calls at ≈ 0.7 KB each)
MAX_BYTES = 64 * 2**20
#: rotated journal files kept beside the current one (``calls.jsonl.1`` … ``.5``)
BACKUPS = 5

#: Keys of an event that depend on the wall clock (``time``: Unix seconds at the call's end;
#: ``wall_s``: its duration); everything else is deterministic in a virtual lab.
WALL_CLOCK_KEYS = ("time", "wall_s")


class Journal:
    """Records tool-call events as JSONL.

    With a ``path`` each event is appended to that file and flushed, and nothing is kept in
    memory. The file is emptied when the journal opens, and rotates by size as
    :class:`logging.handlers.RotatingFileHandler` does: before an event would bring it to
    ``max_bytes`` or past (default :data:`MAX_BYTES`), ``calls.jsonl`` becomes ``calls.jsonl.1``,
    ``.1`` becomes ``.2`` and so on, up to ``backups`` files (default :data:`BACKUPS`; the
    oldest is deleted), so the disk used stays below ``max_bytes × (backups + 1)`` (an event
    larger than ``max_bytes`` has a file to itself). ``max_bytes=0`` or ``backups=0``: one file
    that never rotates (as in :mod:`logging`). Without a path, the most recent ``keep`` events
    are kept (default :data:`KEEP`; ``0`` keeps none), so a long-lived lab's memory stays
    bounded.
    ``count`` is every event recorded.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        keep: int | None = None,
        max_bytes: int = MAX_BYTES,
        backups: int = BACKUPS,
    ) -> None:
        if keep is not None and keep < 0:
            raise ValueError(f"keep must be 0 or more events, not {keep}")
        if max_bytes < 0 or backups < 0:
            raise ValueError(
                f"max_bytes and backups must be 0 or more, not {max_bytes} and {backups}"
            )
        self.path = Path(path) if path is not None else None
        self.max_bytes, self.backups = max_bytes, backups
        self._file: RotatingFileHandler | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for stale in self.files()[:-1]:  # a new journal starts empty, with no old files
                stale.unlink()
            self.path.write_bytes(b"")
            self._file = _JournalFile(
                self.path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
            )
        if keep is None:
            keep = 0 if self.path is not None else KEEP
        self._events: deque[dict[str, Any]] = deque(maxlen=keep)
        self.count = 0

    def record(self, event: dict[str, Any]) -> None:
        self.count += 1
        if self._events.maxlen:
            self._events.append(event)
        if self._file is not None:  # written and flushed; rotated first if it would not fit
            self._file.emit(logging.makeLogRecord({"msg": _dumps(event), "args": None}))

    def files(self) -> list[Path]:
        """The journal's files, oldest first: the rotated ones still kept, then the current."""
        if self.path is None:
            return []
        older = (self.path.with_name(f"{self.path.name}.{n}") for n in range(self.backups, 0, -1))
        return [*(f for f in older if f.exists()), self.path]

    def events(self) -> list[dict[str, Any]]:
        """What was recorded: the events of its files (those rotated away and deleted are
        gone), or else the events kept in memory (the most recent ``keep``; ``count`` says
        how many there were in all)."""
        if self.path is not None:
            if self._file is not None:
                self._file.flush()
            return [event for path in self.files() for event in read_journal(path)]
        return list(self._events)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _JournalFile(RotatingFileHandler):
    """A rotating file whose write errors raise (``logging`` would print and go on)."""

    def handleError(self, record: logging.LogRecord) -> None:
        raise  # called inside emit's ``except``: the error being handled


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
