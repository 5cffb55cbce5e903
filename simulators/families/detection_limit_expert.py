"""The ``detection_limit`` family's expert: water blanks and a standard series in the method's
volume, read repeatedly at the method's wavelength, with a path check.

1. **Plate**: a 1 in 10 dilution of the certified standard (a source, not read); the standard
   at :data:`LEVELS_OD` (planned with the library's ε over the nominal path: the lot's may
   differ, the regression does not care), from the stock or the 1 in 10 well, each at least
   :data:`~.protocol.MIN_UL`; every other well the budget allows a water blank. Every well
   holds the method's volume.
2. **Reads**: the plate read :data:`READS` times at the method's wavelength (one call each).
   A blank whose mean lies more than :data:`OUTLIER_SDS` sds from the others' (a defect's extra
   OD) is left out. (Water's near-infrared band, the path check, reads with
   the same noise: on a noisy reader a single read of it cannot tell a defect's 10 % short
   path, so the standards' line drops instead its one point a defect would explain.)
3. **σ** by variance components: the within-well variance of the repeated reads is the read
   noise; the variance of the blank wells' means less its share the wells' optical offsets;
   σ² their sum (a blank read once in a fresh well). Its uncertainty: each part's sampling
   variance (2 v² / dof).
4. **S**: a least-squares line through the standards' mean readings against their nominal
   concentrations (µM); its slope and the slope's standard error.
5. The relative uncertainty of σ / S: σ's, the slope's, the standard's label (1 %) and the
   pipetting's systematic part (:data:`PIPETTING_SD`) in quadrature.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.protocol import MIN_UL, PLATE, transfer, well
from labtools.simulators.tasks.scripting import Call, nm, site_of

__all__ = ["READS", "detection_limit", "naive_sigma", "variance_components"]

#: the standard levels' planned optical densities [A: from a few times the LOD up to where the
#: slope is read to a per cent, well inside the reader's linear range]
LEVELS_OD = (0.03, 0.08, 0.2, 0.5, 1.0)
#: reads of the plate [A: the read noise's variance then has 11 dof per well; 14 calls of the
#: smallest budget's 60]
READS = 12
#: a blank whose mean lies this many sds of the others' from their mean is a defect [A: Grubbs's
#: critical value at α ≈ 0.01 for 20-90 wells; the offsets' uniform spread has lighter tails
#: than a normal's], and at most this many are left out
OUTLIER_SDS = 3.3
MOST_OUTLIERS = 3
#: a standard whose reading lies this many sds off the line through the others is a defect's [A]
OUTLIER_LINE = 4.0
LABEL_SD = 0.01
#: the pipetting's systematic share of the slope (1 sd, relative) [A: ISO 8655 systematic limits
#: at 2-30 µL, partly averaged over the levels]
PIPETTING_SD = 0.01
ROWS = "ABCDEFGH"


def _wells(count: int) -> list[str]:
    return [f"{ROWS[i // 12]}{i % 12 + 1}" for i in range(count)]


def detection_limit(
    call: Call,
    *,
    standard: str,
    water: str,
    wavelength_nm: float,
    volume_ul: float,
    planning_slope: float,
    wells: int,
    reagent_ul: float,
) -> tuple[float, float, float]:
    """σ (OD), S (OD per µM) and the relative standard uncertainty of σ / S, through ``call``
    only. ``planning_slope``: the library's ε times the nominal path (OD per M), to plan the
    levels; ``wells`` and ``reagent_ul``: the budget's (water counts: a blank holds the
    method's volume)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    label_um = label_micromolar(deck["labels"][standard])
    spare = reagent_ul - 300.0 - len(LEVELS_OD) * volume_ul  # after the 1 in 10 and the ladder
    count = min(wells, 96, 1 + len(LEVELS_OD) + int(spare // volume_ul) - 1)
    names = _wells(count)
    tenth, ladder, blanks = names[0], names[1 : 1 + len(LEVELS_OD)], names[1 + len(LEVELS_OD) :]

    # 1. the plate: the 1 in 10 source, the standards, the blanks
    from_stock, from_tenth, levels_um = [], [], []
    for name, od in zip(ladder, LEVELS_OD, strict=True):
        want_um = od / (planning_slope * 1e-6)
        take = want_um * volume_ul / label_um
        if take >= MIN_UL:
            take = round(min(take, volume_ul), 1)
            from_stock.append((standard, well(name), take))
            levels_um.append(take / volume_ul * label_um)
        else:
            take = round(min(max(take * 10.0, MIN_UL), volume_ul), 1)
            from_tenth.append((well(tenth), well(name), take))
            levels_um.append(take / volume_ul * label_um / 10.0)
    waters = [(water, well(tenth), 270.0)]
    waters += [
        (water, w, volume_ul - v) for _, w, v in from_stock + from_tenth if volume_ul - v > 0
    ]
    waters += [(water, well(w), volume_ul) for w in blanks]
    transfer(call, waters, "reuse")
    transfer(call, [(standard, well(tenth), 30.0), *from_stock], "per_source")
    if from_tenth:
        transfer(call, from_tenth, "per_source")

    # 2. the reads
    read = [*ladder, *blanks]
    call("lh_move_plate", plate=PLATE, destination="reader")
    values = np.empty((len(read), READS))
    for j in range(READS):
        data = call(
            "reader_read_absorbance", plate=PLATE, wavelength=nm(wavelength_nm), wells=read
        )["values"]
        values[:, j] = [np.nan if data[w] is None else float(data[w]) for w in read]
    call("lh_move_plate", plate=PLATE, destination=home)
    rows = {w: values[i] for i, w in enumerate(read)}

    # 3. σ from the blanks, a defect's (its mean far out) left out
    kept = [w for w in blanks if np.all(np.isfinite(rows[w]))]
    kept = _without_outliers(kept, [float(np.mean(rows[w])) for w in kept])
    block = np.array([rows[w] for w in kept])
    sigma, sigma_rel = variance_components(block)
    read_sd = math.sqrt(_within(block))

    # 4. S from the standards: a line, its worst point dropped where a defect explains it
    usable = [(um, float(np.mean(rows[w]))) for w, um in zip(ladder, levels_um, strict=True)]
    x = np.array([um for um, y in usable if math.isfinite(y)])
    y = np.array([y for _, y in usable if math.isfinite(y)])
    offset_sd = math.sqrt(max(sigma**2 - read_sd**2, 0.0))
    noise = np.sqrt(offset_sd**2 + read_sd**2 / READS + (PIPETTING_SD * 2.0 * y) ** 2)
    coef, residual = _line(x, y)
    worst = int(np.argmax(np.abs(residual) / noise))
    if len(x) > 3 and abs(residual[worst]) > OUTLIER_LINE * noise[worst]:
        x, y = np.delete(x, worst), np.delete(y, worst)
        coef, residual = _line(x, y)
    slope = float(coef[0])
    dof = max(len(x) - 2, 1)
    slope_se = math.sqrt(float(residual @ residual) / dof / float(np.sum((x - x.mean()) ** 2)))
    relative = math.sqrt(
        sigma_rel**2 + (slope_se / max(abs(slope), 1e-12)) ** 2 + LABEL_SD**2 + PIPETTING_SD**2
    )
    return sigma, slope, relative


def _without_outliers(wells: list[str], means: list[float]) -> list[str]:
    """``wells`` less those whose mean lies more than :data:`OUTLIER_SDS` sds of the others'
    from the others' mean (a defect's extra OD), the farthest first, at most
    :data:`MOST_OUTLIERS` of them (Grubbs's test, one at a time)."""
    kept = dict(zip(wells, means, strict=True))
    for _ in range(MOST_OUTLIERS):
        if len(kept) <= 4:
            break
        values = np.array(list(kept.values()))
        far = max(kept, key=lambda w: abs(kept[w] - float(np.median(values))))
        others = np.array([v for w, v in kept.items() if w != far])
        if abs(kept[far] - others.mean()) <= OUTLIER_SDS * others.std(ddof=1):
            break
        del kept[far]
    return list(kept)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    design = np.column_stack([x, np.ones_like(x)])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return coef, y - design @ coef


def _within(blanks: np.ndarray) -> float:
    n, reads = blanks.shape
    return float(np.sum((blanks - blanks.mean(axis=1)[:, None]) ** 2)) / (n * (reads - 1))


def variance_components(blanks: np.ndarray) -> tuple[float, float]:
    """σ of one read of a fresh well, from ``blanks`` (wells × reads), and its relative standard
    error: the read noise's variance within wells, the wells' offsets' from the spread of their
    means (less the read noise's share), in quadrature."""
    n, reads = blanks.shape
    means = blanks.mean(axis=1)
    within = _within(blanks)
    between = float(np.var(means, ddof=1))
    offsets = max(between - within / reads, 0.0)
    variance = offsets + within
    # var(between) = 2 between² / (n − 1); var(within) = 2 within² / (n (reads − 1))
    var_within = 2.0 * within**2 / (n * (reads - 1))
    var_variance = 2.0 * between**2 / (n - 1) + var_within * (1.0 - 1.0 / reads) ** 2
    return math.sqrt(variance), 0.5 * math.sqrt(var_variance) / variance


def naive_sigma(call: Call, *, water: str, wavelength_nm: float, volume_ul: float) -> float:
    """Two water wells read once at the wavelength: their standard deviation (OD)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    wells = ["A1", "A2"]
    transfer(call, [(water, well(w), volume_ul) for w in wells], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(wavelength_nm), wells=wells)
    call("lh_move_plate", plate=PLATE, destination=home)
    values = [float(data["values"][w]) for w in wells]
    return max(float(np.std(values, ddof=1)), 1e-5)
