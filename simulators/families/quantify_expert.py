"""The ``quantify`` family's expert: a survey, a bracketing calibration series, and each well's
analyte unmixed from its spectrum.

1. **Survey** (one read): a water blank, the standard 1 in 10, the sample neat and 1 in 10
   (and the second absorber's standard 1 in 10), spectra over :data:`GRID_NM`. The standard's
   blanked spectrum gives the analyte's shape per µM; the sample's analyte is estimated by
   fitting its spectrum.
2. **Calibration** (one read): the sample diluted to bring its analyte's band near
   :data:`TARGET_OD` (a second absorber's band may then read above the accurate range: the
   fits leave such points out), in triplicate (neat where it reads lower; where it reads below
   :data:`LOW_OD`, in :data:`LOW_UL` wells — the longest path a well holds — six times, the
   plate read :data:`~.protocol.FAINT_REPEATS` times and averaged); the
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

import numpy as np

from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar
from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    FAINT_REPEATS,
    MIN_UL,
    PLATE,
    amounts,
    kept,
    read,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.scripting import Call, site_of

__all__ = ["quantify"]

#: the calibration's aim: the sample's analyte band at this optical density [A: mid-range of
#: the reader's accurate 0.1-2.0 OD]
TARGET_OD = 0.8
#: a sample whose analyte reads below this neat is read in :data:`LOW_UL` wells [A]
LOW_OD = 0.15
WELL_UL, LOW_UL = 200.0, 300.0
#: the second absorber's matched well reads at least this at its peak [A: mid-range, where
#: the read noise is a small part of its shape and the stray light negligible]
MATCHED_OD = 0.5
#: the standard's levels, as multiples of the sample's expected analyte in its well [A]
LEVELS = (0.25, 0.5, 1.0, 1.5, 2.0)
#: the pipetting's systematic share of a result (1 sd, relative) [A: the channels' ISO 8655
#: systematic limits at these volumes, partly common to standard and sample]
PIPETTING_SD = 0.005
LABEL_SD = 0.01


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
        (water, well(survey["blank"]), WELL_UL),
        (water, well(survey["standard"]), 180.0),
        (water, well(survey["tenth"]), 180.0),
    ]
    sources = [(standard, survey["standard"], 20.0), (sample, survey["neat"], WELL_UL)]
    sources.append((sample, survey["tenth"], 20.0))
    if second is not None:
        moves.append((water, well(survey["second"]), 180.0))
        sources.append((second, survey["second"], 20.0))
    transfer(call, moves, "reuse")
    transfer(call, [(s, well(w), v) for s, w, v in sources], "per_source")
    spectra = read(call, home, [w for k, w in survey.items() if k != "second" or second])
    blank = spectra[survey["blank"]]
    shape = (spectra[survey["standard"]] - blank) / (std_um * 20.0 / WELL_UL)  # OD per µM
    basis = [shape]
    if second is not None:
        basis.append(spectra[survey["second"]] - blank)
    # the sample's analyte (µM, neat): from the neat well where enough of it reads in range
    neat, tenth = spectra[survey["neat"]] - blank, spectra[survey["tenth"]] - blank
    in_range = int(np.sum(np.isfinite(neat) & (neat < ACCURATE_OD))) >= len(basis) + 4
    fit = amounts(neat if in_range else tenth, basis) * (1.0 if in_range else 10.0)
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
            source, take = well(survey["standard"]), stock_ul * 10.0
        take = round(min(max(take, MIN_UL), volume), 1)
        actual_um = take / volume * std_um * (1.0 if source == standard else 0.1)
        name = f"B{k + 1}"
        levels_um.append((name, actual_um))
        std_moves.append((source, well(name), take))
    matched = []  # the second absorber as much as a sample well holds (its shape, read alike)
    if second is not None:
        second_ul = max(float(fit[1]), 0.0) * sample_ul / 10.0  # µL of its stock
        # no fainter than MATCHED_OD: a noisy shape's amount shrinks in the fits, and an
        # overlapping analyte's takes up the rest (the survey's 20 µL read its peak)
        second_ul = max(second_ul, 20.0 * MATCHED_OD / float(np.nanmax(basis[1])))
        source, take = (
            (second, second_ul)
            if second_ul >= MIN_UL
            else (well(survey["second"]), second_ul * 10.0)
        )
        matched = ["B9"]
        std_moves.append((source, well("B9"), round(min(max(take, MIN_UL), volume), 1)))
    water_moves = [(water, w, volume - v) for (_, w, v) in std_moves if volume - v >= MIN_UL]
    water_moves += [(water, well(w), volume) for w in blanks]
    if sample_ul < volume:
        water_moves += [(water, well(w), volume - sample_ul) for w in samples]
    transfer(call, water_moves, "reuse")
    samples_in = [(sample, well(w), sample_ul) for w in samples]
    transfer(call, [*std_moves, *samples_in], "per_source")
    wells = [w for w, _ in levels_um] + blanks + samples + matched
    spectra = read(call, home, wells, path_check=True, repeats=FAINT_REPEATS if faint else 1)
    healthy = sound(spectra.pop("band"), wells)
    levels_um = kept([(w, um) for w, um in levels_um if w in healthy], levels_um, 3)
    blanks = kept([w for w in blanks if w in healthy], blanks, 1)
    samples = kept([w for w in samples if w in healthy], samples, 2)
    blank = np.mean([spectra[w] for w in blanks], axis=0)
    # the analyte's shape again, from the five standards of this read (less noise than one)
    ladder = np.array([spectra[w] - blank for w, _ in levels_um])
    levels = np.array([um for _, um in levels_um])
    basis[0] = np.sum(ladder * levels[:, None], axis=0) / float(levels @ levels)
    if matched and matched[0] in healthy:
        basis[1] = spectra[matched[0]] - blank
    fitted = {w: amounts(spectra[w] - blank, basis)[0] for w in wells}

    # 3-4. the calibration line and the sample read off it
    curve, _ = StandardCurve.fit_robust(
        [um for _, um in levels_um], [fitted[w] for w, _ in levels_um]
    )
    in_well, sd_well = curve.invert([fitted[w] for w in samples])
    factor = volume / sample_ul
    estimate = in_well * factor
    relative = math.sqrt((sd_well / max(in_well, 1e-12)) ** 2 + LABEL_SD**2 + PIPETTING_SD**2)
    return estimate, abs(estimate) * relative
