"""Dye lots never above the pure dye: ``species.<dye>.lot.epsilon_ceiling`` folds a lot's ε
factor ``f`` above the ceiling ``c`` to ``c² / f``; ``published-1``'s ceiling (10) is far above
any draw, so its lots are drawn exactly (``Batch.draw``'s floats); ``published-2`` (the default)
caps every dye at 1.02, the pure dye up to its reference value's uncertainty."""

from __future__ import annotations

import numpy as np
import pytest

from labtools.simulators.profile import Parameter, Prior, Profile
from labtools.simulators.published import published
from labtools.simulators.world import World

DYES = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
SEEDS = range(40)
#: the lots before the ceilings: no ceiling within reach of a draw
LEGACY = published("published-1")


def _factors(profile: object = None) -> np.ndarray:
    rows = []
    for seed in SEEDS:
        hidden = World(seed, batches=True, profile=profile).hidden_truth()  # type: ignore[arg-type]
        rows.append([hidden[f"batch/{dye}"][0] for dye in DYES])
    return np.array(rows)


def _with(base: Profile | None = None, **values: Parameter) -> Profile:
    return (base or published()).with_values(values)


def test_published_1_lots_are_todays_draws() -> None:
    from labtools.simulators.world.species import SpeciesLibrary

    library = SpeciesLibrary.default()
    for seed in (0, 6, 17):
        hidden = World(seed, batches=True, profile=LEGACY).hidden_truth()
        for dye in DYES:
            batch = library[dye].batch
            assert batch is not None
            rng = World(seed).streams(f"truth/batch/{dye}")
            assert hidden[f"batch/{dye}"] == batch.draw(rng)
    assert (_factors(LEGACY) > 1.0).any()  # published-1: some lots read above the pure dye


def test_a_ceiling_folds_every_lot_below_it_and_leaves_the_others_as_drawn() -> None:
    today = _factors(LEGACY)
    ceiling = {
        f"species.{dye}.lot.epsilon_ceiling": Parameter(
            f"species.{dye}.lot.epsilon_ceiling", "dimensionless", 1.0
        )
        for dye in DYES
    }
    folded = _factors(_with(LEGACY, **ceiling))
    assert folded.max() <= 1.0
    below = today <= 1.0
    assert np.array_equal(folded[below], today[below])
    assert folded[~below] == pytest.approx(1.0 / today[~below], rel=1e-12)
    # published-2's 1.02: the same draws, folded wherever they read above it
    assert all(published()[f"species.{dye}.lot.epsilon_ceiling"].expected == 1.02 for dye in DYES)
    capped = _factors()
    below = today <= 1.02
    assert capped.max() <= 1.02 and (~below).any()
    assert np.array_equal(capped[below], today[below])
    assert capped[~below] == pytest.approx(1.02**2 / today[~below], rel=1e-12)


def test_content_below_the_pure_dye_and_the_references_uncertainty() -> None:
    """Allura Red: subsidiary colours <= 3 % [V2], so a content of ~0.985 as the prior's
    mu, a 1.5 % spread, and no lot above the pure dye's reference by more than 2 %."""
    key = "species.allura_red.lot"
    profile = _with(
        **{
            f"{key}.epsilon_factor": Parameter(
                f"{key}.epsilon_factor",
                "dimensionless",
                prior=Prior("log_normal", np.log(0.985), 0.015),
            ),
            f"{key}.epsilon_ceiling": Parameter(f"{key}.epsilon_ceiling", "dimensionless", 1.02),
        }
    )
    allura = _factors(profile)[:, DYES.index("allura_red")]
    assert allura.max() <= 1.02
    assert np.median(allura) == pytest.approx(0.985, abs=0.01)
