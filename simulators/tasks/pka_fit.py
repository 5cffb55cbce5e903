"""A pKa from absorbance spectra of one indicator across buffers (numpy only).

Two-form model (physics reference §8): well ``i`` at ``pH_i`` reads
``A_i(λ) = s_i · [(1 − f_i) A_acid(λ) + f_i A_base(λ)]``, ``f_i = 1 / (1 + 10^(pKa − pH_i))``,
with ``s_i`` the well's relative indicator amount (1 ± pipetting error). For a given pKa the
model is linear in the two form spectra, so the fit scans pKa on a grid, solving both spectra
by least squares at each point (variable projection), refines the minimum by golden section,
then re-estimates the ``s_i`` and repeats.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["PkaFit", "base_fraction", "fit_pka", "rss_profile"]

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def base_fraction(ph: np.ndarray, pka: float | np.ndarray) -> np.ndarray:
    """Fraction in the base form, ``1 / (1 + 10^(pKa − pH))`` (broadcasts)."""
    return 1.0 / (1.0 + 10.0 ** (np.asarray(pka) - np.asarray(ph)))


def rss_profile(spectra: np.ndarray, ph: np.ndarray, pkas: np.ndarray) -> np.ndarray:
    """Residual sum of squares (OD²) of the best two-form fit at each pKa of ``pkas``.

    ``spectra``: wells × wavelengths (OD, blanked); ``ph``: each well's pH. With ``F`` the
    wells × 2 matrix ``[1 − f, f]``, RSS = tr(G) − tr(P G), ``P`` the projection on ``F``'s
    columns and ``G = spectra · spectraᵀ``.
    """
    f = base_fraction(ph[None, :], np.asarray(pkas, dtype=float)[:, None])
    design = np.stack([1.0 - f, f], axis=-1)  # pKa × wells × 2
    gram = np.einsum("kni,knj->kij", design, design)
    projection = design @ np.linalg.pinv(gram) @ np.swapaxes(design, 1, 2)
    g = spectra @ spectra.T
    return np.trace(g) - np.einsum("kij,ij->k", projection, g)


class PkaFit:
    """The fitted pKa, form spectra (OD at each wavelength), well scales and residual RSS."""

    def __init__(
        self, pka: float, acid: np.ndarray, base: np.ndarray, scales: np.ndarray, rss: float
    ) -> None:
        self.pka = pka
        self.acid = acid
        self.base = base
        self.scales = scales
        self.rss = rss

    def model(self, ph: np.ndarray) -> np.ndarray:
        """Modelled spectra (wells × wavelengths) at ``ph``, without the well scales."""
        f = base_fraction(ph, self.pka)[:, None]
        return (1.0 - f) * self.acid[None, :] + f * self.base[None, :]


def fit_pka(
    spectra: np.ndarray,
    ph: np.ndarray,
    *,
    bounds: tuple[float, float] = (0.0, 14.0),
    step: float = 0.02,
    scale_rounds: int = 3,
) -> PkaFit:
    """Least-squares pKa of ``spectra`` (wells × wavelengths, OD, blanked) at ``ph``.

    ``scale_rounds``: how many times the wells' relative amounts are re-estimated (0: all 1).
    """
    spectra = np.asarray(spectra, dtype=float)
    ph = np.asarray(ph, dtype=float)
    scales = np.ones(ph.size)
    fit = _fit_fixed_scales(spectra, ph, bounds, step)
    for _ in range(scale_rounds):
        modelled = fit.model(ph)
        scales = np.sum(spectra * modelled, axis=1) / np.sum(modelled**2, axis=1)
        scales = scales / scales.mean()
        fit = _fit_fixed_scales(spectra / scales[:, None], ph, bounds, step)
    fit.scales = scales
    return fit


def _fit_fixed_scales(
    spectra: np.ndarray, ph: np.ndarray, bounds: tuple[float, float], step: float
) -> PkaFit:
    grid = np.arange(bounds[0], bounds[1] + step / 2, step)
    rss = rss_profile(spectra, ph, grid)
    i = int(np.argmin(rss))
    low, high = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    pka = _golden_minimum(lambda x: float(rss_profile(spectra, ph, np.array([x]))[0]), low, high)
    f = base_fraction(ph, pka)
    design = np.column_stack([1.0 - f, f])
    forms, *_ = np.linalg.lstsq(design, spectra, rcond=None)
    residual = spectra - design @ forms
    return PkaFit(pka, forms[0], forms[1], np.ones(ph.size), float(np.sum(residual**2)))


def _golden_minimum(
    func: Callable[[float], float], low: float, high: float, tol: float = 1e-5
) -> float:
    """The minimum of a unimodal ``func`` on [low, high] by golden-section search."""
    a, b = low, high
    c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
    fc, fd = func(c), func(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - _GOLDEN * (b - a)
            fc = func(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLDEN * (b - a)
            fd = func(d)
    return (a + b) / 2.0
