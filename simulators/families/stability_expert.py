"""The ``stability`` family's expert: a survey that names the candidate, then the stock diluted
into range in triplicate and read against its standard.

1. **Survey** (one read): a water blank, every candidate's standard 1 in 10, and the stock
   diluted (1 in 10 steps as needed: :func:`dilution`) so that its label would read about 1 OD for
   the strongest candidate by the library's ε (and, where the panel's ε differ more than
   :data:`SPREAD` times, a second well for the weakest), spectra over
   :data:`~.protocol.GRID_NM`. The stock's blanked spectrum, fitted by each standard's (and a
   constant), names the candidate by the least residual; its amount, about how much is left.
2. **Calibration** (one read): the stock diluted to read about :data:`TARGET_OD`, in
   triplicate; the named candidate's standard at :data:`LEVELS` of the stock's expected amount
   in a well; two water blanks; water's band leaves out a defect well.
3. The candidate's spectrum per µM from its two standards (least squares over their amounts);
   each stock well's amount by it, their mean times the dilution. The uncertainty: the wells'
   spread, the standard's label (1 %) and the dilution's pipetting (:data:`PIPETTING_SD`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.parts import analyte
from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    MIN_UL,
    PLATE,
    amounts,
    kept,
    read,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.scripting import Call, nominal_path_cm, site_of

__all__ = ["dilution", "fill", "stability"]

WELL_UL = 200.0
#: the survey's aim: the label, undegraded, at this optical density for its candidate [A]
SURVEY_OD = 1.0
#: the calibration's aim: the stock's band at this optical density [A: mid-range of the
#: reader's accurate 0.1-2.0 OD]
TARGET_OD = 0.8
#: the survey reads a second stock well where the panel's ε differ more than this [A]
SPREAD = 4.0
#: the named candidate's standard levels, as multiples of the stock's expected amount [A]
LEVELS = (0.7, 1.3)
#: the standard's label (1 sd), as its certificate states
LABEL_SD = 0.01
#: a one- to three-step dilution's pipetting error (1 sd, relative) [A: with the label's 1 %
#: and the wells' spread, ~1.5 % in all; the expert's error measured over seeds 0-29 is 1.0-1.9 %
#: (sd of ln(ĉ/c) by level) [M], ISO 8655-2 allowing up to 2.5 % for a 20 µL draw from a 50 µL
#: tip]
PIPETTING_SD = 0.008

#: the least volume taken into a stock well: a 10-20 µL delivery misses by a fraction of the
#: few per cent a 2-3 µL one does [A: ISO 8655-2's relative limits fall with the volume]
LEAST_UL = 10.0
#: each serial step: this much into a spare well of 200 µL (1 in 10) [A]
STEP_UL = 20.0
#: at most this much is drawn from a spare well in all (its 200 µL less the dead volume a tip
#: cannot reach, with room to spare) [A]
SPARE_UL = 160.0

Move = tuple[str, str, float]


def dilution(
    source: str,
    water: str,
    neat_od: float,
    wells: list[str] | str,
    spares: list[str],
    *,
    target: float = 1.0,
) -> tuple[list[list[Move]], float]:
    """Moves that fill each of ``wells`` (200 µL) with ``source`` diluted to read about
    ``target`` OD, given what it would read neat (``neat_od``): 1 in 10 steps through
    ``spares`` (as many as needed) until a last step takes at least :data:`LEAST_UL` into each
    well. The moves come in stages (water; from ``source``; from each spare in turn), each to be
    done after the one before; and the dilution factor."""
    targets = [wells] if isinstance(wells, str) else list(wells)
    want = neat_od / target
    steps = max(0, math.ceil(math.log10(want * LEAST_UL / WELL_UL))) if want > 1.0 else 0
    if steps > len(spares):
        raise ValueError(f"a {want:.0f}-fold dilution needs {steps} spare wells")
    take = round(WELL_UL * 10.0**steps / want, 1) if want > 1.0 else WELL_UL
    if steps == 0 and WELL_UL - take < MIN_UL:
        return [[], [(source, w, WELL_UL) for w in targets]], 1.0
    volumes = [STEP_UL] * steps
    if steps and take * len(targets) > SPARE_UL:  # the first step 1 in 20: half as much taken
        volumes[0], take = STEP_UL / 2.0, round(take / 2.0, 1)
    chain = [source, *spares[:steps]]
    water_moves = [(water, spare, WELL_UL - v) for spare, v in zip(chain[1:], volumes, strict=True)]
    water_moves += [(water, w, WELL_UL - take) for w in targets]
    stages = [water_moves]
    stages += [[(chain[i], chain[i + 1], volumes[i])] for i in range(steps)]
    stages.append([(chain[-1], w, take) for w in targets])
    factor = math.prod(WELL_UL / v for v in volumes) * WELL_UL / take
    return stages, factor


def fill(call: Call, stages: list[list[Move]]) -> None:
    """Each stage's moves in turn: water with one tip, the rest a tip per source."""
    for i, moves in enumerate(stages):
        if moves:
            transfer(call, moves, "reuse" if i == 0 else "per_source")


