"""The ``quantify`` family's expert: a survey, a bracketing calibration series, and each well's
analyte unmixed from its spectrum.

1. **Survey** (one read): a water blank, the standard 1 in 10, the sample neat and 1 in 10
   (and the second absorber's standard 1 in 10), spectra over :data:`GRID_NM`. The standard's
   blanked spectrum gives the analyte's shape per µM; the sample's analyte is estimated by
   fitting its spectrum.
2. **Calibration** (one read): the sample diluted to bring its analyte's band near
   :data:`TARGET_OD` (a second absorber's band may then read above the accurate range: the
   fits leave such points out), in triplicate (neat where it reads lower; where it reads below
   :data:`LOW_OD`, in :data:`LOW_UL` wells — the longest path a well holds — six times); the
   standard at :data:`LEVELS` of the sample's expected analyte, from the stock or from the
   survey's 1 in 10 well where a level needs less than :data:`MIN_UL` of stock; two water
   blanks (three for a faint sample); the second absorber's standard at the amount a sample
   well holds, so that its shape where it overlaps the analyte is read as well as the
   sample's. Water's near-infrared band read in every well of the
   calibration tells a defect's short path (a bubble, a scratch): such a well is left out.
3. Each well's blanked spectrum is fitted by the analyte's shape (the standards' of this read,
   by least squares over their levels), the second absorber's (its matched well's) and a
   constant: the analyte's amount in µM. A robust straight line through
   the standards' fitted against their nominal amounts is the calibration; the sample's mean is
   read off it.
4. Uncertainty: the line's and the replicates' (:meth:`~labtools.demo.analysis.StandardCurve.
   invert`), the standard's label (1 %) and the pipetting's systematic part
   (:data:`PIPETTING_SD`), in quadrature.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

import numpy as np

from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar
from labtools.instruments.liquid_handler import TipPolicy
from labtools.simulators.tasks.scripting import Call, batch, nm, short_of_path, site_of, water_band

__all__ = ["GRID_NM", "quantify"]

T = TypeVar("T")

#: the spectra's wavelengths (nm): 41 points, so 14 wells a read stay under the reader's
#: :data:`INLINE_VALUES` returned inline
GRID_NM = np.arange(330.0, 731.0, 10.0)
INLINE_VALUES = 600
#: the calibration's aim: the sample's analyte band at this optical density [A: mid-range of
#: the reader's accurate 0.1-2.0 OD]
TARGET_OD = 0.8
#: readings above this are left out of the fits (the top of the reader's accurate range)
ACCURATE_OD = 2.0
#: a sample whose analyte reads below this neat is read in :data:`LOW_UL` wells [A]
LOW_OD = 0.15
WELL_UL, LOW_UL = 200.0, 300.0
#: the standard's levels, as multiples of the sample's expected analyte in its well [A]
LEVELS = (0.25, 0.5, 1.0, 1.5, 2.0)
#: the least stock volume dispensed (µL); below it the survey's 1 in 10 dilution is used [A:
#: ISO 8655-2 allows a 10 µL tip ±1.2 % at 1 µL; 2 µL keeps it near ±0.6 %]
MIN_UL = 2.0
#: the pipetting's systematic share of a result (1 sd, relative) [A: the channels' ISO 8655
#: systematic limits at these volumes, partly common to standard and sample]
PIPETTING_SD = 0.005
LABEL_SD = 0.01
PLATE = "plate_1"
#: the tip racks of the virtual deck, smallest first, with the largest volume each holds (µL)
TIP_RACKS = ((10.0, "tips_10ul"), (50.0, "tips_50ul"), (300.0, "tips_300ul"), (1e9, "tips_1000ul"))


def quantify(
    call: Call,
    *,
    standard: str,
    second: str | None,
    sample: str,
    water: str,
) -> tuple[float, float]:
    """The sample's analyte (µM) and its standard uncertainty, through ``call`` only."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    std_um = label_micromolar(deck["labels"][standard])

    # 1. survey: row A
    survey = {"blank": "A1", "standard": "A2", "neat": "A3", "tenth": "A4", "second": "A5"}
    moves: list[tuple[str, str, float]] = [
        (water, _w(survey["blank"]), WELL_UL),
        (water, _w(survey["standard"]), 180.0),
        (water, _w(survey["tenth"]), 180.0),
    ]
    sources = [(standard, survey["standard"], 20.0), (sample, survey["neat"], WELL_UL)]
    sources.append((sample, survey["tenth"], 20.0))
    if second is not None:
        moves.append((water, _w(survey["second"]), 180.0))
        sources.append((second, survey["second"], 20.0))
    _transfer(call, moves, "reuse")
    _transfer(call, [(s, _w(w), v) for s, w, v in sources], "per_source")
    spectra = _read(call, home, [w for k, w in survey.items() if k != "second" or second])
    blank = spectra[survey["blank"]]
    shape = (spectra[survey["standard"]] - blank) / (std_um * 20.0 / WELL_UL)  # OD per µM
    basis = [shape]
    if second is not None:
        basis.append(spectra[survey["second"]] - blank)
    # the sample's analyte (µM, neat): from the neat well where enough of it reads in range
    neat, tenth = spectra[survey["neat"]] - blank, spectra[survey["tenth"]] - blank
    in_range = int(np.sum(np.isfinite(neat) & (neat < ACCURATE_OD))) >= len(basis) + 4
    fit = _amounts(neat if in_range else tenth, basis) * (1.0 if in_range else 10.0)
    sample_um = float(fit[0])
    peak = float(np.nanmax(shape)) * max(sample_um, 0.0)  # the analyte's own band, neat

    # 2. calibration: rows B (standards, blanks) and C (the sample)
    volume = LOW_UL if peak < LOW_OD else WELL_UL
    scale = volume / WELL_UL  # the longer path's gain over the survey's wells
    share = min(1.0, TARGET_OD / max(peak * scale, 1e-6))
    sample_ul = max(round(volume * share, 1), 10.0)
    sample_ul = volume if volume - sample_ul < MIN_UL else sample_ul
    # the analyte in a sample well; at least what the lowest level can be made at (the survey
    # may see next to nothing of a faint analyte beside a strong second absorber)
    lowest_um = MIN_UL / volume * std_um * 0.1  # MIN_UL of the survey's 1 in 10 standard
    expected_um = max(sample_um * sample_ul / volume, lowest_um / LEVELS[0])
    faint = volume == LOW_UL  # near the limit of detection: twice the replicates
    samples = ["C1", "C2", "C3", "C4", "C5", "C6"] if faint else ["C1", "C2", "C3"]
    blanks = ["B6", "B7", "B8"] if faint else ["B6", "B7"]
    levels_um, std_moves = [], []
    for k, multiple in enumerate(LEVELS):
        want_um = expected_um * multiple
        stock_ul = want_um / std_um * volume
        if stock_ul >= MIN_UL:
            source, take = standard, stock_ul
        else:  # the survey's 1 in 10 well, a tenth as strong
            source, take = _w(survey["standard"]), stock_ul * 10.0
        take = round(min(max(take, MIN_UL), volume), 1)
        actual_um = take / volume * std_um * (1.0 if source == standard else 0.1)
        well = f"B{k + 1}"
        levels_um.append((well, actual_um))
        std_moves.append((source, _w(well), take))
    matched = []  # the second absorber as much as a sample well holds (its shape, read alike)
    if second is not None:
        second_ul = max(float(fit[1]), 0.0) * sample_ul / 10.0  # µL of its stock
        source, take = (
            (second, second_ul) if second_ul >= MIN_UL else (_w(survey["second"]), second_ul * 10.0)
        )
        matched = ["B9"]
        std_moves.append((source, _w("B9"), round(min(max(take, MIN_UL), volume), 1)))
    water_moves = [
        (water, _w(w), volume - v) for (_, w, v) in _by_well(std_moves) if volume - v >= MIN_UL
    ]
    water_moves += [(water, _w(w), volume) for w in blanks]
    if sample_ul < volume:
        water_moves += [(water, _w(w), volume - sample_ul) for w in samples]
    _transfer(call, water_moves, "reuse")
    samples_in = [(sample, _w(w), sample_ul) for w in samples]
    _transfer(call, [*std_moves, *samples_in], "per_source")
    wells = [w for w, _ in levels_um] + blanks + samples + matched
    spectra = _read(call, home, wells, path_check=True)
    sound = _sound(spectra.pop("band"), wells)
    levels_um = _kept([(w, um) for w, um in levels_um if w in sound], levels_um, 3)
    blanks = _kept([w for w in blanks if w in sound], blanks, 1)
    samples = _kept([w for w in samples if w in sound], samples, 2)
    blank = np.mean([spectra[w] for w in blanks], axis=0)
    # the analyte's shape again, from the five standards of this read (less noise than one)
    ladder = np.array([spectra[w] - blank for w, _ in levels_um])
    amounts = np.array([um for _, um in levels_um])
    basis[0] = np.sum(ladder * amounts[:, None], axis=0) / float(amounts @ amounts)
    if matched and matched[0] in sound:
        basis[1] = spectra[matched[0]] - blank
    fitted = {w: _amounts(spectra[w] - blank, basis)[0] for w in wells}

    # 3-4. the calibration line and the sample read off it
    curve, _ = StandardCurve.fit_robust(
        [um for _, um in levels_um], [fitted[w] for w, _ in levels_um]
    )
    in_well, sd_well = curve.invert([fitted[w] for w in samples])
    factor = volume / sample_ul
    estimate = in_well * factor
    relative = math.sqrt((sd_well / max(in_well, 1e-12)) ** 2 + LABEL_SD**2 + PIPETTING_SD**2)
    return estimate, abs(estimate) * relative


