"""Helpers for the tasks' scripted protocols: calling tools through a session, quantities,
and the small least-squares fits the protocols share."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from labtools.demo.protocol import Call, batch, one, with_tip
from labtools.session import Session
from labtools.units import QuantityJSON, qty

__all__ = ["Call", "batch", "caller", "nm", "nnls", "one", "site_of", "ul", "with_tip"]


def caller(session: Session) -> Call:
    """Tool calls through ``session.call_tool`` only (never the world), unwrapped."""

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return session.call_tool(name, arguments).unwrap()

    return call


def site_of(deck: dict[str, Any], plate: str) -> str:
    """Where ``plate`` stands in an ``lh_get_deck`` result (its deck site)."""
    return next(lw["location"] for lw in deck["labware"] if lw["name"] == plate)


def ul(value: float) -> QuantityJSON:
    """A volume in µL, as tools take it, rounded to 1 nL."""
    return qty(float(value), "microliter", decimals=3)


def nm(value: float) -> QuantityJSON:
    """A wavelength in nm, as tools take it."""
    return qty(float(value), "nanometer")


def nnls(basis: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares ``min ‖basis · x − target‖, x ≥ 0``, exact for a few columns:
    every subset of columns is fit by least squares and the best fit with no negative
    coefficient wins (2^columns fits; fine for the four dyes)."""
    columns = basis.shape[1]
    best, best_rss = np.zeros(columns), float(target @ target)
    for size in range(1, columns + 1):
        for active in combinations(range(columns), size):
            coef, *_ = np.linalg.lstsq(basis[:, active], target, rcond=None)
            if (coef < 0).any():
                continue
            residual = target - basis[:, active] @ coef
            rss = float(residual @ residual)
            if rss < best_rss:
                best, best_rss = np.zeros(columns), rss
                best[list(active)] = coef
    return best
