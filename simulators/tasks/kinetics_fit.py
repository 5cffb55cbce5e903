"""Fits the enzyme-kinetics protocols share (numpy only): rates from progress curves,
Michaelis–Menten parameters, and the three reversible-inhibition models.

Concentrations are in M, times in s, rates in M/s throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labtools.demo.analysis import OUTLIER_Z
from labtools.simulators.world.kinetics import MECHANISMS

__all__ = [
    "MECHANISMS",
    "InhibitionFit",
    "Rate",
    "fit_inhibition",
    "fit_inhibition_robust",
    "fit_michaelis_menten",
    "mechanism_probabilities",
    "rate_from_progress",
    "weights",
]

#: relative error added to each rate's own standard error in the fits' weights: pipetting and
#: the rate window's model error, so that no one well dominates
RELATIVE_FLOOR = 0.02
#: the inhibition fits' grids: 90 × 90 points, then two refinements of 41 × 41 around the best
#: (0: the last grid)
_REFINE = (41, 41, 0)
#: grid points whose fast weighted RSS is within this fraction of Σwv² of the least are
#: evaluated exactly (the fast form rounds to ~1e-15 of Σwv²)
_SLACK = 1e-9


@dataclass(frozen=True)
class Rate:
    """A well's rate ``v`` (M/s, standard error ``se``) at substrate concentration ``s`` (M)."""

    s: float
    v: float
    se: float


def rate_from_progress(
    times: np.ndarray,
    od: np.ndarray,
    baseline: float,
    od_per_molar: float,
    s0: float,
    *,
    max_conversion: float = 0.3,
    min_points: int = 5,
) -> Rate | None:
    """The rate of one well at the middle of its early progress curve, with the substrate left
    then: a quadratic fit of OD against time over the reads before ``max_conversion`` of ``s0``
    (M) has turned to product (at least ``min_points`` reads), its slope at the window's mean
    time, and ``s0`` less the product then, ``(OD − baseline)/od_per_molar``. Pairing each rate
    with the substrate actually left makes substrate consumed before and during the reads no
    bias. ``None`` when fewer than ``min_points`` finite reads exist."""
    keep = np.isfinite(od)
    times, od = times[keep], od[keep]
    if times.size < min_points:
        return None
    product = (od - baseline) / od_per_molar
    over = np.flatnonzero(product > max_conversion * s0)
    end = max(int(over[0]) if over.size else times.size, min_points)
    t, y = times[:end], od[:end]
    centre = t - t.mean()
    design = np.column_stack([np.ones_like(centre), centre, centre**2])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    dof = max(t.size - 3, 1)
    covariance = float(residual @ residual) / dof * np.linalg.inv(design.T @ design)
    se = math.sqrt(max(covariance[1, 1], 0.0)) / od_per_molar
    left = s0 - (coef[0] - baseline) / od_per_molar
    return Rate(s=float(left), v=float(coef[1] / od_per_molar), se=float(se))


