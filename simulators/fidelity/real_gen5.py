"""A real BioTek Gen5 path-check plate (``tests/data/real/gen5_pathcheck_dna``): split, and the
profile its calibration part identifies, fitted by maximum likelihood under the twin's model.

**The readings.** Each of the plate's 96 wells was read once at 977 nm (water's NIR band) and
once at 900 nm (the baseline); Gen5 exports them to 3 decimals. The twin's model of the two
reads of a well (``simulators/plate_reading/absorbance.py``, ``variation.py``; water absorbs
nothing at 900 nm there, 3.5e-5 per cm [C: the species library at 25 °C])::

    r900 = B + o + δ + e₁,   r977 = B + o + δ + Δα · L / 10 + e₂,   reported: round(r, 3)

``B`` the plate's blank (its plastic, the reader's zero and gain: one sum, the level of every
read), ``o`` the well's optical offset, ``U(−√3 τ, √3 τ)`` (``reader.absorbance.well_offset``,
fitted as its sd τ), ``e`` read noise of sd ``√(floor² + (log10 e / snr0)² 10^A)``
(``reader.absorbance.noise_floor``; snr0 held at the profile's: the shot term is 2e-4 OD at
these ODs and one read per well cannot tell it from the floor), ``Δα`` water's 977 − 900 nm
absorption at the twin's 25 °C, ``L`` the liquid column (mm): ``L_c + N(0, well_sd²)`` for a
well of class ``c`` (``reader.path.well_sd``), and in a defect well (probability
``outlier_fraction``) an extra OD ``δ ~ N(0, outlier_od²)`` and the column times
``1 − outlier_path_loss · |z|``. The likelihood of the two *reported* values is exact for
this model: the rounding interval's normal probability for each read, given the well's
offset, column and defect, integrated over them (:class:`Likelihood`): the well's column
spread is normal and joins the 977 nm read's noise; its common shift ``o + δ`` and a defect's
shortfall ``|z|`` by Gauss–Legendre quadrature on the window where the reported read is within
:data:`WINDOW_SD` read sds, cut to the offset's support, so the likelihood is smooth in every
parameter [C].

**Classes of wells** (:func:`well_class`): a plate holds liquids of different volumes, which
the twin is told, not fitted, as a user tells it what they pipetted. Gen5 names the two blanks
(G12, H12: 0.28 cm of liquid against the samples' 0.11), and 14 of the 94 "samples" read at
260 nm as the blanks do (0.063–0.073 AU against DNA's 0.31–0.75): they hold no DNA, and their
977 − 900 nm difference is 30 % above the DNA wells' (0.0247 against 0.0191 AU, means). They
are the plate's heavy tail: the DNA wells alone have sd 0.00142, skew −0.13; all 94 together
sd 0.00255, skew 1.33 (tests/data/real/gen5_pathcheck_dna/README.md).

**The split** (:func:`split`), fixed before any fit: a checkerboard, wells whose row and column
indices sum to an even number calibrate, the others are held out. Every row and every column
is in both halves, so what a row shares (a channel of an 8-channel head) or a column shares (a
dispense, a plate edge) is seen by the calibration part and tested on the held-out one, and
each half holds one of the two blanks.

Not identified, so held at the profile's: the gain error (it scales every path as the volume
does: folded into ``L_c``), ``snr0``, the path offset and meniscus (the volume absorbs them),
and water's band at the real plate's 26.3 °C (0.7 % above 25 °C [C: the library's 1.064× at
37 °C], also folded into ``L_c``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, special
from scipy.differentiate import hessian

from labtools.records import read_asm
from labtools.simulators.calibration.estimates import (
    Estimate,
    entry,
    log_ci,
    normal_ci,
    profile_ci,
)
from labtools.simulators.calibration.fit_reader import plate_layout, water_alpha
from labtools.simulators.published import published

__all__ = [
    "LABWARE",
    "Gen5Plate",
    "Likelihood",
    "Well",
    "column_of_volume",
    "delta_alpha",
    "fit",
    "read_plate",
    "split",
    "volume_of_column",
    "well_class",
]

#: the twin's plate for the predictions: the virtual deck's (its height-volume table turns a
#: fitted column into the volume the twin is filled with) [A: the real "Generic 96 UV" plate's
#: geometry is not in the export; only the column matters]
LABWARE = "cor_96_wellplate_360uL_Fb"
#: the twin's plate temperature (°C): the virtual lab's room [V: simulators/world/thermal.py]
TWIN_C = 25.0
#: a "sample" whose 260 nm reading is below this multiple of the blanks' mean holds no DNA
#: [A: the blanks read 0.058, DNA-free samples 0.063-0.073 and DNA 0.31-0.75 AU; any cut
#: between 1.3x and 5x gives the same classes]
NO_DNA_RATIO = 2.0
_LOG10_E = 0.4342944819032518
#: Gauss-Legendre nodes over a well's shift and over a defect's path shortfall [A: the NLL
#: moves by < 0.01 with 40/24 nodes at the calibration fit]
SHIFT_NODES = 20
SHORTFALL_NODES = 12
#: the quadrature windows reach this many read sds beyond the rounding cell [A: Φ(-6) ~ 1e-9]
WINDOW_SD = 6.0
#: the defect's shortfall |z| is integrated up to this [A: 2 Φ(-6) ~ 2e-9 of its mass beyond]
_Z_MAX = 6.0
CLASSES = ("dna", "no dna", "blank")


@dataclass(frozen=True)
class Well:
    """One well's two reports (AU), its class and its place (row and column index, from 0)."""

    name: str
    kind: str
    r977: float
    r900: float
    row: int
    column: int

    @property
    def difference(self) -> float:
        return self.r977 - self.r900


