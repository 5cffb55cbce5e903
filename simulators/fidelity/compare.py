"""A lab's readings against a twin's replicates of them: PIT values, coverage, a two-sample test.

For each reading, the twin's K replicates are K draws of its predictive distribution. The
lab's reading's *rank* among them, ties broken at random, gives its randomised PIT value
``(rank + V) / (K + 1)``, ``V ~ U(0, 1)``: exactly uniform on (0, 1) when the lab's reading is
exchangeable with the twin's, for any K [V: Gneiting, Balabdaoui & Raftery 2007, J. R. Stat.
Soc. B 69:243, §3.1 (randomised PIT and rank histograms)]. The reading lies in the twin's
central predictive p-interval when ``|PIT − ½| < p/2``; the share that does is the *coverage*,
nominally p.

The two-sample test per group is the Anderson–Darling k-sample test
(:func:`scipy.stats.anderson_ksamp`) of the lab's PIT values against the twin replicates' own
leave-one-out PIT values (each replicate ranked among the others): AD rather than
Kolmogorov–Smirnov because it weighs the tails, where a twin that misses outlier wells or
stray light departs first, and two-sample because the replicates' PITs share every feature of
the ensemble (K, ties, censoring at the range) that an ideal U(0, 1) would not. The readings of
one lab are not independent (they share the instrument's parameters, the plate and the stock),
so scipy's p-value (``p_iid``, which assumes independent readings and is clipped to
[0.001, 0.25]) is optimistic; ``p_mc`` ranks the lab's statistic among the same statistic of
each twin replicate against the rest, exact under exchangeability whatever the dependence
[C: a Monte Carlo test, its resolution 1/(K+1)].
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["LEVELS", "compare_group", "pit"]

#: the central predictive intervals whose coverage is reported
LEVELS = (0.5, 0.9, 0.95)
#: at most this many of the replicates' PIT values in the test's reference sample (a random
#: subset: the statistic's cost grows with it, its power hardly past it) [A]
REFERENCE_MAX = 30_000


def pit(ensemble: np.ndarray, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Randomised PIT of ``values`` (N) among ``ensemble`` (K × N) (module docstring)."""
    below = (ensemble < values).sum(axis=0)
    ties = (ensemble == values).sum(axis=0)
    rank = below + rng.integers(0, ties + 1)
    return (rank + rng.uniform(size=values.shape)) / (ensemble.shape[0] + 1)


def _ad(sample: np.ndarray, reference: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns whenever it clips the p-value
        return float(stats.anderson_ksamp([sample, reference]).statistic)


def _ad_p(sample: np.ndarray, reference: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.anderson_ksamp([sample, reference]).pvalue)


def _subset(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if values.size <= REFERENCE_MAX:
        return values
    return rng.choice(values, REFERENCE_MAX, replace=False)


def compare_group(
    lab: Mapping[str, float],
    replicates: Sequence[Mapping[str, float]],
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One reading group: ``{"readings", "censored", "coverage": {"50": …}, "pit_mean",
    "width90_median", "test": {"statistic", "p_iid", "p_mc"}}``.

    ``lab``: the lab's readings by name; ``replicates``: each twin replicate's. Readings the
    lab reported over range, or some replicate lacks, are counted in ``censored`` and left out.
    """
    names = [n for n, v in lab.items() if np.isfinite(v) and all(n in r for r in replicates)]
    censored = len(lab) - len(names)
    k = len(replicates)
    out: dict[str, Any] = {"readings": len(names), "censored": censored}
    if not names or k < 2:
        return {**out, "coverage": None, "pit_mean": None, "width90_median": None, "test": None}
    x = np.array([lab[n] for n in names])
    ensemble = np.array([[r[n] for n in names] for r in replicates])
    values = pit(ensemble, x, rng)
    out["coverage"] = {
        f"{round(level * 100)}": float(np.mean(np.abs(values - 0.5) < level / 2))
        for level in LEVELS
    }
    out["pit_mean"] = float(values.mean())
    with np.errstate(invalid="ignore"):
        low, high = np.quantile(ensemble, [0.05, 0.95], axis=0)
        width = high - low
    finite = width[np.isfinite(width)]
    out["width90_median"] = float(np.median(finite)) if finite.size else None
    # each replicate's PIT among the others: the reference sample and the null's statistics
    own = [pit(np.delete(ensemble, j, axis=0), ensemble[j], rng) for j in range(k)]
    pooled = _subset(np.concatenate(own), rng)
    statistic = _ad(values, pooled)
    null = [_ad(own[j], _subset(np.concatenate(own[:j] + own[j + 1 :]), rng)) for j in range(k)]
    p_mc = (1 + sum(t >= statistic for t in null)) / (k + 1)
    out["test"] = {
        "method": "anderson_ksamp of PIT values",
        "statistic": statistic,
        "p_iid": _ad_p(values, pooled),
        "p_mc": float(p_mc),
    }
    return out
