"""The ``identify`` family's protocols on a plate: the library's spectra as the tool gives them,
the expert's survey, matrix-blanked replicates and Bayesian comparison of the candidates, and
the fits of the naive protocol and of the experiment without controls.

The expert (:func:`identify`):

1. **References** (one call): every candidate's molar absorptivity from the species library
   (``library_spectra``, 300-760 nm every nm: the literature's spectra, not the sample's lot),
   interpolated by a cubic spline.
2. **Survey** (one read): the matrix blank neat, the sample neat and 1 in 10 in water, spectra
   over :data:`~.protocol.GRID_NM`: how strong the sample reads (its matrix included) and how
   much of that is the unknown.
3. **Replicates** (one read): the sample diluted in water to bring its strongest reading near
   :data:`TARGET_OD`, in triplicate, and the matrix blank at the same share in triplicate (a
   faint unknown, below :data:`LOW_OD` there: six of each in :data:`LOW_UL` wells, the plate
   read :data:`~.protocol.FAINT_REPEATS` times). Water's band leaves out defect wells.
4. **Comparison**: the sample's mean spectrum less the blanks' (the matrix and the plate off),
   over the wavelengths every sample well reads in the accurate range, fitted by each
   candidate's library spectrum with its bands moved by a shift ``s`` (an energy shift at the
   band's maximum), an amplitude and a constant. The noise is the replicates' scatter about
   their mean, or the best fit's residual where that is larger (model error counts as noise);
   each candidate's evidence integrates the shift over its prior, N(0, :data:`PRIOR_SD_NM`²),
   in the Laplace approximation (:func:`evidence`); the posterior is uniform prior × evidence,
   a :data:`FLOOR` of it spread evenly (no candidate is ever ruled out entirely).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize_scalar

from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    FAINT_REPEATS,
    GRID_NM,
    MIN_UL,
    PLATE,
    kept,
    read,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.scripting import Call, nm, nominal_path_cm, nominal_plate_od, site_of

__all__ = ["Reference", "evidence", "identify", "posterior", "references"]

#: the reference spectra asked for (nm): wide enough that a band moved by
#: :data:`SHIFT_LIMIT_NM` still covers :data:`~.protocol.GRID_NM` [A]
REFERENCE_NM = (300.0, 760.0, 1.0)
#: the expert's prior on the unknown's band shift (1 sd, nm) [A: the widest the family's
#: matrices draw, the statement's "up to about 15 nm" at 2.5 sd]
PRIOR_SD_NM = 6.0
#: shifts searched (nm either way) [A: beyond the statement's 15 nm]
SHIFT_LIMIT_NM = 20.0
#: the share of the posterior spread evenly over the candidates [A: a thousandth]
FLOOR = 1e-3
#: the replicates' aim: the sample's strongest reading (its matrix included) at this optical
#: density [A: inside the reader's accurate 0.1-2.0 OD with room for the plate's 0.04]
TARGET_OD = 1.2
#: the unknown reading below this in a replicate well sends the sample to :data:`LOW_UL` wells,
#: six of them, the plate read :data:`~.protocol.FAINT_REPEATS` times [A]
LOW_OD = 0.1
WELL_UL, LOW_UL = 200.0, 300.0
#: the survey's wells: the matrix blank, the sample neat, the sample 1 in 10
SURVEY = ("A1", "A2", "A3")


@dataclass(frozen=True)
class Reference:
    """A candidate's library spectrum (ε, M⁻¹ cm⁻¹, on ``grid`` nm), as a smooth function."""

    grid: np.ndarray
    epsilon: np.ndarray

    @property
    def peak_nm(self) -> float:
        return float(self.grid[int(np.argmax(self.epsilon))])

    @property
    def peak_epsilon(self) -> float:
        return float(np.max(self.epsilon))

    def at(self, wavelengths: np.ndarray, shift_nm: float = 0.0) -> np.ndarray:
        """ε at ``wavelengths`` with the bands moved ``shift_nm`` to the red at the maximum (the
        same energy shift everywhere: a band keeps its width in wavenumber)."""
        peak = self.peak_nm
        move = 1e7 / peak - 1e7 / (peak + shift_nm)
        source = 1e7 / (1e7 / np.asarray(wavelengths, dtype=float) + move)
        return np.asarray(self._spline(source), dtype=float)

    @cached_property
    def _spline(self) -> CubicSpline:
        return CubicSpline(self.grid, self.epsilon)


