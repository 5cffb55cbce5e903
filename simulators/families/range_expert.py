"""The ``range`` family's expert: a dilution series of the certified standard from 0.5 OD to
near the top of the reader's range, each well read repeatedly at the band's peak and at a
reference wavelength where the same well reads half as much, and the stray light fitted
from the peak readings' shortfall.

1. **Planning plate**: water blanks and :data:`LOW_OD` levels of the standard (planned with
   the library's ε over the nominal path), every volume from the stock with the smallest tip
   that holds it (:func:`~.protocol.transfer`). One read at the peak gives the lot's OD per µL
   of standard (the lot's ε, the path, the gain: none the library's).
2. **High wells**: the rest of the wells the budget allows at :data:`HIGH_OD` (planned with
   the measured slope, so that none reads over range).
3. **Reads**: the plate read at the peak and at the reference wavelength, two peak reads to a
   reference read, as many as the calls allow; a well with an over-range read is left out.
4. **Fit**: each well's reference reading, half its peak's and inside the accurate range,
   tells its true absorbance at the peak through the dye's ratio of the two (the same in every
   well), whatever the pipetting delivered; a well's optical offset, the same at both
   wavelengths, weighs once. ``peak = F(q·F⁻¹(ref) + a)``, ``F(A) = −log10((10^−A + s)/(1 + s))``,
   is fitted over all the standard's wells for ``q``, ``a`` and ln s (weighted least squares,
   up to two defects' outliers dropped); the sd of ln s from the fit's covariance (scaled by the
   reduced χ² where above 1), with :data:`SYSTEMATIC_LOG` (the gain's and the plate zero's
   share) in quadrature.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import least_squares

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.protocol import MIN_UL, PLATE, transfer, well
from labtools.simulators.tasks.scripting import Call, nm, site_of

__all__ = ["HIGH_OD", "LOW_OD", "fit_stray", "naive_stray", "qualify", "unstray"]

#: the planning levels (OD at the peak, library ε, nominal path) [A: inside the accurate range,
#: where the dye's ratio of wavelengths is read with stray light negligible]
LOW_OD = (0.6, 1.0, 1.4, 1.8)
#: the high wells' liquid absorbance at the peak (measured slope) [A: the shortfall grows as
#: 10^A, the read noise as 10^(A/2): the top reads just under the 4.0 OD range, allowing for
#: the lot and the noise]
HIGH_OD = (3.2, 3.75)
#: blank wells [A]
BLANKS = 2
#: wells whose peak reading is below this count as low (the ratio's), above it as high [A]
LOW_BELOW = 2.3
#: the log-sd the gain's ±0.6 % and the plate's zero leave in s [A: ±0.02 OD at 3.7 OD moves
#: s 10^A by ~5 %]
SYSTEMATIC_LOG = 0.05
#: calls kept for the deck, transfers, moves and the submission [A]
OVERHEAD_CALLS = 13
#: the wells' optical offsets' sd (OD): the published ±0.004 uniform [A: published profile
#: ``reader.absorbance.well_offset``], what a well's own offset leaves unexplained
WELL_OFFSET_SD = 0.004 / math.sqrt(3.0)
#: a high well this many sds off the fit is a defect's, and left out (at most two) [A]
OUTLIER_SDS = 4.0
ROWS = "ABCDEFGH"


def _wells(count: int) -> list[str]:
    return [f"{ROWS[i // 12]}{i % 12 + 1}" for i in range(count)]


def unstray(reading: np.ndarray, s: float) -> np.ndarray:
    """The absorbance whose reading under stray light ``s`` is ``reading`` (NaN where none)."""
    inner = 10.0 ** -np.asarray(reading, dtype=float) * (1.0 + s) - s
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(inner > 0.0, -np.log10(np.where(inner > 0.0, inner, 1.0)), np.nan)


def _stray(absorbance: np.ndarray, s: float) -> np.ndarray:
    return np.asarray(-np.log10((10.0**-absorbance + s) / (1.0 + s)), dtype=float)


def _mean_reads(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per well (rows): the mean, its variance, and whether every read was a number."""
    finite = np.all(np.isfinite(values), axis=1)
    safe = np.where(np.isfinite(values), values, 0.0)
    n = values.shape[1]
    mean = safe.sum(axis=1) / n
    var = (
        np.sum((safe - mean[:, None]) ** 2, axis=1) / max(n - 1, 1) / n
        if n > 1
        else np.full(len(mean), 1e-4)
    )
    return mean, np.maximum(var, 1e-10), finite


