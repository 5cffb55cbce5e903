"""The ``wide_range`` family's expert: a survey in both modes, then each sample by the mode that
suits it, against that mode's own standard series read beside it.

1. **Survey** (one plate visit): a water blank, each sample neat and the standard 1 in 10, read
   by absorbance at the cofactor's peak and by fluorescence at the reader's own gain. The
   standard's blanked absorbance gives OD per µM; a sample reading at least :data:`BRIGHT_OD`
   above the blank (or over the range) is *bright*, the others *faint*: their fluorescence,
   by the package's nominal signal per µM (:func:`~.fluorimetry_parts.nominal_rfu_per_um`),
   only plans their dilution.
2. **Absorbance** (the bright samples): each in duplicate, neat where it reads at most
   :data:`NEAT_OD`, else diluted to about :data:`AIM_OD`; the standard at :data:`ABS_LEVELS`
   optical densities (four levels bracketing them); water blanks. Water's near-infrared band
   in every well tells a defect's short path (:func:`~.protocol.sound`): such a well is left
   out. A straight line through the blanks and the standards; each sample read off it.
3. **Fluorescence** (the faint samples): the standard diluted in 1 in 20, 1 in 20 and 1 in 10
   steps, then at :data:`FLUOR_LEVELS` of the top level, whose cofactor absorbs at most
   fluorimetry's :data:`~.fluorimetry_expert.MAX_OD` at the excitation plus emission (its own
   inner filter bends the line by well under a per cent); each sample in duplicate, neat or
   diluted (through a 1 in 20 step where a direct delivery would be under
   :data:`~.protocol.MIN_UL`) to at most :data:`FAINT_SHARE` of the top level. One read at a
   PMT gain that brings the top level near fluorimetry's
   :data:`~.fluorimetry_expert.GAIN_AIM_RFU` where it reads faint at the reader's own (the
   published gain law), repeated :data:`~.protocol.FAINT_REPEATS` times; a weighted straight
   line (the reader's 1 % CV and the blanks' scatter) through the blanks and standards.
4. Uncertainty per sample: the line's and the duplicates' (first-order), the standard's label
   (1 %) and the pipetting's systematic part (:data:`PIPETTING_SD`), in quadrature.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar
from labtools.simulators.families.fluorimetry_expert import (
    FAINT_RFU,
    GAIN_AIM_RFU,
    MAX_OD,
    read_fluorescence,
)
from labtools.simulators.families.fluorimetry_parts import matrix_od, nominal_rfu_per_um, optics
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.protocol import (
    FAINT_REPEATS,
    MIN_UL,
    PLATE,
    kept,
    sound,
    transfer,
    well,
)
from labtools.simulators.families.task import WELL_UL
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.tasks.scripting import Call, nm, site_of, water_band

__all__ = ["wide_range"]

#: a sample whose neat absorbance is at least this above the blank is read by absorbance [A:
#: where two wells at level 5's tripled 0.001 OD floor put it within ~1 %]
BRIGHT_OD = 0.2
#: a bright sample is read neat up to this, else diluted to about :data:`AIM_OD` [A: inside the
#: reader's accurate 0.1-2.0 OD, clear of the stray light near its top]
NEAT_OD, AIM_OD = 1.5, 1.0
#: the absorbance standard's in-well optical densities [A: bracketing 0.2-1.5 OD]
ABS_LEVELS = (0.15, 0.5, 1.0, 1.6)
#: the fluorescence standard's levels, as shares of the top one [A: down to the faintest
#: samples' in-well content, a thirtieth of the top]
FLUOR_LEVELS = (0.03, 0.1, 0.25, 0.5, 1.0)
#: a faint sample goes neat up to this share of the top level, else diluted to :data:`AIM_SHARE`
#: [A: inside the standards' span, with room for the survey's nominal estimate to be off]
FAINT_SHARE, AIM_SHARE = 0.7, 0.4
#: the standard's intermediate dilutions (each from the last: sample µL, water µL) [A]
STEPS = ((10.0, 190.0), (10.0, 190.0), (20.0, 180.0))
#: a sample's 1 in 20 step before a fluorescence well (µL of sample, of water) [A]
SAMPLE_STEP = (10.0, 190.0)
#: the reader's fluorescence CV, as the expert models its noise [A: the published profile's
#: reader.fluorescence.cv, "reader CVs of 1-3 % are typical"]
CV = 0.01
#: the standard's label (1 sd, relative) [A: the family's certified standards, ±1 %]
LABEL_SD = 0.01
#: the pipetting's systematic part per dilution (1 sd, relative) [A: ISO 8655-2's systematic
#: limits of a 10 µL tip, about ±1.2 % (as protocol.py and fluorimetry's expert quote them),
#: as about two sd]
PIPETTING_SD = 0.006
#: water blanks in the calibration read, shared by both modes [A]
BLANKS = 3


def wide_range(
    call: Call, *, key: str, standard: str, samples: list[str], water: str
) -> list[tuple[float, float]]:
    """Each sample's cofactor ``key`` (µM) and its standard uncertainty, through ``call``
    only."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    std_um = label_micromolar(deck["labels"][standard])
    peak = analyte(key).peak_nm
    ex, em = optics(key)
    free = _wells()

    # 1. the survey
    blank, std10 = next(free), next(free)
    neat = {s: next(free) for s in samples}
    transfer(call, [(water, well(blank), WELL_UL), (water, well(std10), 180.0)], "reuse")
    moves = [(s, well(w), WELL_UL) for s, w in neat.items()] + [(standard, well(std10), 20.0)]
    transfer(call, moves, "per_source")
    call("lh_move_plate", plate=PLATE, destination="reader")
    survey_wells = [blank, std10, *neat.values()]
    od = _absorbance(call, survey_wells, peak)
    rfu = read_fluorescence(call, [blank, *neat.values()], ex, em)
    call("lh_move_plate", plate=PLATE, destination=home)
    od_per_um = (od.get(std10, math.inf) - od[blank]) / (std_um / 10.0)
    net_od = {s: od.get(w, math.inf) - od[blank] for s, w in neat.items()}
    bright = [s for s in samples if net_od[s] >= BRIGHT_OD]
    faint = [s for s in samples if s not in bright]
    nominal = nominal_rfu_per_um(key)
    guess = {
        s: max(rfu.get(w, math.inf) - rfu.get(blank, 0.0), 0.0) / nominal for s, w in neat.items()
    }

    # 2-3. the plan
    blanks = [next(free) for _ in range(BLANKS)]
    firsts = [(water, well(w), WELL_UL) for w in blanks]
    chain: list[tuple[str, str, float]] = []  # made in turn, each from the last
    later: list[tuple[str, str, float]] = []  # from the stocks and the chain's wells
    abs_std: dict[str, float] = {}
    abs_samples: dict[str, tuple[list[str], float, float]] = {}  # wells, dilution, pipetting
    if bright:
        for target in ABS_LEVELS:
            volume = max(MIN_UL, round(target / od_per_um / std_um * WELL_UL, 1))
            w = next(free)
            abs_std[w] = std_um * volume / WELL_UL
            firsts.append((water, well(w), WELL_UL - volume))
            later.append((standard, well(w), volume))
        for s in bright:
            volume = WELL_UL
            if not net_od[s] <= NEAT_OD:  # over range reads as inf
                volume = max(MIN_UL, round(WELL_UL * AIM_OD / min(net_od[s], 4.0), 1))
            wells = [next(free), next(free)]
            for w in wells:
                if volume < WELL_UL:
                    firsts.append((water, well(w), WELL_UL - volume))
                later.append((s, well(w), volume))
            abs_samples[s] = (wells, WELL_UL / volume, PIPETTING_SD if volume < WELL_UL else 0.0)
    fl_std: dict[str, float] = {}
    fl_samples: dict[str, tuple[list[str], float, float]] = {}
    top = MAX_OD / matrix_od(key, key) * 1e6  # µM in a well
    if faint:
        intermediates: list[tuple[str, float]] = []
        source, conc = standard, std_um
        for part, rest in STEPS:
            w = next(free)
            firsts.append((water, well(w), rest))
            chain.append((source, well(w), part))
            conc *= part / (part + rest)
            source = well(w)
            intermediates.append((source, conc))
        for share in FLUOR_LEVELS:
            wanted = share * top
            origin, conc = next(
                ((o, c) for o, c in intermediates if wanted * WELL_UL / c >= MIN_UL),
                intermediates[-1],
            )
            volume = round(wanted * WELL_UL / conc, 1)
            w = next(free)
            fl_std[w] = conc * volume / WELL_UL
            firsts.append((water, well(w), WELL_UL - volume))
            later.append((origin, well(w), volume))
        for s in faint:
            origin, dilution, volume = s, 1.0, WELL_UL
            if guess[s] > FAINT_SHARE * top:
                volume = round(WELL_UL * AIM_SHARE * top / guess[s], 1)
                if volume < MIN_UL:  # through a 1 in 20 step
                    step = next(free)
                    firsts.append((water, well(step), SAMPLE_STEP[1]))
                    chain.append((s, well(step), SAMPLE_STEP[0]))
                    origin, dilution = well(step), sum(SAMPLE_STEP) / SAMPLE_STEP[0]
                    volume = min(WELL_UL, max(MIN_UL, round(volume * dilution, 1)))
            wells = [next(free), next(free)]
            for w in wells:
                if volume < WELL_UL:
                    firsts.append((water, well(w), WELL_UL - volume))
                later.append((origin, well(w), volume))
            steps = (origin != s) + (volume < WELL_UL)
            fl_samples[s] = (wells, dilution * WELL_UL / volume, PIPETTING_SD * math.sqrt(steps))
    transfer(call, firsts, "reuse")
    for move in chain:
        transfer(call, [move], "new")
    transfer(call, later, "per_source")

    # the reads
    call("lh_move_plate", plate=PLATE, destination="reader")
    found: dict[str, tuple[float, float]] = {}
    if bright:
        wells = blanks + list(abs_std) + [w for ws, _, _ in abs_samples.values() for w in ws]
        od = _absorbance(call, wells, peak)
        bands = water_band(call, PLATE, wells)
        fine = sound(np.array([bands[w] for w in wells]), wells)
        points = [(0.0, od[w]) for w in kept([w for w in blanks if w in fine], blanks, 2)]
        std_kept = kept([w for w in abs_std if w in fine], list(abs_std), 3)
        points += [(abs_std[w], od[w]) for w in std_kept if w in od]
        curve = StandardCurve.fit([p[0] for p in points], [p[1] for p in points])
        for s, (ws, dilution, pipetting) in abs_samples.items():
            use = kept([w for w in ws if w in fine and w in od], [w for w in ws if w in od], 1)
            c, sd = curve.invert([od[w] for w in use])
            found[s] = _final(c, sd, dilution, pipetting)
    if faint:
        constants = ReaderConstants()
        brightest = rfu.get(blank, 0.0) + nominal * top
        gain = 0
        if brightest < FAINT_RFU:
            factor = GAIN_AIM_RFU / max(brightest, 1.0)
            wanted = constants.gain_reference * factor ** (1.0 / constants.gain_exponent)
            gain = int(min(max(wanted, constants.gain_reference), 255))
        wells = blanks + list(fl_std) + [w for ws, _, _ in fl_samples.values() for w in ws]
        rfu = read_fluorescence(call, wells, ex, em, gain=gain, repeats=FAINT_REPEATS)
        line = _weighted_line(
            [0.0] * len(blanks) + list(fl_std.values()),
            [rfu.get(w, math.nan) for w in blanks + list(fl_std)],
            FAINT_REPEATS,
        )
        for s, (ws, dilution, pipetting) in fl_samples.items():
            values = [rfu[w] for w in ws if w in rfu]
            c, sd = _invert(line, values, FAINT_REPEATS) if values else (top, top)
            found[s] = _final(c, sd, dilution, pipetting)
    call("lh_move_plate", plate=PLATE, destination=home)
    return [found[s] for s in samples]


