"""The ``isosbestic`` family's protocols on a plate: the expert's fine scan of the indicator in
the lab's buffers; the naive crossing of two coarse unblanked spectra; the experiment without
controls.

Why a regression rather than two spectra: every mixture of the forms reads c·l·ε_iso at the
isosbestic point, so each pair of wells' spectra cross there, but a pair crosses where their
difference vanishes, and that difference carries both wells' noise and their doses' error over
the slope of the forms' difference. Regressing every buffer well's reading on its base
fraction, wavelength by wavelength, puts all the wells into the slope: the crossing is where
that slope vanishes, whatever the fractions' error (the apparent pKa only weights the wells).

The expert (:func:`crossing_scan`):

1. **Survey** (one coarse read, as the ``equilibrium`` expert's): a water blank, the stock 1 in
   10 in the most acidic and the most basic buffer: how strong the stock reads about the
   published point.
2. **Scan** (one read, 1 nm steps over :data:`HALF_WINDOW_NM` either side of the published
   point): the buffers in triplicate (farthest from the published pKa first, where the budget
   does not hold them all), with as much stock as brings the window's strongest reading near
   :data:`WINDOW_OD`, and two water blanks; a faint plate in 300 µL wells read
   :data:`FAINT_READS` times. Water's band leaves out defect wells.
3. **Fit**: the wells, less the blank, regressed on their base fraction at each wavelength; the
   slope's root by a quadratic through the points about its sign change; its uncertainty the
   slope's standard error there over the slope's rate of change. ε: the wells' mean reading at
   the root over the label's concentration, the dose and the nominal path; its uncertainty the
   label's tolerance, the reader's gain, the doses' and the wells' scatter, in quadrature.
"""

from __future__ import annotations

import math
import re

import numpy as np