def _fit(spectrum: np.ndarray, shape: np.ndarray) -> tuple[float, float]:
    """The residual and the amount of ``shape`` in ``spectrum`` (with a constant), over the
    points read inside the accurate range."""
    design = np.column_stack([shape, np.ones_like(shape)])
    used = np.isfinite(spectrum) & (spectrum < ACCURATE_OD) & np.all(np.isfinite(design), axis=1)
    if used.sum() < 4:
        return math.inf, 0.0
    coef, *_ = np.linalg.lstsq(design[used], spectrum[used], rcond=None)
    residual = spectrum[used] - design[used] @ coef
    return float(residual @ residual) / int(used.sum()), float(coef[0])


def stability(
    call: Call, stocks: Mapping[str, str], *, sample: str, water: str, label_um: float
) -> tuple[str, float, float]:
    """The stock's candidate, its concentration (µM) and that concentration's relative sd,
    through ``call`` only. ``stocks``: each candidate's standard container."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    keys = list(stocks)
    std_um = {k: label_micromolar(deck["labels"][c]) for k, c in stocks.items()}
    path = nominal_path_cm(WELL_UL)
    neat = {k: label_um * 1e-6 * analyte(k).epsilon * path for k in keys}

    # 1. survey: row A (blank, standards 1 in 10, the stock), spares in row D
    tenths = {k: f"A{i + 2}" for i, k in enumerate(keys)}
    first = f"A{len(keys) + 2}"
    strong, weak = max(neat.values()), min(neat.values())
    spares = [well(f"D{i}") for i in range(1, 13)]
    survey = {first: dilution(sample, water, strong, well(first), spares[:3], target=SURVEY_OD)}
    if strong / weak > SPREAD:
        second = f"A{len(keys) + 3}"
        survey[second] = dilution(sample, water, weak, well(second), spares[3:6], target=SURVEY_OD)
    stages: list[list[Move]] = [[(water, well("A1"), WELL_UL)], []]
    stages[0] += [(water, well(w), 180.0) for w in tenths.values()]
    stages[1] += [(stocks[k], well(w), 20.0) for k, w in tenths.items()]
    for moves, _ in survey.values():
        for i, stage in enumerate(moves):
            if i < len(stages):
                stages[i] += stage
            else:
                stages.append(list(stage))
    fill(call, stages)
    spectra = read(call, home, ["A1", *tenths.values(), *survey])
    blank = spectra["A1"]
    shapes = {k: (spectra[w] - blank) / (std_um[k] * 0.1) for k, w in tenths.items()}

    def peak(w: str) -> float:
        values = spectra[w] - blank
        return float(np.nanmax(values)) if np.isfinite(values).any() else math.inf

    usable = [w for w in survey if peak(w) <= ACCURATE_OD]
    chosen = max(usable, key=peak) if usable else min(survey, key=peak)
    fits = {k: _fit(spectra[chosen] - blank, shapes[k]) for k in keys}
    key = min(keys, key=lambda k: fits[k][0])
    rough_um = max(fits[key][1], 1e-9) * survey[chosen][1]

    # 2. calibration: row B (the stock in triplicate, the standard's levels, blanks)
    samples, levels_at, blanks = ["B1", "B2", "B3"], ["B4", "B5"], ["B6", "B7"]
    per_um = float(np.nanmax(shapes[key]))  # OD per µM at the peak, in a 200 µL well
    moves, factor = dilution(
        sample, water, rough_um * per_um, [well(w) for w in samples], spares[6:9], target=TARGET_OD
    )
    expected_um = rough_um / factor
    levels_um, std_moves = [], []
    for name, multiple in zip(levels_at, LEVELS, strict=True):
        stock_ul = expected_um * multiple / std_um[key] * WELL_UL
        if stock_ul >= LEAST_UL:
            source, take, strength = stocks[key], stock_ul, 1.0
        else:  # the survey's 1 in 10 well
            source, take, strength = well(tenths[key]), stock_ul * 10.0, 0.1
        take = round(min(max(take, MIN_UL), WELL_UL), 1)
        levels_um.append((name, take / WELL_UL * std_um[key] * strength))
        std_moves.append((source, well(name), take))
    water_moves = [(water, w, WELL_UL - v) for _, w, v in std_moves if WELL_UL - v >= MIN_UL]
    water_moves += [(water, well(w), WELL_UL) for w in blanks]
    stages = [list(stage) for stage in moves]
    stages[0] = water_moves + stages[0]
    stages[1] = stages[1] + std_moves
    fill(call, stages)
    wells = samples + levels_at + blanks
    spectra = read(call, home, wells, path_check=True)
    healthy = sound(spectra.pop("band"), wells)
    samples = kept([w for w in samples if w in healthy], samples, 2)
    blanks = kept([w for w in blanks if w in healthy], blanks, 1)
    levels_um = kept([(w, um) for w, um in levels_um if w in healthy], levels_um, 1)
    blank = np.mean([spectra[w] for w in blanks], axis=0)
    ladder = np.array([spectra[w] - blank for w, _ in levels_um])
    amounts_um = np.array([um for _, um in levels_um])
    shape = np.sum(ladder * amounts_um[:, None], axis=0) / float(amounts_um @ amounts_um)
    found = [float(amounts(spectra[w] - blank, [shape])[0]) for w in samples]
    in_well = statistics.fmean(found)
    spread = statistics.stdev(found) / math.sqrt(len(found)) if len(found) > 1 else 0.0
    relative = math.sqrt((spread / max(in_well, 1e-12)) ** 2 + LABEL_SD**2 + PIPETTING_SD**2)
    return key, in_well * factor, relative
