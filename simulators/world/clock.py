"""The virtual clock: simulated time that advances instantly."""

from __future__ import annotations

from collections.abc import Callable


class VirtualClock:
    """Seconds of simulated time since the world began. Never sleeps.

    Watchers (:meth:`watch`) are told of every advance: what happens in the world while time
    passes (reactions in containers) happens there.
    """

    def __init__(self) -> None:
        self._seconds = 0.0
        self._watchers: list[Callable[[float], None]] = []

    def now(self) -> float:
        return self._seconds

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` (≥ 0) of simulated time pass."""
        if not seconds >= 0:
            raise ValueError(f"time cannot run backwards ({seconds} s)")
        self._seconds += seconds
        if seconds > 0:
            for watcher in self._watchers:
                watcher(seconds)

    def watch(self, callback: Callable[[float], None]) -> None:
        """Call ``callback(seconds)`` after each advance by ``seconds`` > 0."""
        self._watchers.append(callback)

    def reset(self) -> None:
        self._seconds = 0.0