def _transfer(call: Call, moves: list[tuple[str, str, float]], tips: TipPolicy) -> None:
    """``moves`` on channel 0, each with the smallest tip type that holds its volume
    (:data:`TIP_RACKS`: a 2 µL delivery from a 300 µL tip misses by up to 15 % [ISO 8655-2
    systematic limits]), one batch per tip type."""
    by_rack: dict[str, list[tuple[str, str, float]]] = {}
    for move in moves:
        rack = next(r for top, r in TIP_RACKS if move[2] <= top)
        by_rack.setdefault(rack, []).append(move)
    for rack, group in by_rack.items():
        call("lh_transfer", **batch(group, tips, tip_rack=rack, channels=[0]))


def _amounts(spectrum: np.ndarray, basis: list[np.ndarray]) -> np.ndarray:
    """Least-squares amounts of each basis spectrum in ``spectrum`` (with a constant), over the
    wavelengths where it reads inside the accurate range (a second absorber's band may lie
    above it: the analyte is read where it is not) and every basis spectrum was read."""
    design = np.column_stack([*basis, np.ones_like(basis[0])])
    kept = np.isfinite(spectrum) & (spectrum < ACCURATE_OD) & np.all(np.isfinite(design), axis=1)
    coef, *_ = np.linalg.lstsq(design[kept], spectrum[kept], rcond=None)
    return np.asarray(coef[:-1])