from labtools.simulators.families.equilibrium_expert import (
    LOW_OD,
    LOW_UL,
    MOST_STOCK,
    OVER_RANGE_OD,
    REPLICATES,
    SURVEY,
    SURVEY_SHARE,
)
from labtools.simulators.families.isosbestic_parts import STOCK_TOLERANCE
from labtools.simulators.families.protocol import (
    FAINT_REPEATS,
    GRID_NM,
    INLINE_VALUES,
    MIN_UL,
    PLATE,
    kept,
    read,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.indicator_pka import buffers_of
from labtools.simulators.tasks.pka_fit import base_fraction
from labtools.simulators.tasks.scripting import (
    Call,
    nm,
    nominal_path_cm,
    nominal_plate_od,
    site_of,
    water_band,
)

__all__ = ["crossing_scan", "two_wells", "uncontrolled"]

STOCK, WATER = "reservoir:A2", "reservoir:A1"
WELL_UL = 200.0
#: water blanks on the scanned plate [A: three; a faint plate's ε rests on them]
BLANKS = 3
#: a well's own optical offset (1 sd, OD) [C: uniform ±0.004 OD (the published profile's
#: reader.absorbance.well_offset) has sd 0.004/√3]: the blank's mean carries it into ε
WELL_OFFSET_SD = 0.004 / math.sqrt(3.0)
#: the scan's half width about the published point (nm) [A: about seven of the lot's 1.1 nm
#: spreads]
HALF_WINDOW_NM = 8
#: the window's strongest reading aimed at (OD) [A: under the reader's accurate 2.0 with the
#: plate's own OD and room for the dose's error]
WINDOW_OD = 1.5
#: reads of a faint plate averaged [A: as the ``ph`` expert's]
FAINT_READS = 3 * FAINT_REPEATS
#: the reader's gain error (1 sd, relative) [C: uniform ±0.6 % (the published profile's
#: reader.absorbance.gain_error) has sd 0.6/√3 %]
GAIN_SD = 0.006 / math.sqrt(3.0)
#: the doses' systematic error (1 sd, relative) [A: ISO 8655-2's limits for the tips used,
#: about half of ±1 %]
DOSE_SD = 0.005
#: the experiment without controls states these [A: a plate reader's wavelength accuracy,
#: ±1 nm; 2 %, the label's tolerance doubled]
UNCONTROLLED_NM_SD = 1.0
UNCONTROLLED_EPSILON_SD = 0.02
_LABEL_UM = re.compile(r"([0-9][0-9.eE+-]*) µM ±")


def stock_um(labels: dict[str, str]) -> float:
    """The stock's labelled concentration (µM)."""
    match = _LABEL_UM.search(labels[STOCK])
    if match is None:
        raise ValueError("the stock's label states no concentration")
    return float(match.group(1))


def crossing_scan(
    call: Call, *, published_nm: float, published_pka: float, wells: int
) -> tuple[float, float, float, float]:
    """The isosbestic point (nm), its sd, ε there and its sd, through ``call`` only
    (``published_nm`` centres the scan, ``published_pka`` weights the wells and chooses
    buffers where the wells budget, ``wells``, does not hold them all)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])
    label_um = stock_um(deck["labels"])

    # 1. survey: row A, a coarse spectrum
    blank_well, acid_well, base_well = SURVEY
    fill = WELL_UL * (1.0 - SURVEY_SHARE)
    transfer(
        call,
        [
            (WATER, well(blank_well), WELL_UL),
            (buffers[0][0], well(acid_well), fill),
            (buffers[-1][0], well(base_well), fill),
        ],
        "per_source",
    )
    dose = WELL_UL * SURVEY_SHARE
    transfer(call, [(STOCK, well(acid_well), dose), (STOCK, well(base_well), dose)], "reuse")
    spectra = read(call, home, list(SURVEY))
    near = np.abs(GRID_NM - published_nm) <= HALF_WINDOW_NM + 10
    strongest = 1e-4
    for w in (acid_well, base_well):
        seen = np.nan_to_num(spectra[w] - spectra[blank_well], nan=OVER_RANGE_OD)[near]
        strongest = max(strongest, float(np.max(seen)))
    neat = strongest / SURVEY_SHARE

    # 2. the buffers in triplicate and the blanks, scanned finely: rows B on
    faint = neat * MOST_STOCK < LOW_OD
    volume = LOW_UL if faint else WELL_UL
    gain = nominal_path_cm(volume) / nominal_path_cm(WELL_UL)
    stock_ul = round(max(volume * min(MOST_STOCK, WINDOW_OD / (neat * gain)), MIN_UL), 1)
    room = max((wells - len(SURVEY) - BLANKS) // REPLICATES, 2)
    chosen = sorted(buffers, key=lambda b: -abs(b[1] - published_pka))[:room]
    chosen.sort(key=lambda b: b[1])
    slots = iter(f"{row}{col}" for row in "BCDEFGH" for col in range(1, 13))
    layout = {next(slots): b for b in chosen for _ in range(REPLICATES)}
    blanks = [next(slots) for _ in range(BLANKS)]
    moves = [(source, well(w), volume - stock_ul) for w, (source, _, _) in layout.items()]
    moves += [(WATER, well(w), volume) for w in blanks]
    transfer(call, moves, "per_source")
    transfer(call, [(STOCK, well(w), stock_ul) for w in layout], "reuse")
    names = [*layout, *blanks]
    grid = np.arange(round(published_nm) - HALF_WINDOW_NM, round(published_nm) + HALF_WINDOW_NM + 1)
    fine = _scan(call, home, names, grid, FAINT_READS if faint else 1)
    healthy = sound(fine.pop("band"), names)
    blanks_used = kept([w for w in blanks if w in healthy], blanks, 1)
    water = np.mean([fine[w] for w in blanks_used], axis=0)
    used: list[str] = []
    for buffer in chosen:
        mine = [w for w, b in layout.items() if b == buffer]
        used += kept([w for w in mine if w in healthy], mine, 2)

    # 3. the slope on the base fraction, wavelength by wavelength; its root
    readings = np.array([fine[w] - water for w in used])
    f = base_fraction(np.array([layout[w][1] for w in used]), published_pka)
    design = np.column_stack([np.ones_like(f), f])
    coef, *_ = np.linalg.lstsq(design, np.nan_to_num(readings, nan=OVER_RANGE_OD), rcond=None)
    slope = coef[1]
    residual = readings - design @ coef
    dof = max(len(used) - 2, 1)
    slope_se = np.sqrt(
        np.nansum(residual**2, axis=0) / dof / max(float(np.sum((f - f.mean()) ** 2)), 1e-12)
    )
    at, rate = _root(grid.astype(float), slope)
    sd_nm = float(np.interp(at, grid, slope_se)) / max(abs(rate), 1e-12)
    values = np.array([np.interp(at, grid, r) for r in readings])
    path = nominal_path_cm(volume)
    molar = label_um * 1e-6 * stock_ul / volume
    epsilon = float(np.mean(values)) / (molar * path)
    scatter = float(np.std(values, ddof=1) / math.sqrt(len(values)) / max(np.mean(values), 1e-9))
    blank = WELL_OFFSET_SD / math.sqrt(len(blanks_used)) / max(float(np.mean(values)), 1e-9)
    rel = math.sqrt(STOCK_TOLERANCE**2 + GAIN_SD**2 + DOSE_SD**2 + scatter**2 + blank**2)
    return at, max(sd_nm, 0.01), epsilon, rel * epsilon


def _scan(
    call: Call, home: str, wells: list[str], grid: np.ndarray, repeats: int
) -> dict[str, np.ndarray]:
    """Spectra of ``wells`` over ``grid`` (1 nm steps; the mean of ``repeats`` reads) and their
    water band under ``"band"``; the plate back at ``home``."""
    call("lh_move_plate", plate=PLATE, destination="reader")
    sums: dict[str, np.ndarray] = {}
    per_read = INLINE_VALUES // len(grid)
    for _ in range(repeats):
        for start in range(0, len(wells), per_read):
            chunk = wells[start : start + per_read]
            data = call(
                "reader_read_absorbance_spectrum",
                plate=PLATE,
                wells=chunk,
                start=nm(grid[0]),
                stop=nm(grid[-1]),
                step=nm(1),
            )
            for w in chunk:
                values = np.array([np.nan if v is None else float(v) for v in data["values"][w]])
                sums[w] = sums[w] + values if w in sums else values
    out = {w: total / repeats for w, total in sums.items()}
    bands = water_band(call, PLATE, wells)
    out["band"] = np.array([bands[w] for w in wells])
    call("lh_move_plate", plate=PLATE, destination=home)
    return out


def _root(grid: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Where ``values`` (over ``grid``) cross zero nearest the grid's middle, by a quadratic
    through the points within 3 steps of the sign change, and the rate of change there; the
    smallest value's wavelength (rate 0) if they never change sign."""
    signs = np.sign(values)
    changes = np.flatnonzero(signs[:-1] * signs[1:] < 0)
    if changes.size == 0:
        i = int(np.argmin(np.abs(values)))
        return float(grid[i]), 0.0
    i = int(changes[np.argmin(np.abs(changes - grid.size / 2))])
    lo, hi = max(i - 2, 0), min(i + 4, grid.size)
    x, y = grid[lo:hi] - grid[i], values[lo:hi]
    c2, c1, c0 = np.polyfit(x, y, 2) if x.size >= 3 else (0.0, *np.polyfit(x, y, 1))
    t = -c0 / c1 if c1 != 0 else 0.0
    for _ in range(20):  # Newton on the quadratic, from the linear root
        d = 2 * c2 * t + c1
        if d == 0:
            break
        step = (c2 * t * t + c1 * t + c0) / d
        t -= step
        if abs(step) < 1e-9:
            break
    if not -1.0 <= t <= 2.0:  # a runaway quadratic: the straight line between the two points
        t = float(values[i] / (values[i] - values[i + 1]))
    return float(grid[i] + t), float(2 * c2 * t + c1)


def two_wells(call: Call) -> tuple[float, float, float, float]:
    """The naive reading: 180 µL of the most acidic and of the most basic buffer with 20 µL of
    the stock, one well each, one coarse unblanked spectrum (10 nm steps); their crossing nearest
    the middle by a straight line, ± half a step; ε there over the label and the nominal path,
    ± 10 %."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])
    label_um = stock_um(deck["labels"])
    ends = [buffers[0][0], buffers[-1][0]]
    transfer(
        call, [(s, well(w), 180.0) for s, w in zip(ends, ("A1", "A2"), strict=True)], "per_source"
    )
    transfer(call, [(STOCK, well(w), 20.0) for w in ("A1", "A2")], "reuse")
    spectra = read(call, home, ["A1", "A2"])
    acid = np.nan_to_num(spectra["A1"], nan=OVER_RANGE_OD)
    base = np.nan_to_num(spectra["A2"], nan=OVER_RANGE_OD)
    difference = acid - base
    signs = np.sign(difference)
    changes = np.flatnonzero(signs[:-1] * signs[1:] < 0)
    strong = (acid + base) / 2
    if changes.size == 0:
        at = float(GRID_NM[int(np.argmax(strong))])
    else:  # the crossing where the spectra are strongest
        i = int(max(changes, key=lambda j: strong[j]))
        t = difference[i] / (difference[i] - difference[i + 1])
        at = float(GRID_NM[i] + t * (GRID_NM[i + 1] - GRID_NM[i]))
    value = float(np.interp(at, GRID_NM, strong))
    epsilon = value / (label_um * 1e-6 * 0.1 * nominal_path_cm(WELL_UL))
    return at, 5.0, epsilon, 0.1 * abs(epsilon)


def uncontrolled(call: Call, *, published_nm: float) -> tuple[float, float, float, float]:
    """The experiment without controls: the published point; 180 µL of the most basic buffer
    and 20 µL of the stock in one well, read once there, the nominal plate's OD taken off, over
    the label and the nominal path. No blank or replicate."""
    deck = call("lh_get_deck")
    buffers = buffers_of(deck["labels"])
    label_um = stock_um(deck["labels"])
    transfer(call, [(buffers[-1][0], well("A1"), 180.0)], "per_source")
    transfer(call, [(STOCK, well("A1"), 20.0)], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    wavelength = round(published_nm)
    data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(wavelength), wells=["A1"])
    value = data["values"].get("A1")
    reading = OVER_RANGE_OD if value is None else float(value)
    epsilon = (reading - nominal_plate_od()) / (label_um * 1e-6 * 0.1 * nominal_path_cm(WELL_UL))
    return published_nm, UNCONTROLLED_NM_SD, epsilon, UNCONTROLLED_EPSILON_SD * abs(epsilon)