def references(call: Call, keys: Sequence[str]) -> dict[str, Reference]:
    """Each of ``keys``' library spectrum, through the task's ``library_spectra`` tool."""
    start, stop, step = REFERENCE_NM
    data = call(
        "library_spectra", candidates=list(keys), start=nm(start), stop=nm(stop), step=nm(step)
    )
    grid = np.array(data["wavelengths"], dtype=float)
    return {k: Reference(grid, np.array(data["spectra"][k], dtype=float)) for k in keys}


# -- the comparison --------------------------------------------------------------------------
def _rss(y: np.ndarray, x: np.ndarray, ref: Reference, shift: float) -> float:
    """The residual sum of squares of ``y`` fitted by ``ref`` moved ``shift`` (a non-negative
    amplitude) and a constant."""
    shape = ref.at(x, shift)
    design = np.column_stack([shape, np.ones_like(shape)])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    if coef[0] < 0:
        return float(np.sum((y - y.mean()) ** 2))
    return float(np.sum((y - design @ coef) ** 2))


@dataclass(frozen=True)
class Fit:
    """A candidate's best shift, its residual there and the residual's curvature in the shift
    (d²RSS/ds², OD² nm⁻²)."""

    shift_nm: float
    rss: float
    curvature: float


def fit(y: np.ndarray, x: np.ndarray, ref: Reference) -> Fit:
    """``ref``'s best shift for ``y`` at wavelengths ``x``: a 0.5 nm grid over ±
    :data:`SHIFT_LIMIT_NM`, refined by Brent's method within a step of the best point."""
    shifts = np.arange(-SHIFT_LIMIT_NM, SHIFT_LIMIT_NM + 0.25, 0.5)
    values = [_rss(y, x, ref, s) for s in shifts]
    best = float(shifts[int(np.argmin(values))])
    low, high = max(best - 0.5, -SHIFT_LIMIT_NM), min(best + 0.5, SHIFT_LIMIT_NM)
    found = minimize_scalar(
        lambda s: _rss(y, x, ref, float(s)),
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-4},
    )
    shift = float(found.x)
    rss = min(float(found.fun), min(values))
    step = 0.05
    curvature = (
        _rss(y, x, ref, shift + step) - 2.0 * _rss(y, x, ref, shift) + _rss(y, x, ref, shift - step)
    ) / step**2
    return Fit(shift, rss, max(curvature, 0.0))


def evidence(fitted: Fit, sigma2: float, prior_sd: float = PRIOR_SD_NM) -> float:
    """ln ∫ exp(−RSS(s) / 2σ²) N(s; 0, prior_sd²) ds (up to a constant shared by the
    candidates), RSS quadratic about the best shift (Laplace)."""
    precision = fitted.curvature / (2.0 * sigma2)  # of the likelihood in s
    spread = prior_sd**2 + (1.0 / precision if precision > 0 else math.inf)
    penalty = 0.0 if math.isinf(spread) else fitted.shift_nm**2 / (2.0 * spread)
    return -fitted.rss / (2.0 * sigma2) - 0.5 * math.log1p(precision * prior_sd**2) - penalty


def posterior(
    y: np.ndarray, refs: Mapping[str, Reference], noise2: float, *, floor: float = FLOOR
) -> dict[str, float]:
    """Each candidate's probability given the blanked spectrum ``y`` over
    :data:`~.protocol.GRID_NM` (NaN where not to be used) and the replicates' noise variance of
    ``y`` (OD²): σ² is that or the best fit's residual variance, whichever is larger."""
    used = np.isfinite(y)
    x, values = GRID_NM[used], y[used]
    fits = {k: fit(values, x, ref) for k, ref in refs.items()}
    points = int(used.sum())
    sigma2 = max(noise2, min(f.rss for f in fits.values()) / max(points - 3, 1), 1e-12)
    logs = np.array([evidence(f, sigma2) for f in fits.values()])
    weights = np.exp(logs - logs.max())
    share = weights / weights.sum()
    share = (1.0 - floor) * share + floor / len(share)
    return dict(zip(refs, map(float, share), strict=True))


