"""The ``fluorimetry`` family's expert: a survey, then standard additions to the diluted sample
read by fluorescence.

1. **Survey** (one read at the reader's own gain): a water blank, the sample neat and 1 in 10,
   100, 1000 and 10,000 (each made from the last), the standard 1 in 100. The standard's net
   reading gives the signal per µM in water; the most diluted sample well reading clearly
   above the blank gives a first estimate (low where a matrix filters: enough to plan).
2. **Additions**: the sample diluted so that the brightest well holds at most :data:`MAX_OD`
   of the fluorophore at its excitation (its own inner filter then bends the line by well
   under a per cent) and reads at most :data:`MAX_RFU`: in 1 in :data:`STEP` steps, then so
   many :data:`DELIVERY_UL` deliveries a well (at most :data:`MAX_SAMPLE_UL`). It goes in
   triplicate alone and once with each of :data:`ADDED` times its expected content of the
   standard, itself diluted in the same steps and one partial step, added in whole
   deliveries; water to 200 µL. Every volume of sample and standard is a delivery of the one
   tip at its nominal volume, so the channel's systematic error is common to both and cancels
   in their ratio. The matrix is the same in every well, so the line's slope carries its
   inner filter, and the sample's content is the intercept over the slope. Water blanks, the
   standard once alone. A faint sample (expected to read under :data:`FAINT_RFU`) gets twice
   the replicates and blanks, a PMT gain that brings its brightest well near
   :data:`GAIN_AIM_RFU` (the published gain law; every well of the fit is read at it) and its
   plate read :data:`~.protocol.FAINT_REPEATS` times.
3. A straight line through the blanked readings against the standard added; the sample's
   content in the well is its intercept over its slope; times the dilution.
4. Uncertainty: the extrapolation's (residual scatter, the line's), the blank's, the label's
   (1 %), the dilutions' pipetting (:data:`PIPETTING_SD` for each step the sample's and the
   standard's do not share, and two more) and what is left of the
   fluorophore's own inner filter (:data:`CURVATURE_SD`), in quadrature.

``in_water``: the additions are made to water, not to the sample (a standard curve in water,
the sample read against it): the shortcut that is blind to the matrix.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.fluorimetry_parts import optics
from labtools.simulators.families.protocol import FAINT_REPEATS, MIN_UL, PLATE, transfer, well
from labtools.simulators.families.task import WELL_UL
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.tasks.scripting import Call, nm, site_of
from labtools.simulators.world import SpeciesLibrary

__all__ = ["fluorimetry"]

#: the reader's own read height (0: its default)
OWN_HEIGHT = {"value": 0, "unit": "millimeter"}
#: the sample's most in a well, leaving room for the additions (µL) [A]
MAX_SAMPLE_UL = 100.0
#: every volume of sample or standard is made of deliveries of this (µL) [A: one tip type at
#: its nominal volume, whose systematic error is then common to the sample and the standard
#: and cancels in their ratio]
DELIVERY_UL = 10.0
#: each dilution step, sample's and standard's alike: 10 µL into 190 µL of water [A]
STEP = 20
#: the standard's last, partial step: at most this many deliveries into a well of this
#: volume (µL: what the additions draw, and its dead volume, in a 360 µL well) [A]
MAX_LAST, LAST_UL = 10, 300.0
#: one delivery of the standard adds at most this share of the sample's content [A]
UNIT_SHARE = 0.5
#: what a well keeps below a tip's reach (µL) [A: the simulated deck's ~9 µL, rounded up]
DEAD_UL = 12.0
#: the standard added, as multiples of the sample's expected content in its well [A]
ADDED = (0.5, 1.0, 1.5, 2.0)
#: the brightest well's fluorophore at most this optical density over 1 cm at its excitation
#: [C: a top read attenuates ~1.2 × OD × ln 10 × the ~0.3 cm to the focus: 0.4 % at 0.005]
MAX_OD = 0.005
#: the brightest well's reading at most this (RFU) [A: a fifth of the detector's 1e6 ceiling,
#: room for the lot, the reader's scale and the survey's error]
MAX_RFU = 2e5
#: a well expected to read less than this above the blank is faint (RFU at the reader's own
#: gain) [A: where the 1 RFU floor and the 10-30 RFU autofluorescence weigh a per cent]
FAINT_RFU = 3000.0
#: a faint plate's brightest well is read at the gain that brings it here (RFU) [A]
GAIN_AIM_RFU = 3e4
#: the survey's sample wells: how far each is diluted [A: decades, each from the last]
SURVEY = (1.0, 10.0, 100.0, 1000.0, 10000.0)
#: a survey well counts when it reads this far above the blank (RFU) [A]
CLEAR_RFU = 30.0
#: the pipetting's systematic share of a dilution step (1 sd, relative) [A: ISO 8655-2's
#: systematic limit of a 10 µL tip at 10 µL, ±1.2 %, as about two sd]
PIPETTING_SD = 0.005
#: the fluorophore's own inner filter left in the line (1 sd, relative) [C: MAX_OD]
CURVATURE_SD = 0.004
#: the standard's label (1 sd, relative) [A: the family's certified standards, ±1 %]
LABEL_SD = 0.01


def fluorimetry(
    call: Call, *, key: str, standard: str, sample: str, water: str, in_water: bool = False
) -> tuple[float, float]:
    """The sample's fluorophore ``key`` (µM) and its standard uncertainty, through ``call``
    only."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    std_um = label_micromolar(deck["labels"][standard])
    ex, em = optics(key)
    epsilon = float(SpeciesLibrary.default()[key].absorptivity(float(ex)))
    constants = ReaderConstants()

    # 1. survey: row A (blank, the sample's decades, the standard 1 in 100)
    decades = ["A2", "A3", "A4", "A5", "A6"]
    transfer(
        call,
        [(water, well("A1"), WELL_UL), (water, well("A7"), 198.0)]
        + [(water, well(w), 180.0) for w in decades[1:]],
        "reuse",
    )
    transfer(
        call,
        [
            (sample, well("A2"), WELL_UL),
            (sample, well("A3"), 20.0),
            (standard, well("A7"), 2.0),
        ],
        "per_source",
    )
    transfer(call, [(well(a), well(b), 20.0) for a, b in itertools.pairwise(decades[1:])], "new")
    survey = _read(call, home, ["A1", *decades, "A7"], ex, em)
    blank = survey.get("A1", 0.0)
    per_um = (survey.get("A7", math.inf) - blank) / (std_um / 100.0)  # RFU per µM, in water
    estimate_um = 0.0
    for name, dilution in zip(decades, SURVEY, strict=True):
        net = survey.get(name, math.inf) - blank
        if math.isfinite(net) and net > CLEAR_RFU:
            estimate_um = net / per_um * dilution  # the most diluted clear one wins
    if estimate_um <= 0.0:  # nothing clear: the neat well, whatever it read
        estimate_um = max(survey.get("A2", blank) - blank, 1.0) / per_um

    # 2. the plan: the sample diluted in 1 in 20 steps, measured out in 10 µL deliveries
    top = 1.0 + ADDED[-1]
    in_well_max = min(MAX_OD / (top * epsilon) * 1e6, MAX_RFU / (top * per_um))
    faint_guess = in_well_max * per_um < FAINT_RFU
    count = (6 if faint_guess else 3) + len(ADDED)  # wells that take the sample
    sample_chain, per_well = _chain(estimate_um / in_well_max, count, sample, "F", water)
    source = sample_chain[-1][1] if sample_chain else sample
    depth = len(sample_chain) // 2  # a step: its water, then the sample
    sample_ul = DELIVERY_UL * per_well
    dilution = STEP**depth * WELL_UL / sample_ul
    expected_um = estimate_um / dilution  # the fluorophore in a sample well
    faint = expected_um * per_um < FAINT_RFU
    # the standard: 1 in 20 steps, then one of a few 10 µL deliveries, so that a 10 µL
    # addition brings a quarter to a half of the sample's content
    unit_goal = expected_um * UNIT_SHARE  # what one delivery should add in a well (µM)
    reach = STEP * LAST_UL / DELIVERY_UL  # the partial step's dilution at one delivery
    steps = max(0, math.ceil(math.log(std_um / (unit_goal * reach), STEP) - 1e-9))
    standard_chain = _steps(standard, "E", steps, water)
    adder = standard_chain[-1][1] if standard_chain else standard
    adder_um = std_um / STEP**steps
    last = min(MAX_LAST, max(1, math.floor(unit_goal * reach / adder_um)))
    if adder_um / STEP > unit_goal * 1.0001:  # one more, partial step
        name = well(f"E{steps + 1}")
        standard_chain += [(water, name, LAST_UL - DELIVERY_UL * last)]
        standard_chain += [(adder, name, DELIVERY_UL)] * last
        adder, adder_um = name, adder_um * DELIVERY_UL * last / LAST_UL
    unit_um = adder_um * DELIVERY_UL / WELL_UL  # one delivery in a well
    blanks = ["B1", "B2", "B3", "B4"] if faint else ["B1", "B2"]
    alone = ["C1", "C2", "C3", "C4", "C5", "C6"] if faint_guess else ["C1", "C2", "C3"]
    spiked = [f"D{i + 1}" for i in range(len(ADDED))]
    reference = "B9"
    added: dict[str, int] = dict.fromkeys(alone, 0)
    for w, multiple in zip(spiked, ADDED, strict=True):
        added[w] = max(round(multiple * expected_um / unit_um), 1 + max(added.values()))
    room = WELL_UL - (0.0 if in_water else sample_ul)
    water_moves = [(water, well(w), WELL_UL) for w in blanks]
    water_moves += [(water, well(w), WELL_UL - sample_ul) for w in alone]
    water_moves += [(water, well(w), room - DELIVERY_UL * added[w]) for w in spiked]
    water_moves.append((water, well(reference), WELL_UL - DELIVERY_UL * added[spiked[1]]))
    sample_moves = [
        (source, well(w), DELIVERY_UL)
        for w in (alone if in_water else alone + spiked)
        for _ in range(per_well)
    ]
    spike_moves = [(adder, well(w), DELIVERY_UL) for w in spiked for _ in range(added[w])]
    spike_moves += [(adder, well(reference), DELIVERY_UL)] * added[spiked[1]]
    chains = sample_chain + standard_chain
    firsts = [m for m in chains if m[0] == water] + [m for m in water_moves if m[2] >= MIN_UL]
    transfer(call, firsts, "reuse")
    for move in (m for m in chains if m[0] != water):  # each dilution from the last, in turn
        transfer(call, [move], "new")
    transfer(call, spike_moves + sample_moves, "per_source")
    added_um = {w: n * unit_um for w, n in added.items()}

    # 3. the read: a faint plate at a gain that lifts it above the floor, read repeatedly
    gain = 0
    if faint:
        brightest = survey.get("A1", 0.0) + expected_um * per_um * top
        factor = GAIN_AIM_RFU / max(brightest, 1.0)
        wanted = constants.gain_reference * factor ** (1.0 / constants.gain_exponent)
        gain = int(min(max(wanted, constants.gain_reference), 255))
    wells = blanks + alone + spiked + [reference]
    readings = _read(call, home, wells, ex, em, gain=gain, repeats=FAINT_REPEATS if faint else 1)
    blank_values = [readings[w] for w in blanks if w in readings]
    floor = float(np.mean(blank_values))
    floor_sd = float(np.std(blank_values, ddof=1)) / math.sqrt(len(blank_values))
    used = [w for w in alone + spiked if w in readings]
    x = np.array([added_um[w] for w in used])
    y = np.array([readings[w] - floor for w in used])

    # 4. the line and the sample read off it
    if in_water:
        ladder = [used.index(w) for w in used if w in spiked]
        slope, intercept = np.polyfit(x[ladder], y[ladder], 1)
        mine = np.array([readings[w] - floor for w in alone if w in readings])
        in_well = (float(np.mean(mine)) - intercept) / slope
        spread = float(np.std(mine, ddof=1)) / math.sqrt(len(mine)) / slope
    else:
        slope, intercept = np.polyfit(x, y, 1)
        in_well = intercept / slope
        residual = y - (intercept + slope * x)
        s = math.sqrt(float(residual @ residual) / max(len(x) - 2, 1))
        sxx = float(np.sum((x - x.mean()) ** 2))
        spread = s / slope * math.sqrt(1.0 / len(x) + float(y.mean()) ** 2 / (slope**2 * sxx))
    blank_part = floor_sd / slope
    estimate = in_well * dilution
    relative = math.sqrt(
        ((spread**2 + blank_part**2) ** 0.5 / max(abs(in_well), 1e-12)) ** 2
        + LABEL_SD**2
        + PIPETTING_SD**2 * (abs(steps - depth) + 2)
        + CURVATURE_SD**2
    )
    return estimate, abs(estimate) * relative