def fit_stray(
    peak: np.ndarray, peak_var: np.ndarray, ref: np.ndarray, ref_var: np.ndarray
) -> tuple[float, float]:
    """The stray light ``s`` and the sd of its logarithm from the wells' mean readings at the
    peak and the reference (with their variances): ``peak = F(q·F⁻¹(ref) + a)`` with
    ``F(A) = −log10((10^−A + s)/(1 + s))``, fitted for the dye's ratio ``q``, the intercept
    ``a`` (the plate's and the wells' mean offset, less its share at the reference) and ln s.
    Each well's own optical offset is noise, ``(q − 1)`` times :data:`WELL_OFFSET_SD`."""
    if len(peak) < 4 or int(np.sum(peak >= LOW_BELOW)) < 2:
        return math.nan, math.nan
    keep = np.ones(len(peak), dtype=bool)

    def residual(theta: np.ndarray, use: np.ndarray) -> np.ndarray:
        q, a, log_s = float(theta[0]), float(theta[1]), float(theta[2])
        s = math.exp(log_s)
        predicted = _stray(q * unstray(ref[use], s) + a, s)
        sd = np.sqrt(peak_var[use] + q**2 * ref_var[use] + ((q - 1.0) * WELL_OFFSET_SD) ** 2)
        out = (peak[use] - predicted) / sd
        return np.asarray(np.where(np.isfinite(out), out, 1e3), dtype=float)

    low = peak < LOW_BELOW
    slope, icept = np.polyfit(ref[low], peak[low], 1) if low.sum() >= 2 else (2.0, 0.0)
    fit = None
    for _ in range(3):
        best = None
        for start in (math.log(3e-6), math.log(3e-5), math.log(3e-4)):
            trial = least_squares(
                residual, np.array([slope, icept, start]), args=(keep,), method="lm"
            )
            if best is None or trial.cost < best.cost:
                best = trial
        assert best is not None
        fit = best
        z = np.full(len(peak), 0.0)
        z[keep] = best.fun
        worst = int(np.argmax(np.abs(z)))
        if abs(z[worst]) <= OUTLIER_SDS or keep.sum() <= 5 or (~keep).sum() >= 2:
            break
        keep[worst] = False
    assert fit is not None
    dof = max(int(keep.sum()) - 3, 1)
    scale = max(1.0, 2.0 * float(fit.cost) / dof)
    try:
        covariance = np.linalg.inv(fit.jac.T @ fit.jac) * scale
        sd = math.sqrt(max(float(covariance[2, 2]), 0.0))
    except np.linalg.LinAlgError:
        sd = 1.0
    log_s = min(max(float(fit.x[2]), math.log(1e-9)), math.log(0.1))
    return math.exp(log_s), math.sqrt(sd**2 + SYSTEMATIC_LOG**2)