def weights(v: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Least-squares weights of rates ``v`` with standard errors ``se``: 1/variance, the
    variance including :data:`RELATIVE_FLOOR`."""
    return 1.0 / (se**2 + (RELATIVE_FLOOR * np.abs(v)) ** 2 + 1e-300)


def fit_michaelis_menten(
    s: np.ndarray, v: np.ndarray, se: np.ndarray, scale: np.ndarray | None = None
) -> tuple[float, float, float]:
    """Weighted least squares of ``v = V·scale·s/(K + s)``: (K in M, V, weighted RSS).

    ``scale``: each rate's known multiplier (its enzyme concentration, for kcat as V); 1 when
    ``None``. K is searched on a log grid from 1/100 of the smallest ``s`` to 100× the largest,
    then refined twice on finer grids; V is linear, solved exactly for each K.
    """
    s, v, se = (np.asarray(x, dtype=float) for x in (s, v, se))
    scale = np.ones_like(s) if scale is None else np.asarray(scale, dtype=float)
    w = weights(v, se)
    low, high = math.log(max(s.min(), 1e-12) / 100.0), math.log(s.max() * 100.0)
    grid = np.linspace(low, high, 400)
    for _ in range(3):
        k = np.exp(grid)[:, None]
        x = scale * s / (k + s)  # (grid, points)
        big_v = (w * v * x).sum(axis=1) / (w * x * x).sum(axis=1)
        rss = (w * (v - big_v[:, None] * x) ** 2).sum(axis=1)
        best = int(np.argmin(rss))
        step = grid[1] - grid[0]
        grid = np.linspace(grid[best] - step, grid[best] + step, 81)
    return float(k[best, 0]), float(big_v[best]), float(rss[best])


@dataclass(frozen=True)
class InhibitionFit:
    """One mechanism's best fit: K (M), V, Ki (M) and its weighted RSS."""

    mechanism: str
    km: float
    vmax: float
    ki: float
    rss: float


def inhibited_rate(
    s: np.ndarray, i: np.ndarray, km: np.ndarray, ki: np.ndarray, mechanism: str
) -> np.ndarray:
    """``v / V`` for substrate ``s`` and inhibitor ``i`` (M) under ``mechanism`` (broadcasts)."""
    free = i / ki if mechanism in ("competitive", "noncompetitive") else 0.0
    bound = i / ki if mechanism in ("uncompetitive", "noncompetitive") else 0.0
    return s / (km * (1.0 + free) + s * (1.0 + bound))


def fit_inhibition(
    s: np.ndarray, i: np.ndarray, v: np.ndarray, se: np.ndarray, mechanism: str
) -> InhibitionFit:
    """Weighted least squares of one mechanism's rate law over all wells: K and Ki on a log
    grid (refined twice), V exact for each pair."""
    s, i, v, se = (np.asarray(x, dtype=float) for x in (s, i, v, se))
    return _fit_subsets(s, i, v, se, mechanism, np.ones((1, v.size), bool))[0]


def _fit_subsets(
    s: np.ndarray, i: np.ndarray, v: np.ndarray, se: np.ndarray, mechanism: str, masks: np.ndarray
) -> list[InhibitionFit]:
    """:func:`fit_inhibition` of each subset of the wells ``masks`` (rows of booleans) picks.

    The grid of each subset is searched as :func:`fit_inhibition` describes, but the subsets
    on one grid share its rate laws, and each point's weighted RSS at its best V comes from
    three sums over the wells (:func:`_sums`), ``Σwv² − (Σwvx)²/Σwx²``. That form rounds to
    about 1e-15 of ``Σwv²``; the points within :data:`_SLACK` of it from its minimum are then
    evaluated as ``Σw(v − Vx)²``, term by term in the subset's own order, and the least of them
    (the first on a tie) is the subset's choice: the very point, V and RSS of a fit of that
    subset alone.
    """
    w = weights(v, se)
    wv = w * v
    grids = [_start_grids(s[m], i[m]) for m in masks]
    subsets = [(s[m], i[m], w[m], v[m]) for m in masks]
    best: list[tuple[float, float, float, float]] = [(0.0, 0.0, 0.0, 0.0)] * len(masks)
    points = (s[:, None, None], i[:, None, None])
    for size in _REFINE:
        groups: dict[tuple[float, ...], list[int]] = {}
        for n, (k_grid, ki_grid) in enumerate(grids):
            key = (k_grid[0], k_grid[-1], ki_grid[0], ki_grid[-1], k_grid.size, ki_grid.size)
            groups.setdefault(key, []).append(n)
        for members in groups.values():
            k_grid, ki_grid = grids[members[0]]
            k, ki = np.exp(k_grid), np.exp(ki_grid)
            x = inhibited_rate(*points, k[None, :, None], ki[None, None, :], mechanism)
            x = x.reshape(v.size, -1)  # (wells, grid points)
            sum_wvx, sum_wxx, sum_wvv = _sums(x, w, wv, v, masks[members])
            fast = sum_wvv[:, None] - sum_wvx * sum_wvx / sum_wxx  # (subsets, grid points)
            for column, n in enumerate(members):
                sm, im, wm, vm = subsets[n]
                near = fast[column]
                candidates = np.flatnonzero(near <= near.min() + _SLACK * sum_wvv[column])
                if not candidates.size:  # NaN: every point, as a search of this subset alone
                    candidates = np.arange(near.size)
                a, b = np.divmod(candidates, ki_grid.size)
                xc = inhibited_rate(sm, im, k[a][:, None], ki[b][:, None], mechanism)
                big_v = (wm * vm * xc).sum(axis=-1) / (wm * xc * xc).sum(axis=-1)
                rss = (wm * (vm - big_v[:, None] * xc) ** 2).sum(axis=-1)
                pick = int(np.argmin(rss))
                ak, bk = int(a[pick]), int(b[pick])
                best[n] = (
                    float(np.exp(k_grid[ak])),
                    float(np.exp(ki_grid[bk])),
                    float(big_v[pick]),
                    float(rss[pick]),
                )
                if size:
                    dk, dki = k_grid[1] - k_grid[0], ki_grid[1] - ki_grid[0]
                    grids[n] = (
                        np.linspace(k_grid[ak] - dk, k_grid[ak] + dk, size),
                        np.linspace(ki_grid[bk] - dki, ki_grid[bk] + dki, size),
                    )
    return [InhibitionFit(mechanism, km, vmax, ki, rss) for km, ki, vmax, rss in best]


def _sums(
    x: np.ndarray, w: np.ndarray, wv: np.ndarray, v: np.ndarray, masks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Σwvx and Σwx² at each grid point (``x``: wells × grid points) and Σwv², over the wells
    of each of ``masks``. Over all the masks' wells by a product with a vector, then the wells
    each mask leaves out subtracted when it leaves out one at most (a leave-one-out round),
    else each mask's own product: no matrix–matrix product (a multithreaded BLAS spends more
    waiting for its threads than this work takes on one core)."""
    union = masks.any(axis=0)
    xx = x * x
    out = ~masks & union
    if out.sum(axis=1).max() > 1:
        sum_wvx = np.array([(wv * m) @ x for m in masks])
        sum_wxx = np.array([(w * m) @ xx for m in masks])
    else:
        rows, left = np.nonzero(out)
        sum_wvx = np.repeat(((wv * union) @ x)[None, :], len(masks), axis=0)
        sum_wxx = np.repeat(((w * union) @ xx)[None, :], len(masks), axis=0)
        sum_wvx[rows] -= wv[left, None] * x[left]
        sum_wxx[rows] -= w[left, None] * xx[left]
    return sum_wvx, sum_wxx, masks @ (wv * v)


def _start_grids(s: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first grids of ln K and ln Ki: from 1/100 of the smallest ``s`` (``i`` > 0) to 100×
    the largest, 90 points each."""
    k_grid = np.linspace(math.log(s.min() / 100.0), math.log(s.max() * 100.0), 90)
    positive = i[i > 0]
    low_i = positive.min() if positive.size else 1e-6
    high_i = positive.max() if positive.size else 1e-3
    ki_grid = np.linspace(math.log(low_i / 100.0), math.log(high_i * 100.0), 90)
    return k_grid, ki_grid


def fit_inhibition_robust(
    s: np.ndarray, i: np.ndarray, v: np.ndarray, se: np.ndarray
) -> tuple[list[InhibitionFit], np.ndarray]:
    """Every mechanism's :func:`fit_inhibition`, after leaving out, one at a time, the well
    whose deletion lowers the best fit's weighted RSS by more than
    :data:`~labtools.demo.analysis.OUTLIER_Z`² residual variances (at least 1: the weights hold
    each rate's error): a defect well's short path lowers its rate, and a least-squares fit
    bends towards it, so its own residual does not show it. The fits, and the wells kept."""
    s, i, v, se = (np.asarray(x, dtype=float) for x in (s, i, v, se))
    kept = np.ones(v.size, bool)
    while True:
        if kept.sum() <= 7:
            return _fits_of(s, i, v, se, kept[None, :])[0], kept
        left = np.flatnonzero(kept)
        masks = np.repeat(kept[None, :], left.size + 1, axis=0)
        masks[np.arange(1, left.size + 1), left] = False  # row 1 + n leaves out well left[n]
        fits, *others = _fits_of(s, i, v, se, masks)
        rss = min(f.rss for f in fits)
        without = {int(j): min(f.rss for f in other) for j, other in zip(left, others, strict=True)}
        worst = min(without, key=without.__getitem__)
        variance = max(without[worst] / (kept.sum() - 4), 1.0)
        if rss - without[worst] <= OUTLIER_Z**2 * variance:
            return fits, kept
        kept[worst] = False


def _fits_of(
    s: np.ndarray, i: np.ndarray, v: np.ndarray, se: np.ndarray, masks: np.ndarray
) -> list[list[InhibitionFit]]:
    """Each mechanism's fit of each subset ``masks`` picks: per subset, in :data:`MECHANISMS`
    order."""
    per_mechanism = [_fit_subsets(s, i, v, se, m, masks) for m in MECHANISMS]
    return [list(fits) for fits in zip(*per_mechanism, strict=True)]


def mechanism_probabilities(fits: list[InhibitionFit], points: int) -> dict[str, float]:
    """Posterior-like probabilities of the mechanisms from their fits (same number of
    parameters, so no penalty differs): ``exp(−ΔRSS / 2σ²)`` with σ² the best fit's weighted
    residual variance (at least 1: the weights already hold each rate's error), normalised."""
    best = min(f.rss for f in fits)
    sigma2 = max(best / max(points - 3, 1), 1.0)
    raw = {f.mechanism: math.exp(-(f.rss - best) / (2.0 * sigma2)) for f in fits}
    total = sum(raw.values())
    return {m: raw[m] / total for m in MECHANISMS if m in raw}
