"""Rewards: a task's raw score (its outcome, weighed by its process where it has a rubric),
normalised between its naive and expert protocols."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from math import comb

__all__ = ["Anchors", "Reward", "pass_hat_k"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Anchors:
    """Mean raw scores of a task's scripted protocols, measured on calibration seeds.

    Calibration seeds are disjoint from evaluation seeds; ``labtools eval --calibrate``
    measures them again.
    """

    naive: float
    expert: float
    seeds: str

    def normalize(self, raw: float) -> float:
        """``(raw − naive) / (expert − naive)``, floored at 0."""
        return max(0.0, (raw - self.naive) / (self.expert - self.naive))


@dataclass(frozen=True)
class Reward:
    """The trainer's view of an episode. Never shown to the agent.

    ``total = normalized × validity × (0.9 + 0.1 × efficiency)``: correctness dominates; using
    less of the budget earns at most a tenth. For a task with a process rubric
    (:mod:`labtools.session.process`), ``raw = outcome × (1 − w + w × process)``: the process
    costs at most the share ``w`` of the outcome and never lifts a wrong one.
    ``components`` are the task's diagnostics (numbers; with a rubric also ``outcome``,
    ``process`` and each ``process/<name>``; ``"unscorable"``: why an episode scored 0 without
    being scored). Every value is finite, so
    a reward is strict JSON: a component that is not is replaced by its text, and logged.
    """

    total: float
    raw: float
    normalized: float
    validity: float
    efficiency: float
    components: dict[str, float | str]
    success: bool

    def __post_init__(self) -> None:
        for name in ("total", "raw", "normalized", "validity", "efficiency"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"reward {name} {getattr(self, name)!r} is not finite")
        bad = [
            k for k, v in self.components.items() if isinstance(v, float) and not math.isfinite(v)
        ]
        if bad:
            log.warning("reward components %s are not finite; kept as text", ", ".join(bad))
            fixed = {k: repr(v) if k in bad else v for k, v in self.components.items()}
            object.__setattr__(self, "components", fixed)

    @classmethod
    def unscorable(cls, error: BaseException, *, task: str, episode: str | None) -> Reward:
        """Zero, for an episode whose scoring raised ``error`` (logged with its traceback)."""
        log.error("task %s could not score episode %s", task, episode, exc_info=error)
        text = str(error)
        reason = f"{type(error).__name__}: {text if len(text) <= 200 else text[:199] + '…'}"
        return cls(0.0, 0.0, 0.0, 0.0, 0.0, {"unscorable": reason}, success=False)

    def as_dict(self) -> dict[str, object]:
        return {
            "total": self.total,
            "raw": self.raw,
            "normalized": self.normalized,
            "validity": self.validity,
            "efficiency": self.efficiency,
            "components": self.components,
            "success": self.success,
        }


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """The chance that k trials drawn from ``trials`` all succeed (τ-bench's pass^k)."""
    if trials < k:
        raise ValueError(f"pass^{k} needs at least {k} trials, not {trials}")
    return comb(successes, k) / comb(trials, k)
