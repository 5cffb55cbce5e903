"""The curriculum over a family's levels moves up as a scripted agent improves, and holds an
agent that does not."""

from __future__ import annotations

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.curriculum import Curriculum
from labtools.session.evaluate import DEV_SECRET, run_episode
from labtools.session.registry import load_family


def _improving(episode: int, rng: np.random.Generator) -> str:
    """An agent that learns: the expert's protocol with a probability rising from 0.1 to 1
    over 30 episodes, the naive one otherwise."""
    return "expert" if rng.random() < min(1.0, 0.1 + episode / 30) else "naive"


def test_the_curriculum_moves_up_with_an_improving_agent_and_holds_a_naive_one() -> None:
    family = load_family("quantify")
    rising = Curriculum(family, window=6, advance_at=0.8, seed=1)
    held = Curriculum(family, window=6, advance_at=0.8, seed=1)
    rng = np.random.default_rng(2)
    with Session("quantify/1/tartrazine", secret=DEV_SECRET) as session:
        for episode in range(48):
            for curriculum, agent in ((rising, _improving(episode, rng)), (held, "naive")):
                instance = curriculum.next_instance()
                assert instance.startswith(f"quantify/{curriculum.level}/")
                session.reset(episode, task=instance)
                reward = run_episode(session, agent, episode)
                curriculum.record(reward.success)
    assert rising.level >= 3, rising.state()
    levels = [level for _, level in rising.history]
    assert levels == sorted(levels) and levels[0] == 1  # it only ever went up
    assert held.level == 1 and held.history == [(0, 1)]
    assert rising.state()["family"] == "quantify"


def test_a_curriculum_falls_back_and_refuses_what_it_cannot_do() -> None:
    family = load_family("quantify")
    curriculum = Curriculum(family, start=3, window=4, fall_back_at=0.25, seed=0)
    for _ in range(4):
        curriculum.record(False)
    assert curriculum.level == 2 and curriculum.history == [(0, 3), (4, 2)]
    for success in (True, True, True, True):
        curriculum.record(success)
    assert curriculum.level == 3
    with pytest.raises(ValueError, match="no level 6"):
        Curriculum(family, start=6)
    with pytest.raises(ValueError, match="below advance_at"):
        Curriculum(family, fall_back_at=0.9)
    for split in ("train", "test-ood"):
        drawn = {Curriculum(family, split=split, seed=s).next_instance() for s in range(20)}
        assert all(family.held_out(i.split("/")[2]) == (split == "test-ood") for i in drawn)