@dataclass(frozen=True)
class Gen5Plate:
    """The plate's wells and what the export says of the reads."""

    wells: tuple[Well, ...]
    #: the export's resolution (AU): every reading a multiple of it
    step: float
    temperature_c: float
    source: str


def well_class(role_blank: bool, a260: float, blank_a260: float) -> str:
    """``blank`` (Gen5's BLK), ``no dna`` (a sample reading at 260 nm as the blanks do:
    :data:`NO_DNA_RATIO`) or ``dna``."""
    if role_blank:
        return "blank"
    return "no dna" if a260 < NO_DNA_RATIO * blank_a260 else "dna"


def read_plate(path: str | Path) -> Gen5Plate:
    """The Gen5 export's wells (ASM, :func:`labtools.records.read_asm`)."""
    doc = read_asm(path)
    by: dict[float, dict[str, Any]] = {}
    for m in doc.measurements:
        if m.wavelength is not None and m.well is not None:
            by.setdefault(m.wavelength, {})[m.well] = m
    missing = {977.0, 900.0, 260.0} - set(by)
    if missing:
        raise ValueError(f"{path}: no reads at {sorted(missing)} nm (a path-check plate has)")
    blanks = [w for w, m in by[260.0].items() if m.sample == "BLK"]
    blank_a260 = float(np.mean([by[260.0][w].value for w in blanks]))
    wells = []
    for name, m in sorted(by[977.0].items()):
        kind = well_class(m.sample == "BLK", float(by[260.0][name].value), blank_a260)
        wells.append(
            Well(
                name,
                kind,
                float(m.value),
                float(by[900.0][name].value),
                "ABCDEFGHIJKLMNOP".index(name[0]),
                int(name[1:]) - 1,
            )
        )
    values = np.array([[w.r977, w.r900] for w in wells])
    step = 0.001
    if not np.allclose(values / step, np.round(values / step), atol=1e-6):
        raise ValueError(f"{path}: the 977/900 nm reads are not multiples of {step} AU")
    temperature = next(m.temperature_c for m in doc.measurements if m.temperature_c is not None)
    return Gen5Plate(tuple(wells), step, float(temperature), str(path))


def split(plate: Gen5Plate) -> tuple[list[Well], list[Well]]:
    """(calibration, held out): the checkerboard of the module docstring."""
    calibration = [w for w in plate.wells if (w.row + w.column) % 2 == 0]
    held_out = [w for w in plate.wells if (w.row + w.column) % 2 == 1]
    return calibration, held_out


def delta_alpha() -> float:
    """Water's 977 − 900 nm absorption (1/cm) in the twin at :data:`TWIN_C`."""
    alpha = water_alpha(np.array([977.0, 900.0]), TWIN_C)
    return float(alpha[0] - alpha[1])


def column_of_volume(volume_ul: float) -> float:
    """The twin's liquid column (mm) of ``volume_ul`` in :data:`LABWARE` (the published
    profile's path model: flat, its path offset)."""
    offset = published()["reader.path.offset"].in_unit("millimeter").expected
    return float(plate_layout(LABWARE, offset).column_mm(np.array([float(volume_ul)]))[0])


def volume_of_column(column_mm: float) -> float:
    """The volume (µL) whose column in :data:`LABWARE` is ``column_mm`` (the inverse of
    :func:`column_of_volume`)."""
    return float(optimize.brentq(lambda v: column_of_volume(v) - column_mm, 1e-3, 360.0))


