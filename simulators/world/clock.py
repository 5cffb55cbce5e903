"""The virtual clock: simulated time that advances instantly."""

from __future__ import annotations


class VirtualClock:
    """Seconds of simulated time since the world began. Never sleeps."""

    def __init__(self) -> None:
        self._seconds = 0.0

    def now(self) -> float:
        return self._seconds

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` (≥ 0) of simulated time pass."""
        if not seconds >= 0:
            raise ValueError(f"time cannot run backwards ({seconds} s)")
        self._seconds += seconds

    def reset(self) -> None:
        self._seconds = 0.0