Move = tuple[str, str, float]


def _steps(origin: str, row: str, count: int, water: str) -> list[Move]:
    """``count`` 1 in :data:`STEP` dilutions of ``origin`` in ``row`` (each from the last: a
    :data:`DELIVERY_UL` delivery into water)."""
    moves: list[Move] = []
    source = origin
    for i in range(count):
        name = well(f"{row}{i + 1}")
        moves += [(water, name, WELL_UL - DELIVERY_UL), (source, name, DELIVERY_UL)]
        source = name
    return moves


def _chain(
    dilution: float, wells: int, sample: str, row: str, water: str
) -> tuple[list[Move], int]:
    """The sample's 1 in :data:`STEP` dilutions that bring it to at least ``dilution`` in a
    well with as few steps as may be, and the :data:`DELIVERY_UL` deliveries of the last (or
    of the sample) each of ``wells`` then takes (as many as keep the dilution, the room for
    the additions and what a dilution well holds allow)."""
    most = int(MAX_SAMPLE_UL // DELIVERY_UL)
    depth = 0
    while STEP**depth * WELL_UL / DELIVERY_UL < dilution:
        depth += 1
    if depth:  # what a dilution well can give beside the next step and its dead volume
        most = min(most, int((WELL_UL - DELIVERY_UL - DEAD_UL) // (DELIVERY_UL * wells)))
    per_well = max(1, min(most, math.floor(STEP**depth * WELL_UL / DELIVERY_UL / dilution)))
    return _steps(sample, row, depth, water), per_well


def _read(
    call: Call,
    home: str,
    wells: list[str],
    ex: int,
    em: int,
    *,
    gain: int = 0,
    repeats: int = 1,
) -> dict[str, float]:
    """The plate into the reader, :func:`read_fluorescence`, and back to ``home``."""
    call("lh_move_plate", plate=PLATE, destination="reader")
    read = read_fluorescence(call, wells, ex, em, gain=gain, repeats=repeats)
    call("lh_move_plate", plate=PLATE, destination=home)
    return read


def read_fluorescence(
    call: Call, wells: list[str], ex: int, em: int, *, gain: int = 0, repeats: int = 1
) -> dict[str, float]:
    """``wells``' fluorescence at the fluorophore's own focal height, the mean of ``repeats``
    reads (the plate in the reader; a well that saturated in any read is left out)."""
    sums: dict[str, float] = {}
    lost: set[str] = set()
    for _ in range(repeats):
        values = call(
            "reader_read_fluorescence",
            plate=PLATE,
            wells=wells,
            excitation_wavelength=nm(ex),
            emission_wavelength=nm(em),
            gain=gain,
            focal_height=OWN_HEIGHT,
        )["values"]
        for w in wells:
            value = values.get(w)
            if value is None:
                lost.add(w)
            else:
                sums[w] = sums.get(w, 0.0) + float(value)
    return {w: total / repeats for w, total in sums.items() if w not in lost}
