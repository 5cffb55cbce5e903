"""What the families' experts do on a plate: transfers with the tip that fits each volume,
spectra read whole (inline) with an optional path check, and least-squares unmixing."""

from __future__ import annotations

import itertools
import math
from typing import TypeVar

import numpy as np

from labtools.instruments.liquid_handler import TipPolicy
from labtools.simulators.tasks.scripting import Call, batch, nm, short_of_path, water_band

__all__ = [
    "ACCURATE_OD",
    "FAINT_REPEATS",
    "GRID_NM",
    "INLINE_VALUES",
    "MIN_UL",
    "PLATE",
    "TIP_RACKS",
    "amounts",
    "kept",
    "read",
    "select",
    "sound",
    "transfer",
    "well",
]

T = TypeVar("T")

#: the spectra's wavelengths (nm): 41 points, so 14 wells a read stay under the reader's
#: :data:`INLINE_VALUES` returned inline
GRID_NM = np.arange(330.0, 731.0, 10.0)
INLINE_VALUES = 600
#: readings above this are left out of the fits (the top of the reader's accurate range)
ACCURATE_OD = 2.0
#: the least stock volume dispensed (µL) [A: ISO 8655-2 allows a 10 µL tip ±1.2 % at 1 µL;
#: 2 µL keeps it near ±0.6 %]
MIN_UL = 2.0
PLATE = "plate_1"
#: reads of a faint sample's plate averaged [A: three cut the read noise by √3, for a few calls]
FAINT_REPEATS = 3
#: the tip racks of the virtual deck, smallest first, with the largest volume each holds (µL)
TIP_RACKS = ((10.0, "tips_10ul"), (50.0, "tips_50ul"), (300.0, "tips_300ul"), (1e9, "tips_1000ul"))


def transfer(call: Call, moves: list[tuple[str, str, float]], tips: TipPolicy) -> None:
    """``moves`` on channel 0, each with the smallest tip type that holds its volume
    (:data:`TIP_RACKS`: a 2 µL delivery from a 300 µL tip misses by up to 15 % [ISO 8655-2
    systematic limits]), one batch per tip type."""
    by_rack: dict[str, list[tuple[str, str, float]]] = {}
    for move in moves:
        rack = next(r for top, r in TIP_RACKS if move[2] <= top)
        by_rack.setdefault(rack, []).append(move)
    for rack, group in by_rack.items():
        call("lh_transfer", **batch(group, tips, tip_rack=rack, channels=[0]))


def amounts(spectrum: np.ndarray, basis: list[np.ndarray]) -> np.ndarray:
    """Least-squares amounts of each basis spectrum in ``spectrum`` (with a constant), over the
    wavelengths where it reads inside the accurate range (a second absorber's band may lie
    above it: the analyte is read where it is not) and every basis spectrum was read."""
    design = np.column_stack([*basis, np.ones_like(basis[0])])
    used = np.isfinite(spectrum) & (spectrum < ACCURATE_OD) & np.all(np.isfinite(design), axis=1)
    coef, *_ = np.linalg.lstsq(design[used], spectrum[used], rcond=None)
    return np.asarray(coef[:-1])


def select(spectrum: np.ndarray, basis: list[np.ndarray]) -> np.ndarray:
    """Non-negative amounts of each basis spectrum in ``spectrum``, choosing which are present
    by the Bayesian information criterion: every subset is fitted by least squares with a
    constant (over the points :func:`amounts` uses); among fits with no negative amount the
    lowest n ln(RSS/n) + k ln(n) wins, so a component must explain more than noise to count.
    Absent components are 0."""
    design = np.column_stack([*basis, np.ones_like(basis[0])])
    used = np.isfinite(spectrum) & (spectrum < ACCURATE_OD) & np.all(np.isfinite(design), axis=1)
    x, y = design[used], spectrum[used]
    points, columns = len(y), len(basis)
    best, best_bic = np.zeros(columns), math.inf
    for size in range(1, columns + 1):
        for active in itertools.combinations(range(columns), size):
            chosen = x[:, [*active, columns]]
            coef, *_ = np.linalg.lstsq(chosen, y, rcond=None)
            if (coef[:-1] < 0).any():
                continue
            rss = max(float(np.sum((y - chosen @ coef) ** 2)), 1e-300)
            bic = points * math.log(rss / points) + (size + 1) * math.log(points)
            if bic < best_bic:
                best, best_bic = np.zeros(columns), bic
                best[list(active)] = coef[:-1]
    return best


def read(
    call: Call, home: str, wells: list[str], *, path_check: bool = False, repeats: int = 1
) -> dict[str, np.ndarray]:
    """The plate into the reader, spectra of ``wells`` over :data:`GRID_NM` (NaN where over
    range; the mean of ``repeats`` reads, for a faint sample: the read noise falls as
    √repeats) and, with ``path_check``, their water band under ``"band"`` (in ``wells``'
    order), and back to ``home``."""
    call("lh_move_plate", plate=PLATE, destination="reader")
    sums: dict[str, np.ndarray] = {}
    per_read = INLINE_VALUES // len(GRID_NM)  # wells whose spectra come back inline
    for _ in range(repeats):
        for start in range(0, len(wells), per_read):
            chunk = wells[start : start + per_read]
            data = call(
                "reader_read_absorbance_spectrum",
                plate=PLATE,
                wells=chunk,
                start=nm(GRID_NM[0]),
                stop=nm(GRID_NM[-1]),
                step=nm(10),
            )
            for w in chunk:
                values = np.array(
                    [np.nan if v is None else float(v) for v in data["values"][w]], dtype=float
                )
                sums[w] = sums[w] + values if w in sums else values
    out = {w: total / repeats for w, total in sums.items()}
    if path_check:
        bands = water_band(call, PLATE, wells)
        out["band"] = np.array([bands[w] for w in wells])
    call("lh_move_plate", plate=PLATE, destination=home)
    return out


def sound(bands: np.ndarray, wells: list[str]) -> set[str]:
    """The wells whose water band is no defect's (:func:`~labtools.simulators.tasks.scripting.
    short_of_path`) against the median of these wells, which hold one volume."""
    median = float(np.median(bands))
    return {w for w, b in zip(wells, bands, strict=True) if not short_of_path(b / median)}


def kept(sound: list[T], all_: list[T], least: int) -> list[T]:
    """``sound``, unless fewer than ``least`` are left: then all of them (a defect read is
    better than no reading)."""
    return sound if len(sound) >= least else all_


def well(name: str) -> str:
    """``name`` (``"B3"``) as a well of :data:`PLATE` (``"plate_1:B3"``)."""
    return f"{PLATE}:{name}"