def _cell(value: np.ndarray, mean: np.ndarray, sd: np.ndarray, half: float) -> np.ndarray:
    """P(a normal read of ``mean``, ``sd`` is reported as ``value``): its rounding cell's mass,
    taken from the nearer tail so that it keeps its precision far out."""
    upper, lower = (value + half - mean) / sd, (value - half - mean) / sd
    return np.where(
        lower > 0.0,
        special.ndtr(-lower) - special.ndtr(-upper),
        special.ndtr(upper) - special.ndtr(lower),
    )


def _on(
    lo: np.ndarray, hi: np.ndarray, nodes: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre ``nodes`` moved onto [lo, hi] (elementwise; no weight where hi <= lo)."""
    x, w = nodes
    half = np.maximum(hi - lo, 0.0)[..., None] / 2.0
    return ((lo + hi) / 2.0)[..., None] + half * x, half * w


# the parameter vector: level B, the classes' columns L_c (mm), ln τ, ln well_sd, the noise
# floor (>= 0), logit of the defect fraction, ln outlier_od, ln outlier_path_loss
_BASE = 1 + len(CLASSES)
_N = _BASE + 6
FLOOR = _BASE + 2


def _unpack(
    theta: np.ndarray,
) -> tuple[float, np.ndarray, float, float, float, float, float, float]:
    rest = theta[_BASE:]
    return (
        float(theta[0]),
        np.asarray(theta[1:_BASE], dtype=float),
        math.exp(float(rest[0])),
        math.exp(float(rest[1])),
        float(rest[2]),
        float(special.expit(rest[3])),
        math.exp(float(rest[4])),
        math.exp(float(rest[5])),
    )


class Likelihood:
    """The log-likelihood of the module docstring's model for ``wells``' reported reads, as a
    function of the parameter vector ``theta`` (:func:`fit`'s)."""

    def __init__(self, wells: list[Well], step: float, snr0: float) -> None:
        self.r977 = np.array([w.r977 for w in wells])
        self.r900 = np.array([w.r900 for w in wells])
        self.kind = np.array([CLASSES.index(w.kind) for w in wells])
        self.half = step / 2.0
        self.shot2 = (_LOG10_E / snr0) ** 2
        self.dalpha = delta_alpha()
        self.shift_nodes = np.polynomial.legendre.leggauss(SHIFT_NODES)
        self.z_nodes = np.polynomial.legendre.leggauss(SHORTFALL_NODES)

    def _sd(self, floor: float, od: np.ndarray | float, path_sd: np.ndarray | float) -> Any:
        return np.sqrt(floor**2 + self.shot2 * np.power(10.0, od) + path_sd**2)

    def per_well(self, theta: np.ndarray) -> np.ndarray:
        """Each well's log-likelihood (wells,)."""
        level, columns, tau, well_sd, floor, p, od, loss = _unpack(theta)
        a0 = self.dalpha * columns[self.kind] / 10.0  # the path's OD (wells,)
        s9 = self._sd(floor, level, 0.0)
        s7 = self._sd(floor, level + a0, self.dalpha * well_sd / 10.0)
        r9, r7 = self.r900[:, None], self.r977[:, None]
        reach = self.half + WINDOW_SD * s9
        lo, hi = r9[:, 0] - level - reach, r9[:, 0] - level + reach
        w = math.sqrt(3.0) * tau
        # sound wells: the offset o, uniform on [-w, w], where the 900 nm report can be
        c, weight = _on(np.maximum(lo, -w), np.minimum(hi, w), self.shift_nodes)
        both = _cell(r9, level + c, s9, self.half) * _cell(
            r7, level + c + a0[:, None], s7[:, None], self.half
        )
        sound = np.sum(both * weight, axis=1) / (2.0 * w)
        if p <= 0.0:
            return np.log(np.maximum(sound, 1e-300))
        # defect wells: the shift o + δ (density: the uniform convolved with N(0, od²)) ...
        c, weight = _on(lo, hi, self.shift_nodes)
        density = (special.ndtr((c + w) / od) - special.ndtr((c - w) / od)) / (2.0 * w)
        first = _cell(r9, level + c, s9, self.half) * density
        # ... and the shortfall t = |z| (density 2φ), where the 977 nm report can be
        excess = level + c + a0[:, None] - r7
        slope = np.maximum(a0 * loss, 1e-12)[:, None]
        reach7 = (self.half + WINDOW_SD * s7)[:, None]
        t_lo = np.clip((excess - reach7) / slope, 0.0, _Z_MAX)
        t_hi = np.clip((excess + reach7) / slope, 0.0, _Z_MAX)
        t, t_weight = _on(t_lo, t_hi, self.z_nodes)
        keep = 1.0 - np.minimum(loss * t, 1.0)
        a = a0[:, None, None] * keep
        sd = self._sd(floor, level + a, self.dalpha * well_sd * keep / 10.0)
        second = _cell(r7[..., None], (level + c)[..., None] + a, sd, self.half)
        half_normal = math.sqrt(2.0 / math.pi) * np.exp(-0.5 * t**2)
        second = np.sum(second * half_normal * t_weight, axis=2)
        defect = np.sum(first * second * weight, axis=1)
        return np.log(np.maximum((1.0 - p) * sound + p * defect, 1e-300))

    def __call__(self, theta: np.ndarray) -> float:
        """The negative log-likelihood (1e12 where the parameters overflow it: an optimiser's
        far trial step)."""
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                value = -float(np.sum(self.per_well(theta)))
        except OverflowError:
            return 1e12
        return value if math.isfinite(value) else 1e12


#: the optimiser's unit of each parameter (it works on theta / _SCALE), near each one's
#: standard error at the calibration fit, so the Hessian on that scale is well conditioned [A]
_SCALE = np.array([1e-4, 0.02, 0.05, 0.1, 0.1, 0.15, 1e-4, 0.5, 0.15, 0.2])
#: the top of the noise floor's profile search (OD) [A: 5x the published 0.001]
FLOOR_MAX = 0.005


def fit(wells: list[Well], step: float, *, defects: bool = True) -> dict[str, Any]:
    """The profile keys the ``wells`` identify, by maximum likelihood (module docstring):
    ``{"parameters": {key: estimate}, "volumes_ul": {class: µL}, "fixed", "not_identified",
    "nll", "readings"}`` (``calibrate``'s shape: ``fitted_profile`` reads it). Intervals: the
    observed information on the optimiser's scale (log for the spreads, logit for the
    fraction); the noise floor's, bounded at 0, by its profile likelihood (one-sided when the
    fit is at 0). ``defects=False`` fits the model without defect wells."""
    snr0 = float(published().expected("reader.absorbance.snr0"))
    nll = Likelihood(wells, step, snr0)
    d = np.array([w.difference for w in wells])
    present = [c for c in range(len(CLASSES)) if np.any(nll.kind == c)]
    x0 = np.zeros(_N)
    x0[0] = float(np.median(nll.r900))
    x0[1:_BASE] = 1.0  # a class with no well: not fitted, not reported
    for c in present:
        x0[1 + c] = float(np.median(d[nll.kind == c])) * 10.0 / nll.dalpha
    x0[_BASE:] = [math.log(3e-4), math.log(0.05), 3e-4, -2.0, math.log(0.003), math.log(0.1)]
    free = [0, *(1 + c for c in present), _BASE, _BASE + 1, FLOOR]
    if defects:
        free += [_BASE + 3, _BASE + 4, _BASE + 5]
    else:
        x0[_BASE + 3] = -np.inf  # no defect wells
    theta, best = _minimise(nll, x0, free)
    floor_ci = _floor_profile(nll, theta, free, best)
    at_bound = theta[FLOOR] == 0.0
    inner = [i for i in free if not (i == FLOOR and at_bound)]
    scale = _SCALE[inner]

    def scaled(u: np.ndarray) -> float:
        x = theta.copy()
        x[inner] = u * scale
        return nll(x)

    cov = _covariance(scaled, theta[inner] / scale)
    sd = np.zeros(_N)
    sd[inner] = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * scale
    return _estimates(theta, sd, present, floor_ci, defects, best, len(wells))


#: the Hessian's difference step, in :data:`_SCALE` units [A: order 2 at step 0.5 and one
#: iteration (729 NLLs) gives standard errors within 3 % of order 4's and of the adaptive
#: default of ``observed_covariance`` (59049 NLLs) at the calibration fit]
_HESSIAN_STEP = 0.5


def _covariance(nll: Any, at: np.ndarray) -> np.ndarray:
    """The inverse of ``nll``'s Hessian at its minimum ``at`` (``observed_covariance``'s, by
    :func:`scipy.differentiate.hessian` at a fixed central step: the parameters are scaled to
    about one standard error, where the NLL is near quadratic)."""

    def vectorised(x: np.ndarray) -> np.ndarray:
        flat = x.reshape(x.shape[0], -1)
        return np.apply_along_axis(nll, 0, flat).reshape(x.shape[1:])

    result = hessian(vectorised, at, order=2, maxiter=1, initial_step=_HESSIAN_STEP)
    matrix = np.asarray(result.ddf, dtype=float)
    return np.asarray(np.linalg.pinv(0.5 * (matrix + matrix.T)))


def _minimise(
    nll: Likelihood, x0: np.ndarray, free: list[int], restarts: int = 2
) -> tuple[np.ndarray, float]:
    """The maximum-likelihood ``theta`` over the ``free`` entries (from ``x0``) and its NLL;
    the floor held at >= 0."""
    scale = _SCALE[free]
    bounds = [(0.0, None) if i == FLOOR else (None, None) for i in free]

    def scaled(u: np.ndarray) -> float:
        x = x0.copy()
        x[free] = u * scale
        return nll(x)

    u = x0[free] / scale
    for _ in range(restarts):  # a restart from the first optimum settles L-BFGS-B's stop [A]
        result = optimize.minimize(scaled, u, method="L-BFGS-B", bounds=bounds)
        u = result.x
    theta = x0.copy()
    theta[free] = u * scale
    return theta, float(result.fun)


def _floor_profile(
    nll: Likelihood, theta: np.ndarray, free: list[int], best: float
) -> tuple[float, float]:
    """The noise floor's 95 % profile-likelihood interval, within [0, :data:`FLOOR_MAX`]: the
    other free parameters re-fitted at each trial floor; [0, upper] when the fit is at 0."""
    others = [i for i in free if i != FLOOR]

    def profile(floor: float) -> float:
        x = theta.copy()
        x[FLOOR] = floor
        return _minimise(nll, x, others, restarts=1)[1]

    value = float(theta[FLOOR])
    return profile_ci(
        lambda f: best if f == value else profile(f), value, 0.0, FLOOR_MAX, rtol=2e-3
    )


def _estimates(
    theta: np.ndarray,
    sd: np.ndarray,
    present: list[int],
    floor_ci: tuple[float, float],
    defects: bool,
    nll: float,
    readings: int,
) -> dict[str, Any]:
    level, columns, *_ = _unpack(theta)
    how = "maximum likelihood of the reported reads; observed information"
    out: dict[str, Estimate] = {}
    out["reader.absorbance.plate_od"] = entry(
        level, "dimensionless", *normal_ci(level, sd[0]), how + "; the plate's blank B"
    )
    spreads = [("reader.absorbance.well_offset_sd", "dimensionless", _BASE)]
    spreads.append(("reader.path.well_sd", "millimeter", _BASE + 1))
    if defects:
        p_lo, p_hi = special.expit(normal_ci(theta[_BASE + 3], sd[_BASE + 3]))
        out["reader.absorbance.outlier_fraction"] = entry(
            float(special.expit(theta[_BASE + 3])),
            "dimensionless",
            float(p_lo),
            float(p_hi),
            how + ", logit scale",
        )
        spreads.append(("reader.absorbance.outlier_od", "dimensionless", _BASE + 4))
        spreads.append(("reader.absorbance.outlier_path_loss", "dimensionless", _BASE + 5))
    for key, unit, i in spreads:
        value, lo, hi = log_ci(theta[i], sd[i])
        out[key] = entry(value, unit, lo, hi, how + ", log scale")
    out["reader.absorbance.noise_floor"] = entry(
        float(theta[FLOOR]),
        "dimensionless",
        *floor_ci,
        "maximum likelihood; profile likelihood (2 ΔNLL = χ²₁(0.95)), bounded at 0",
    )
    volumes = {}
    for c in present:
        column, se = float(columns[c]), float(sd[1 + c])
        c_lo, c_hi = normal_ci(column, se)
        volumes[CLASSES[c]] = entry(
            volume_of_column(column),
            "microliter",
            volume_of_column(max(c_lo, 1e-3)),
            volume_of_column(c_hi),
            f"the liquid column {column:.4f} mm in {LABWARE}; " + how,
        )
    return {
        "parameters": out,
        "volumes_ul": volumes,
        "fixed": {
            "reader.absorbance.gain_error": 0.0,
            "reader.absorbance.zero_offset": 0.0,
            "reader.absorbance.plate_od_factor": 1.0,
        },
        "not_identified": {
            "reader.absorbance.gain_error": "scales every path as the volume does (folded in)",
            "reader.absorbance.zero_offset": "adds to every read as the plate's OD does "
            "(plate_od holds their sum, with the factor at 1)",
            "reader.absorbance.snr0": "one read per well: the shot term is not told from the floor",
        },
        "nll": nll,
        "readings": 2 * readings,
    }