def scatter2(wells: list[np.ndarray], used: np.ndarray) -> float:
    """The variance of the mean of ``wells``' spectra at one wavelength (OD²): each well's
    residual about an amplitude and offset times their mean (a well's volume and its own
    offset are not noise), pooled."""
    if len(wells) < 2:
        return 0.0
    stack = np.array([w[used] for w in wells])
    mean = stack.mean(axis=0)
    design = np.column_stack([mean, np.ones_like(mean)])
    total = 0.0
    for row in stack:
        coef, *_ = np.linalg.lstsq(design, row, rcond=None)
        total += float(np.sum((row - design @ coef) ** 2))
    n = len(wells)
    dof = max(n * (mean.size - 2), 1)
    return total / dof * n / (n - 1) / n


# -- the expert ------------------------------------------------------------------------------
def identify(
    call: Call, candidates: Sequence[str], *, sample: str, matrix: str, water: str
) -> dict[str, float]:
    """Each candidate's probability of being the sample's unknown, through ``call`` only."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    refs = references(call, candidates)

    # 2. survey: row A
    blank_well, neat_well, tenth_well = SURVEY
    transfer(call, [(water, well(tenth_well), 180.0)], "reuse")
    transfer(
        call,
        [
            (matrix, well(blank_well), WELL_UL),
            (sample, well(neat_well), WELL_UL),
            (sample, well(tenth_well), 20.0),
        ],
        "per_source",
    )
    spectra = read(call, home, list(SURVEY))
    plate = nominal_plate_od()
    neat, tenth = spectra[neat_well], spectra[tenth_well]
    readable = bool(np.all(np.isfinite(neat))) and float(np.max(neat)) < ACCURATE_OD
    top = float(np.max(neat)) - plate if readable else 10.0 * (float(np.nanmax(tenth)) - plate)
    net = neat - spectra[blank_well]
    unknown = float(np.nanmax(net)) if readable and np.isfinite(net).any() else math.inf

    # 3. replicates: rows B (matrix blanks) and C (the sample)
    faint = unknown * min(1.0, TARGET_OD / max(top, 1e-6)) < LOW_OD
    volume = LOW_UL if faint else WELL_UL
    gain = nominal_path_cm(volume) / nominal_path_cm(WELL_UL)
    share = min(1.0, TARGET_OD / max(top * gain, 1e-6))
    sample_ul = max(round(volume * share, 1), 10.0)
    sample_ul = volume if volume - sample_ul < MIN_UL else sample_ul
    count = 6 if faint else 3
    blanks = [f"B{i + 1}" for i in range(count)]
    samples = [f"C{i + 1}" for i in range(count)]
    if sample_ul < volume:
        transfer(call, [(water, well(w), volume - sample_ul) for w in blanks + samples], "reuse")
    moves = [(matrix, well(w), sample_ul) for w in blanks]
    moves += [(sample, well(w), sample_ul) for w in samples]
    transfer(call, moves, "per_source")
    wells = blanks + samples
    spectra = read(call, home, wells, path_check=True, repeats=FAINT_REPEATS if faint else 1)
    healthy = sound(spectra.pop("band"), wells)
    blanks = kept([w for w in blanks if w in healthy], blanks, 2)
    samples = kept([w for w in samples if w in healthy], samples, 2)

    # 4. the comparison
    ours = [spectra[w] for w in samples]
    theirs = [spectra[w] for w in blanks]
    used = np.all(np.isfinite(ours), axis=0) & np.all(np.isfinite(theirs), axis=0)
    used &= np.all(np.array(ours) < ACCURATE_OD, axis=0)
    y = np.where(used, np.mean(ours, axis=0) - np.mean(theirs, axis=0), np.nan)
    noise2 = scatter2(ours, used) + scatter2(theirs, used)
    return posterior(y, refs, noise2)


def library_match(y: np.ndarray, refs: Mapping[str, Reference], noise: float) -> dict[str, float]:
    """The experiment without controls' match: each candidate's library spectrum, unshifted,
    fitted to ``y`` with an amplitude and a constant over the wavelengths read in the accurate
    range; the probabilities from the residuals with the reader's nominal noise ``noise``."""
    used = np.isfinite(y) & (y < ACCURATE_OD)
    x, values = GRID_NM[used], y[used]
    rss = np.array([_rss(values, x, ref, 0.0) for ref in refs.values()])
    logs = -rss / (2.0 * noise**2)
    weights = np.exp(logs - logs.max())
    share = weights / weights.sum()
    share = (1.0 - FLOOR) * share + FLOOR / len(share)
    return dict(zip(refs, map(float, share), strict=True))
