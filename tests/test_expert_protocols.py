"""Every task's expert protocol works as an agent with a real turn budget would: at most 25 tool
calls an episode (submission included) on the batch tools, and a reward near its anchor."""

from __future__ import annotations

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, run_episode
from labtools.session.registry import task_ids

MAX_CALLS = 25
SEEDS = range(5)  # evaluation seeds: disjoint from the anchors' calibration seeds 1000–1049


@pytest.mark.parametrize("task", task_ids())
def test_the_expert_takes_at_most_25_calls_and_scores_near_its_anchor(task: str) -> None:
    normalized = []
    with Session(task, secret=DEV_SECRET) as session:
        for seed in SEEDS:
            reward = run_episode(session, "expert", seed)
            assert session.terminated, (seed, session.usage.as_dict())
            assert session.usage.calls <= MAX_CALLS, (seed, session.usage.as_dict())
            normalized.append(reward.normalized)
    assert sum(normalized) / len(normalized) >= 0.9, normalized