def _read(
    call: Call, home: str, wells: list[str], *, path_check: bool = False
) -> dict[str, np.ndarray]:
    """The plate into the reader, spectra of ``wells`` over :data:`GRID_NM` (NaN where over
    range) and, with ``path_check``, their water band under ``"band"`` (in ``wells``' order),
    and back to ``home``."""
    call("lh_move_plate", plate=PLATE, destination="reader")
    out = {}
    per_read = INLINE_VALUES // len(GRID_NM)  # wells whose spectra come back inline
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
            values = data["values"][w]
            out[w] = np.array([np.nan if v is None else float(v) for v in values], dtype=float)
    if path_check:
        bands = water_band(call, PLATE, wells)
        out["band"] = np.array([bands[w] for w in wells])
    call("lh_move_plate", plate=PLATE, destination=home)
    return out


def _sound(bands: np.ndarray, wells: list[str]) -> set[str]:
    """The wells whose water band is no defect's (:func:`~labtools.simulators.tasks.scripting.
    short_of_path`) against the median of these wells, which hold one volume."""
    median = float(np.median(bands))
    return {w for w, b in zip(wells, bands, strict=True) if not short_of_path(b / median)}


def _kept(sound: list[T], all_: list[T], least: int) -> list[T]:
    """``sound``, unless fewer than ``least`` are left: then all of them (a defect read is
    better than no reading)."""
    return sound if len(sound) >= least else all_


def _by_well(moves: Iterable[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Each standard move as (source, well, volume), the well without its plate."""
    return [(s, w.partition(":")[2], v) for s, w, v in moves]


def _w(well: str) -> str:
    return f"{PLATE}:{well}"
