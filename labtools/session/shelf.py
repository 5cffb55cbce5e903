"""Built labs kept for the next session of the same task, so a new session costs a rewind.

Building a task's lab (its configuration, the deck, the drivers and the world) takes tens of
milliseconds; rewinding a built one to its checkpoint takes a few. A closed
:class:`~labtools.session.Session` puts its lab on the process's shelf instead of closing it, and
the next session of that task takes it and rewinds it to the checkpoint at seed 0: the state a
freshly built lab starts in, so nothing of the last session's episodes (its world, its secret's
draws, its calls) reaches the next one. Only labs a session built from a task id with the
published physics are shelved (a task object or a profile of the caller's own may differ
from the registered ones), and only labs that take snapshots.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from labtools.lab import Lab
from labtools.session.task import Task

__all__ = ["SHELF", "Shelf", "Shelved"]


@dataclass
class Shelved:
    """A closed session's lab, its task (an instrument of the lab) and its checkpoint."""

    lab: Lab
    task: Task
    pristine: dict[str, Any]


class Shelf:
    """At most ``capacity`` idle labs, of any tasks; the longest idle is closed when more come
    back (a trainer sampling thousands of family instances keeps the last ``capacity``)."""

    def __init__(self, capacity: int = 16) -> None:
        self.capacity = capacity
        self._idle: list[tuple[str, Shelved]] = []  # oldest first
        self._lock = threading.Lock()

    def take(self, task_id: str) -> Shelved | None:
        """The latest idle lab of ``task_id``, rewound to its checkpoint at seed 0; ``None`` if
        there is none."""
        with self._lock:
            at = next(
                (i for i in reversed(range(len(self._idle))) if self._idle[i][0] == task_id), None
            )
            shelved = None if at is None else self._idle.pop(at)[1]
        if shelved is not None:
            shelved.lab.rewind(shelved.pristine, seed=0)
        return shelved

    def put(self, task_id: str, shelved: Shelved) -> None:
        """Keep ``shelved`` for the next session of ``task_id``."""
        with self._lock:
            self._idle.append((task_id, shelved))
            surplus = self._idle[: max(0, len(self._idle) - self.capacity)]
            del self._idle[: len(surplus)]
        for _, old in surplus:
            old.lab.close()

    def reserve(self, count: int) -> None:
        """Keep room for at least ``count`` idle labs (a server's most sessions at once)."""
        with self._lock:
            self.capacity = max(self.capacity, count)

    def clear(self) -> None:
        """Close every idle lab."""
        with self._lock:
            idle, self._idle = self._idle, []
        for _, shelved in idle:
            shelved.lab.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)


#: the process's shelf, which every :class:`~labtools.session.Session` uses
SHELF = Shelf()
