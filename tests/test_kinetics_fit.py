"""The inhibition fits: the shared, batched grid search picks exactly what a plain search of
each subset alone picks (the same grid point, V and weighted RSS, bit for bit)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labtools.demo.analysis import OUTLIER_Z
from labtools.simulators.tasks.kinetics_fit import (
    MECHANISMS,
    InhibitionFit,
    fit_inhibition,
    fit_inhibition_robust,
    inhibited_rate,
    weights,
)


def plain_fit(s, i, v, se, mechanism) -> InhibitionFit:
    """Every grid point's Σw(v − Vx)², as the fit is specified: 90 × 90, then 41 × 41 twice."""
    w = weights(v, se)
    k_grid = np.linspace(math.log(s.min() / 100.0), math.log(s.max() * 100.0), 90)
    positive = i[i > 0]
    low_i = positive.min() if positive.size else 1e-6
    high_i = positive.max() if positive.size else 1e-3
    ki_grid = np.linspace(math.log(low_i / 100.0), math.log(high_i * 100.0), 90)
    for _ in range(3):
        k = np.exp(k_grid)[:, None, None]
        ki = np.exp(ki_grid)[None, :, None]
        x = inhibited_rate(s, i, k, ki, mechanism)
        big_v = (w * v * x).sum(axis=-1) / (w * x * x).sum(axis=-1)
        rss = (w * (v - big_v[..., None] * x) ** 2).sum(axis=-1)
        a, b = np.unravel_index(int(np.argmin(rss)), rss.shape)
        dk, dki = k_grid[1] - k_grid[0], ki_grid[1] - ki_grid[0]
        best = (float(np.exp(k_grid[a])), float(np.exp(ki_grid[b])), float(big_v[a, b]))
        best_rss = float(rss[a, b])
        k_grid = np.linspace(k_grid[a] - dk, k_grid[a] + dk, 41)
        ki_grid = np.linspace(ki_grid[b] - dki, ki_grid[b] + dki, 41)
    return InhibitionFit(mechanism, best[0], best[2], best[1], best_rss)


def plain_robust(s, i, v, se):
    kept = np.ones(v.size, bool)

    def fits_of(mask):
        return [plain_fit(s[mask], i[mask], v[mask], se[mask], m) for m in MECHANISMS]

    while True:
        fits = fits_of(kept)
        if kept.sum() <= 7:
            return fits, kept
        rss = min(f.rss for f in fits)
        without = {}
        for j in np.flatnonzero(kept):
            mask = kept.copy()
            mask[j] = False
            without[int(j)] = min(f.rss for f in fits_of(mask))
        worst = min(without, key=without.__getitem__)
        if rss - without[worst] <= OUTLIER_Z**2 * max(without[worst] / (kept.sum() - 4), 1.0):
            return fits, kept
        kept[worst] = False


def wells(seed: int, mechanism: str, defect: bool):
    """Rates of a 6-level substrate series at 3 inhibitor levels, 3 % noise; with ``defect``
    one well reads 40 % low."""
    rng = np.random.default_rng(seed)
    km, ki = 10 ** rng.uniform(-4.5, -2.5), 10 ** rng.uniform(-4.5, -3)
    s = np.tile(km * np.geomspace(0.2, 6.0, 6), 3) * rng.uniform(0.9, 1.0, 18)
    i = np.repeat([0.0, ki, 4 * ki], 6)
    v = 50.0 * inhibited_rate(s, i, km, ki, mechanism) * rng.normal(1.0, 0.03, 18)
    if defect:
        v[int(rng.integers(18))] *= 0.6
    return s, i, v, 0.01 * np.abs(v)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("seed", [0, 1])
def test_a_fit_is_the_plain_search_exactly(mechanism: str, seed: int) -> None:
    s, i, v, se = wells(seed, mechanism, defect=False)
    for fitted in MECHANISMS:
        assert fit_inhibition(s, i, v, se, fitted) == plain_fit(s, i, v, se, fitted)


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_the_robust_fit_is_the_plain_leave_one_out_exactly(seed: int) -> None:
    s, i, v, se = wells(seed, MECHANISMS[seed % 3], defect=True)
    fits, kept = fit_inhibition_robust(s, i, v, se)
    expected, expected_kept = plain_robust(s, i, v, se)
    assert fits == expected
    assert kept.tolist() == expected_kept.tolist()
    assert not kept.all()  # the defect well was left out, so the test ran a second round


def test_subsets_that_leave_out_several_wells_are_fitted_as_alone() -> None:
    from labtools.simulators.tasks.kinetics_fit import _fit_subsets

    s, i, v, se = wells(5, "competitive", defect=False)
    masks = np.ones((3, v.size), bool)
    masks[1, [0, 7]] = False  # two wells out: not a leave-one-out round
    masks[2, 3:9] = False
    fits = _fit_subsets(s, i, v, se, "noncompetitive", masks)
    assert fits == [plain_fit(s[m], i[m], v[m], se[m], "noncompetitive") for m in masks]
