"""Absorbance from dark, reference and sample counts: which pixels have one, and where the peak is.

``A = -log10((S - D) / (R - D))``. A pixel has no absorbance (null, and a ``masked`` range says
why) when

* ``saturated`` — the sample or the reference reads within ``saturation_margin`` (2 %) of full
  scale: one of the scans averaged may have clipped (a Flame-S scan's noise at full signal is
  0.36 % of full scale, S:N 275:1, so 2 % is 5.5 of it), and CCDs grow non-linear there;
* ``no_light`` — the light path passes too little light to measure: the reference's light
  ``R - D`` is under ``min_snr`` (10) times its own noise — the quantitation limit of ICH Q2(R1),
  signal-to-noise 10:1 — or under ``min_fraction`` (1 %) of the reference's brightest pixel, where
  stray light spread from the bright part of the spectrum (≈0.05–0.1 % of it, Flame-S figures in
  the physics reference §7) is no longer small against the light;
* ``opaque`` — no light is detected through the sample: ``S - D`` under 3 times its noise (the
  IUPAC detection limit); the absorbance there is beyond what this scan can measure.

A stretch of measured pixels shorter than the peak window between masked pixels of one reason
is masked with them.

The reference's noise comes from the dark spectrum itself: the robust scatter of its second
differences (insensitive to smooth shape and to hot pixels), scaled to one scan.

The peak is the highest point of the spectrum smoothed over ``window_nm`` that stands above
zero absorbance by ``significance`` (6) times its own noise, so noise is never a peak. That
noise is the local scatter of the absorbance (mean absolute second difference over 50 nm, good
to ~6 %), never less than read noise propagated through the ratio, over the window's pixels:
six standard deviations leave ~10⁻⁵ false peaks per spectrum of ~200 independent windows. Its
wavelength is the vertex of a parabola through the band's top (within 10 % of the peak height on
the spectrum smoothed over five windows, at least three noise widths), else the smoothed maximum.
A highest point next to an opaque range (a peak window or longer) is no peak: the band's top was
not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["Absorbance", "Reason", "analyse", "boxcar", "robust_sigma"]

Reason = Literal["saturated", "no_light", "opaque"]
#: reason codes of masked pixels (0 is a measured pixel)
_SATURATED, _NO_LIGHT, _OPAQUE = 1, 2, 3
_REASONS: dict[int, Reason] = {_SATURATED: "saturated", _NO_LIGHT: "no_light", _OPAQUE: "opaque"}
#: light through the sample under this many times its noise is not detected (IUPAC 3σ)
_DETECTION_SNR = 3.0
#: normal-distribution MAD → standard deviation
_MAD_TO_SIGMA = 1.4826
#: the local noise is the scatter over this span (nm) around each pixel: ~140 Flame-S pixels,
#: so it is good to ~6 % (the mean absolute deviation is 88 % efficient for normal noise)
_NOISE_SPAN_NM = 50.0
#: the band's top is found on the spectrum smoothed over this many peak windows
_TOP_WINDOWS = 5


@dataclass(frozen=True)
class Absorbance:
    """One analysed spectrum."""

    values: np.ndarray  # absorbance per pixel, NaN where masked
    reasons: np.ndarray  # reason code per pixel (0: measured)
    peak_nm: float | None
    peak_absorbance: float | None

    @property
    def saturated_pixels(self) -> int:
        """Pixels saturated in the sample or the reference."""
        return int(np.count_nonzero(self.reasons == _SATURATED))

    def masked_ranges(self, wavelengths: np.ndarray) -> list[tuple[float, float, Reason]]:
        """Runs of masked pixels: (first nm, last nm, reason)."""
        return [
            (float(wavelengths[start]), float(wavelengths[stop - 1]), _REASONS[code])
            for start, stop, code in _runs(self.reasons)
            if code
        ]


def analyse(
    sample: np.ndarray,
    reference: np.ndarray,
    dark: np.ndarray,
    *,
    scans: tuple[int, int, int],
    wavelengths: np.ndarray,
    full_scale: float,
    saturation_margin: float,
    min_snr: float,
    min_fraction: float,
    window_nm: float,
    significance: float,
) -> Absorbance:
    """Absorbance, masks and peak; ``scans`` averaged in (sample, reference, dark)."""
    n_sample, n_reference, n_dark = scans
    signal = sample - dark
    light = reference - dark
    one_scan = robust_sigma(dark) * math.sqrt(n_dark)
    light_noise = one_scan * math.sqrt(1.0 / n_reference + 1.0 / n_dark)
    brightest = max(float(light.max()), 1.0)
    dim = (light < min_snr * light_noise) | (light < min_fraction * brightest) | (light <= 0)
    signal_noise = one_scan * math.sqrt(1.0 / n_sample + 1.0 / n_dark)
    reasons = np.zeros(sample.shape, dtype=np.int8)
    reasons[dim] = _NO_LIGHT
    undetected = (signal <= 0) | (signal < _DETECTION_SNR * signal_noise)
    reasons[undetected & (reasons == 0)] = _OPAQUE
    near_full = (1.0 - saturation_margin) * full_scale
    reasons[(sample >= near_full) | (reference >= near_full)] = _SATURATED
    width = _pixels(wavelengths, window_nm)
    reasons = _close_gaps(reasons, width)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(reasons == 0, -np.log10(signal / light), np.nan)
        floor = _read_noise_floor(signal, light, one_scan, scans)
    peak = _peak(
        values, wavelengths, width, significance, floor, _long_runs(reasons, _OPAQUE, width)
    )
    return Absorbance(values, reasons, *peak)


def _read_noise_floor(
    signal: np.ndarray, light: np.ndarray, one_scan: float, scans: tuple[int, int, int]
) -> np.ndarray:
    """Per-pixel absorbance noise from read noise alone (propagated through
    ``-log10((S - D) / (R - D))``, the dark shared by both): exact where light is dim, a floor
    under the measured scatter elsewhere."""
    var_s, var_r, var_d = (one_scan**2 / n for n in scans)
    relative = (
        (var_s + var_d) / signal**2 + (var_r + var_d) / light**2 - 2.0 * var_d / (signal * light)
    )
    return np.log10(np.e) * np.sqrt(np.maximum(relative, 0.0))


def robust_sigma(values: np.ndarray) -> float:
    """Standard deviation of white noise on ``values`` from the MAD of second differences
    (NaNs ignored; 0 for fewer than 3 values)."""
    second = np.diff(np.asarray(values, dtype=float), 2)
    second = second[~np.isnan(second)]
    if second.size == 0:
        return 0.0
    return float(_MAD_TO_SIGMA * np.median(np.abs(second)) / math.sqrt(6.0))


def boxcar(values: np.ndarray, width: int, *, fill: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """NaN-aware moving mean over ``width`` pixels, and how many values each mean has; NaN
    where the pixel itself is NaN unless ``fill``."""
    valid = ~np.isnan(values)
    kernel = np.ones(max(width, 1))
    sums = np.convolve(np.where(valid, values, 0.0), kernel, mode="same")
    counts = np.convolve(valid.astype(float), kernel, mode="same")
    keep = (counts > 0) if fill else valid & (counts > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(keep, sums / counts, np.nan), counts


def _pixels(wavelengths: np.ndarray, nm: float) -> int:
    spacing = float(np.median(np.diff(wavelengths))) if wavelengths.size > 1 else 1.0
    return max(round(nm / spacing), 1)


def _local_sigma(values: np.ndarray, span: int) -> np.ndarray:
    """Per-pixel noise: mean absolute second difference over ``span`` pixels, as a white-noise
    standard deviation (NaN where fewer than 8 differences are measured)."""
    second = np.full(values.shape, np.nan)
    second[1:-1] = values[:-2] - 2.0 * values[1:-1] + values[2:]
    mean_abs, counts = boxcar(np.abs(second), span, fill=True)
    # E|N(0, 6σ²)| = σ·√6·√(2/π)
    sigma = mean_abs / (math.sqrt(6.0) * math.sqrt(2.0 / math.pi))
    return np.where(counts >= 8, sigma, np.nan)


def _peak(
    values: np.ndarray,
    wavelengths: np.ndarray,
    width: int,
    significance: float,
    floor: np.ndarray,
    opaque: np.ndarray,
) -> tuple[float | None, float | None]:
    smooth, counts = boxcar(values, width)
    local = _local_sigma(values, _pixels(wavelengths, _NOISE_SPAN_NM))
    # the smoothed value's noise: the larger of the measured scatter and the read-noise floor,
    # averaged over the window's pixels
    floor_mean, _ = boxcar(np.where(np.isnan(values), np.nan, floor**2), width)
    per_pixel = np.maximum(local, np.sqrt(floor_mean))  # NaN (unknown noise) never stands
    sigma = per_pixel / np.sqrt(np.maximum(counts, 1.0))
    with np.errstate(invalid="ignore"):
        standing = ~np.isnan(smooth) & ~np.isnan(sigma) & (smooth > significance * sigma)
    if not standing.any():
        return None, None
    top = int(np.argmax(np.where(standing, smooth, -np.inf)))
    if opaque[max(top - width, 0) : top + width + 1].any():
        return None, None  # the band's top is where no light gets through: not measured
    wide, _ = boxcar(values, _TOP_WINDOWS * width)
    nm = _vertex(values, wide, wavelengths, top, 3.0 * float(sigma[top]))
    at = top if nm is None else int(np.argmin(np.abs(wavelengths - nm)))
    height = float(smooth[at] if standing[at] else smooth[top])
    return (float(wavelengths[top]) if nm is None else nm), height


def _vertex(
    values: np.ndarray, smooth: np.ndarray, wavelengths: np.ndarray, top: int, noise: float
) -> float | None:
    """Vertex (nm) of a parabola through the band's top around pixel ``top`` (where ``smooth``
    is within 10 % of its height there, or ``noise``); None if the top is flat, one-sided or too
    narrow to fit."""
    if np.isnan(smooth[top]):
        return None
    level = smooth[top] - max(0.1 * smooth[top], noise)
    inside = ~np.isnan(smooth) & (smooth >= level)
    left, right = top, top
    while left > 0 and inside[left - 1]:
        left -= 1
    while right < smooth.size - 1 and inside[right + 1]:
        right += 1
    if left == 0 or right == smooth.size - 1:
        return None  # the top runs into the edge: no band maximum inside the spectrum
    nm, a = wavelengths[left : right + 1], values[left : right + 1]
    keep = ~np.isnan(a)
    if np.count_nonzero(keep) < 5:
        return None
    centre = float(wavelengths[top])
    curvature, slope, _ = np.polyfit(nm[keep] - centre, a[keep], 2)
    if curvature >= 0:
        return None
    vertex = centre - slope / (2.0 * curvature)
    return float(vertex) if nm[0] <= vertex <= nm[-1] else None


def _runs(codes: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, stop, code) of each run of equal codes."""
    if codes.size == 0:
        return []
    edges = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate(([0], edges))
    stops = np.concatenate((edges, [codes.size]))
    return [(int(a), int(b), int(codes[a])) for a, b in zip(starts, stops, strict=True)]


def _long_runs(codes: np.ndarray, code: int, width: int) -> np.ndarray:
    """Pixels in runs of ``code`` at least ``width`` long (a stray pixel is not a range)."""
    out = np.zeros(codes.shape, dtype=bool)
    for start, stop, value in _runs(codes):
        if value == code and stop - start >= width:
            out[start:stop] = True
    return out


def _close_gaps(codes: np.ndarray, width: int) -> np.ndarray:
    """Measured runs shorter than ``width`` pixels between two masked runs of the same reason (or
    between one and the spectrum's end) take that reason."""
    out = codes.copy()
    runs = _runs(codes)
    for i, (start, stop, value) in enumerate(runs):
        if value or stop - start >= width:
            continue
        left = runs[i - 1][2] if i > 0 else None
        right = runs[i + 1][2] if i + 1 < len(runs) else None
        sides = {side for side in (left, right) if side is not None}
        if len(sides) == 1 and 0 not in sides:
            out[start:stop] = sides.pop()
    return out
