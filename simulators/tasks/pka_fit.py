"""A pKa from absorbance spectra of one indicator across buffers (numpy only).

Two-form model (physics reference §8): well ``i`` at ``pH_i`` reads
``A_i(λ) = s_i · [(1 − f_i) A_acid(λ) + f_i A_base(λ)]``, ``f_i = 1 / (1 + 10^(pKa − pH_i))``,
with ``s_i`` the well's relative indicator amount (1 ± pipetting error). For a given pKa the
model is linear in the two form spectra, so :func:`fit_pka` scans pKa on a grid, solving both
spectra by least squares at each point (variable projection), refines the minimum by golden
section, then re-estimates the ``s_i`` and repeats.

Only the amounts' equality pins the pKa: shifting it by ``δ`` while scaling the base spectrum
by ``10^δ`` and each ``s_i`` by ``1 − f_i + f_i·10^−δ`` fits any spectra exactly as well.
:func:`pka_posterior` therefore gives the amounts a prior, their scatter measured on replicate
wells, and each buffer's real pH another, its label's ±.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["PkaFit", "base_fraction", "fit_pka", "pka_posterior", "rss_profile"]

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
    projection = _projections(ph, np.asarray(pkas, dtype=float))
    g = spectra @ spectra.T
    return np.trace(g) - np.einsum("kij,ij->k", projection, g)


def _projections(ph: np.ndarray, pkas: np.ndarray) -> np.ndarray:
    """``P`` of :func:`rss_profile` at each of ``pkas`` (pKa × wells × wells): it depends on
    the pH values and the grid alone, so a grid's (the scan's: the same each fit and, with
    the same buffers, each episode) is kept for the next fit."""
    key = (ph.dtype.str, ph.tobytes(), pkas.tobytes()) if pkas.size > 1 else None
    kept = _GRID_PROJECTION.get(key) if key is not None else None
    if kept is not None:
        return kept
    f = base_fraction(ph[None, :], pkas[:, None])
    design = np.stack([1.0 - f, f], axis=-1)  # pKa × wells × 2
    gram = np.einsum("kni,knj->kij", design, design)
    projection = design @ np.linalg.pinv(gram) @ np.swapaxes(design, 1, 2)
    if key is not None:
        projection.flags.writeable = False
        _GRID_PROJECTION.clear()
        _GRID_PROJECTION[key] = projection
    return projection


#: the last grid's projections, under (the pH values' dtype, their bytes, the grid's bytes)
_GRID_PROJECTION: dict[tuple[str, bytes, bytes], np.ndarray] = {}


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


def pka_posterior(spectra: np.ndarray, ph: np.ndarray, ph_sd: np.ndarray) -> tuple[float, float]:
    """The pKa of ``spectra`` (wells × wavelengths, OD, blanked) and its standard uncertainty,
    with each buffer's real pH and each well's indicator amount uncertain.

    Wells of one labelled ``ph`` share a buffer, whose real pH is ``ph + d``,
    ``d ~ N(0, ph_sd²)``; every buffer needs replicate wells, whose amounts scatter as
    ``ln s ~ N(mean, σ_s²)`` (σ_s from that scatter). The posterior
    mode over pKa, ``d`` and ``ln s`` (the form spectra solved by projection) is found by
    Levenberg–Marquardt from :func:`fit_pka`'s answer; the uncertainty is its Laplace (Gauss–
    Newton) standard deviation, the readings' noise taken from that start's residuals.
    """
    levels, buffer = np.unique(ph, return_inverse=True)
    buffer_sd = np.array([ph_sd[buffer == k][0] for k in range(levels.size)])
    start = fit_pka(spectra, ph)
    dof = spectra.size - 2 * spectra.shape[1] - ph.size - 1
    noise = math.sqrt(start.rss / dof)
    scatter = _replicate_scatter(spectra, buffer)

    def residuals(theta: np.ndarray) -> np.ndarray:
        offsets = theta[1 : 1 + levels.size]
        log_s = np.concatenate([[0.0], theta[1 + levels.size :]])  # the first well: the unit
        f = base_fraction(ph + offsets[buffer], theta[0])
        s = np.exp(log_s)
        design = np.column_stack([s * (1.0 - f), s * f])
        forms, *_ = np.linalg.lstsq(design, spectra, rcond=None)
        misfit = (spectra - design @ forms).ravel() / noise
        return np.concatenate([misfit, offsets / buffer_sd, (log_s - log_s.mean()) / scatter])

    theta = np.concatenate([[start.pka], np.zeros(levels.size + ph.size - 1)])
    theta, jacobian = _levenberg_marquardt(residuals, theta)
    covariance = np.linalg.inv(jacobian.T @ jacobian)
    return float(theta[0]), math.sqrt(float(covariance[0, 0]))


def _replicate_scatter(spectra: np.ndarray, buffer: np.ndarray) -> float:
    """Relative SD of the indicator amount among wells of one buffer (index ``buffer``): each
    well's spectrum projected on its buffer's mean spectrum."""
    squares, dof = 0.0, 0
    for k in np.unique(buffer):
        wells = spectra[buffer == k]
        mean = wells.mean(axis=0)
        ratios = wells @ mean / (mean @ mean)
        squares += float(np.sum((ratios / ratios.mean() - 1.0) ** 2))
        dof += len(wells) - 1
    if dof == 0:
        raise ValueError("the amounts' scatter needs replicate wells of a buffer")
    return math.sqrt(squares / dof)


def _levenberg_marquardt(
    residuals: Callable[[np.ndarray], np.ndarray], theta: np.ndarray, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """The minimum of ``‖residuals(θ)‖²`` from ``theta`` and the Jacobian there (forward
    differences)."""
    damping = 1e-3
    current = residuals(theta)
    for _ in range(iterations):
        jacobian = _jacobian(residuals, theta, current)
        normal, gradient = jacobian.T @ jacobian, jacobian.T @ current
        while damping < 1e8:
            step = np.linalg.solve(normal + damping * np.diag(np.diag(normal)), -gradient)
            trial = residuals(theta + step)
            if trial @ trial < current @ current:
                theta, current, damping = theta + step, trial, damping / 3.0
                break
            damping *= 4.0
        if damping >= 1e8 or np.max(np.abs(step)) < 1e-7:
            break
    return theta, _jacobian(residuals, theta, current)


def _jacobian(
    residuals: Callable[[np.ndarray], np.ndarray], theta: np.ndarray, at: np.ndarray
) -> np.ndarray:
    h = 1e-6
    return np.column_stack([(residuals(theta + h * e) - at) / h for e in np.eye(theta.size)])


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
