"""Rewards: a task's raw outcome, normalised between its naive and expert protocols."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

__all__ = ["Anchors", "Reward", "pass_hat_k"]


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
    less of the budget earns at most a tenth.
    """

    total: float
    raw: float
    normalized: float
    validity: float
    efficiency: float
    components: dict[str, float]
    success: bool

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
