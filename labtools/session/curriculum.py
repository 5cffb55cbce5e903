"""A curriculum over a family's levels: the next episode's instance is drawn from the current
level, which rises when the agent's recent success rate reaches a threshold.

    curriculum = Curriculum(load_family("quantify"))
    for seed in seeds:
        session.reset(seed, task=curriculum.next_instance())
        ...  # the agent works
        curriculum.record(session.score().success)

Every adapter takes the instance it names: ``Session.reset(seed, task=...)``, the Gymnasium
environment's ``reset(options={"task": ...})``, OpenEnv's ``reset(task=...)``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from labtools.session.family import Family
from labtools.session.splits import split_instances

__all__ = ["Curriculum"]


class Curriculum:
    """Levels of ``family`` from ``start`` up, over the instances of ``split``.

    The level rises by one when, over the last ``window`` episodes recorded at it, the share
    that succeeded reaches ``advance_at`` (and falls by one, when ``fall_back_at`` is given,
    if it drops to that); the window starts afresh at every change. Structures are drawn
    uniformly from the level's instances by a generator seeded with ``seed``.
    """

    def __init__(
        self,
        family: Family,
        *,
        split: str = "train",
        start: int = 1,
        window: int = 20,
        advance_at: float = 0.8,
        fall_back_at: float | None = None,
        seed: int | None = None,
    ) -> None:
        if start not in family.levels:
            raise ValueError(f"{family.id} has no level {start}; levels: {family.levels}")
        if window < 1 or not 0.0 < advance_at <= 1.0:
            raise ValueError("a curriculum needs a window ≥ 1 and a threshold in (0, 1]")
        if fall_back_at is not None and not 0.0 <= fall_back_at < advance_at:
            raise ValueError("fall_back_at must lie below advance_at")
        self.family = family
        self.level = start
        self.window = window
        self.advance_at, self.fall_back_at = advance_at, fall_back_at
        self._by_level: dict[int, list[str]] = {level: [] for level in family.levels}
        for name in split_instances(family, split):
            self._by_level[name.level].append(str(name))
        self._recent: deque[bool] = deque(maxlen=window)
        self._rng = np.random.default_rng(seed)
        #: (episodes recorded, level) at every change of level
        self.history: list[tuple[int, int]] = [(0, start)]
        self.episodes = 0

    def next_instance(self) -> str:
        """An instance of the current level, drawn uniformly."""
        names = self._by_level[self.level]
        return names[int(self._rng.integers(len(names)))]

    def record(self, success: bool) -> int:
        """Count one episode at the current level; the level after it."""
        self.episodes += 1
        self._recent.append(bool(success))
        if len(self._recent) < self.window:
            return self.level
        rate = sum(self._recent) / self.window
        levels = self.family.levels
        step = 0
        if rate >= self.advance_at and self.level < levels[-1]:
            step = 1
        elif self.fall_back_at is not None and rate <= self.fall_back_at and self.level > levels[0]:
            step = -1
        if step:
            self.level = levels[levels.index(self.level) + step]
            self._recent.clear()
            self.history.append((self.episodes, self.level))
        return self.level

    def state(self) -> dict[str, Any]:
        """Where the curriculum stands (for logs): its family, level and recent success rate."""
        recent = list(self._recent)
        return {
            "family": self.family.id,
            "level": self.level,
            "episodes": self.episodes,
            "recent_success": sum(recent) / len(recent) if recent else None,
            "history": list(self.history),
        }
