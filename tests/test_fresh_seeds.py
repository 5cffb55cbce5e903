"""Fresh seeds: the training adapters draw 64 random bits per episode unless given a seed, so a
world never repeats within a run (and no published list of seeds names it)."""

from __future__ import annotations

import numpy as np
import pytest

from labtools.session import Session
from labtools.session.session import SEED_BITS, fresh_seed

DRAWS = 1_000_000


def test_a_million_fresh_seeds_never_repeat() -> None:
    drawn = [fresh_seed() for _ in range(DRAWS)]
    assert len(set(drawn)) == DRAWS
    assert all(0 <= s < 2**SEED_BITS for s in drawn)
    assert max(drawn) > 2**63  # the top bit is used: 64 bits, not 31


def test_a_generator_draws_the_same_seeds_again_and_never_repeats() -> None:
    first = [fresh_seed(np.random.default_rng(7)) for _ in range(3)]
    assert first == [fresh_seed(np.random.default_rng(7)) for _ in range(3)]
    rng = np.random.default_rng(8)
    drawn = [fresh_seed(rng) for _ in range(DRAWS)]
    assert len(set(drawn)) == DRAWS and max(drawn) > 2**63


def test_a_session_takes_a_64_bit_seed() -> None:
    with Session("dye_quantification", secret="fresh seeds") as session:
        seed = 2**64 - 1
        first = session.reset(seed)
        assert session.seed == seed
        world = session.world_seed(seed)
        assert session.reset(seed) == first and session.world_seed(seed) == world
        assert session.world_seed(seed - 1) != world
        with pytest.raises(ValueError, match="non-negative integer"):
            session.reset(-1)


def test_the_gymnasium_environment_draws_fresh_64_bit_seeds() -> None:
    from labtools.session.gym import LabEnv

    env = LabEnv("dye_quantification", secret="fresh seeds")
    try:
        env.reset(seed=5)  # a given seed is the episode's, and seeds the generator
        assert env.session.seed == 5
        drawn = []
        for _ in range(3):
            env.reset()
            drawn.append(env.session.seed)
        assert len(set(drawn)) == 3 and all(s >= 2**32 for s in drawn)
        env.reset(seed=5)
        env.reset()
        assert env.session.seed == drawn[0]  # seeded: the same draws again
    finally:
        env.close()


def test_the_trl_environment_draws_a_fresh_64_bit_seed() -> None:
    from labtools.session.trl import environment_factory

    env = environment_factory("dye_quantification", secret="fresh seeds")()
    try:
        env.reset()
        first = env.session.seed
        env.reset()
        assert first != env.session.seed
        assert first is not None and first >= 2**32 and env.session.seed >= 2**32
    finally:
        env.session.close()