def qualify(
    call: Call,
    *,
    standard: str,
    water: str,
    peak_nm: float,
    ref_nm: float,
    volume_ul: float,
    planning_slope: float,
    wells: int,
    calls: int,
    reagent_ul: float,
) -> tuple[float, float]:
    """The stray light at ``peak_nm`` and the sd of its logarithm, through ``call`` only.
    ``planning_slope``: the library's ε times the nominal path (OD per M); ``wells``,
    ``calls`` and ``reagent_ul``: the budget's."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    label_um = label_micromolar(deck["labels"][standard])
    count = min(wells, 96, int((reagent_ul - 300.0) // volume_ul))
    names = _wells(count)
    blanks, lows = names[:BLANKS], names[BLANKS : BLANKS + len(LOW_OD)]
    highs = names[BLANKS + len(LOW_OD) :]

    # 1. the planning plate: blanks and the low levels, read once at the peak
    def make(targets: list[tuple[str, float]]) -> list[float]:
        moves, waters, shares = [], [], []
        for name, ul in targets:
            take = round(min(max(ul, MIN_UL), volume_ul), 1)
            moves.append((standard, well(name), take))
            if volume_ul - take > 0:
                waters.append((water, well(name), round(volume_ul - take, 1)))
            shares.append(take / volume_ul)
        transfer(call, waters, "reuse")
        transfer(call, moves, "per_source")
        return shares

    transfer(call, [(water, well(w), volume_ul) for w in blanks], "reuse")
    neat_planned = planning_slope * label_um * 1e-6
    low_shares = make(
        [(w, od / neat_planned * volume_ul) for w, od in zip(lows, LOW_OD, strict=False)]
    )
    call("lh_move_plate", plate=PLATE, destination="reader")
    first = call("reader_read_absorbance", plate=PLATE, wavelength=nm(peak_nm), wells=blanks + lows)
    values = {w: first["values"].get(w) for w in blanks + lows}
    call("lh_move_plate", plate=PLATE, destination=home)
    zero = float(np.median([float(values[w]) for w in blanks if values[w] is not None]))
    pairs = [
        (s, float(values[w]) - zero)
        for w, s in zip(lows, low_shares, strict=False)
        if values[w] is not None
    ]
    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    neat = float(x @ y / (x @ x)) if len(x) and float(x @ x) > 0 else neat_planned

    # 2. the high wells, spread over HIGH_OD with the measured slope
    if highs:
        targets = np.linspace(HIGH_OD[0], HIGH_OD[1], len(highs))
        make(
            [
                (w, min(od / max(neat, 1e-6), 1.0) * volume_ul)
                for w, od in zip(highs, targets, strict=False)
            ]
        )

    # 3. the reads: two at the peak to one at the reference
    read = blanks + lows + highs
    rounds = max((calls - OVERHEAD_CALLS) // 3, 2)
    call("lh_move_plate", plate=PLATE, destination="reader")
    at_peak: list[list[float]] = []
    at_ref: list[list[float]] = []
    for _ in range(rounds):
        for target, store in ((peak_nm, at_peak), (peak_nm, at_peak), (ref_nm, at_ref)):
            data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(target), wells=read)
            got = data["values"]
            store.append([np.nan if got.get(w) is None else float(got[w]) for w in read])
    call("lh_move_plate", plate=PLATE, destination=home)
    peak, peak_var, peak_ok = _mean_reads(np.asarray(at_peak, dtype=float).T)
    ref, ref_var, ref_ok = _mean_reads(np.asarray(at_ref, dtype=float).T)

    # 4. the fit over the standard's wells, over-range wells left out
    nb = len(blanks)
    ok = (peak_ok & ref_ok)[nb:]
    return fit_stray(peak[nb:][ok], peak_var[nb:][ok], ref[nb:][ok], ref_var[nb:][ok])


def naive_stray(
    call: Call, *, standard: str, water: str, peak_nm: float, volume_ul: float
) -> float:
    """A dilution series of the standard read once at the peak: the highest reading taken for
    the stray-light ceiling, ``s = 10^−max`` (the plateau assumed reached)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    shares = (0.05, 0.1, 0.2, 0.4, 0.7, 1.0)
    names = _wells(len(shares))
    waters = [
        (water, well(w), volume_ul * (1 - f)) for w, f in zip(names, shares, strict=False) if f < 1
    ]
    transfer(call, waters, "reuse")
    transfer(
        call,
        [(standard, well(w), volume_ul * f) for w, f in zip(names, shares, strict=False)],
        "reuse",
    )
    call("lh_move_plate", plate=PLATE, destination="reader")
    data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(peak_nm), wells=names)
    call("lh_move_plate", plate=PLATE, destination=home)
    got = data["values"]
    values = [float(got[w]) for w in names if got.get(w) is not None]
    return 10.0 ** -max(values) if values else 1e-4