def _final(c: float, sd: float, dilution: float, pipetting: float) -> tuple[float, float]:
    """A sample's content (µM) from its in-well ``c`` and ``sd``, with the label's and the
    pipetting's systematic parts."""
    c = max(c, 1e-9)
    relative = math.sqrt((sd / c) ** 2 + LABEL_SD**2 + pipetting**2 + PIPETTING_SD**2)
    return c * dilution, c * dilution * relative


def _wells() -> Iterator[str]:
    """plate_1's wells, row by row."""
    for row in "ABCDEFGH":
        for column in range(1, 13):
            yield f"{row}{column}"


def _absorbance(call: Call, wells: list[str], peak: float) -> dict[str, float]:
    """``wells``' absorbance at ``peak`` (the plate in the reader; over range: left out)."""
    values = call("reader_read_absorbance", plate=PLATE, wavelength=nm(peak), wells=wells)["values"]
    return {w: float(v) for w, v in values.items() if v is not None}


Line = tuple[np.ndarray, np.ndarray, float]  # (intercept, slope), covariance, blank sd


def _weighted_line(x: list[float], y: list[float], repeats: int) -> Line:
    """A straight line through the blanks (x = 0) and the standards, weighted by the reader's
    noise: the blanks' scatter and :data:`CV` of each reading (of ``repeats`` reads)."""
    xs, ys = np.array(x, dtype=float), np.array(y, dtype=float)
    ok = np.isfinite(ys)
    xs, ys = xs[ok], ys[ok]
    zero = ys[xs == 0.0]
    floor = float(np.std(zero, ddof=1)) if zero.size > 1 else 0.0
    floor = max(floor, CV * float(np.mean(zero)) / math.sqrt(repeats), 1e-6)
    sigma = np.sqrt(floor**2 + (CV * ys) ** 2 / repeats)
    design = np.column_stack([np.ones_like(xs), xs]) / sigma[:, None]
    coef, *_ = np.linalg.lstsq(design, ys / sigma, rcond=None)
    residual = (ys - coef[0] - coef[1] * xs) / sigma
    dof = max(len(ys) - 2, 1)
    chi2 = max(1.0, float(residual @ residual) / dof)
    covariance = np.linalg.inv(design.T @ design) * chi2
    return coef, covariance, floor


def _invert(line: Line, values: list[float], repeats: int) -> tuple[float, float]:
    """The in-well content of the mean of ``values`` on ``line``, and its sd (the readings' and
    the line's, first-order)."""
    coef, covariance, floor = line
    a = np.array(values, dtype=float)
    mean = float(a.mean())
    c = (mean - coef[0]) / coef[1]
    var_mean = (floor**2 + (CV * mean) ** 2 / repeats) / len(a)
    if len(a) > 1:
        var_mean = max(var_mean, float(a.var(ddof=1)) / len(a))
    gradient = np.array([-1.0 / coef[1], -c / coef[1]])
    return c, math.sqrt(var_mean / coef[1] ** 2 + float(gradient @ covariance @ gradient))
