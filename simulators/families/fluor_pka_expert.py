"""The ``fluor_pka`` family's protocols on a plate: the expert's survey, dilution, buffers in
triplicate read as excitation spectra and global two-form fit; the naive single reading; the
experiment without controls.

The expert (:func:`fluorescence_pka`):

1. **Survey** (one read at the base form's excitation, the reader's own gain): a water blank,
   the stock 1 in 10, 100, 1000 and 10,000 in the most basic buffer (each from the last). The most
   concentrated well that reads below :data:`SURVEY_MAX_RFU` (its own inner filter then a few
   per cent at most) gives the base form's signal per share of stock.
2. **Plan**: the probe in its brightest well at most :data:`MAX_OD` at its excitation over
   1 cm (its own inner filter then bends the readings well under a per cent, alike in every
   buffer: no bias in the pKa), at most :data:`MOST_STOCK` of the well (the buffer must set the
   pH). A stock that needs more dilution than a :data:`DOSE_UL` dose gives is diluted in water
   (1 in 20 steps, then one partial step in a :data:`LAST_UL` well); every buffer well takes
   one dose from one tip, so that the amounts differ only by that channel's scatter. A faint
   plate (its brightest well expected below :data:`GAIN_AIM_RFU`) is read at the gain that
   brings it there (the published gain law) and :data:`~.protocol.FAINT_REPEATS` times.
3. **Buffers**: each in triplicate (where the wells budget does not hold them all, the most
   acidic and most basic and those nearest the published pKa), two water blanks; the plate
   read at each of :data:`EXCITATION_NM` at :data:`EMISSION_NM`.
4. **Fit**: each well's blanked excitation spectrum by :func:`~labtools.simulators.tasks.
   pka_fit.pka_posterior` (both forms' spectra, each buffer's real pH within its label's ±,
   each well's amount within the replicates' scatter): the pKa and its standard uncertainty.
   A screen filters every well alike (it is in proportion to the probe), so the fitted forms'
   spectra carry it.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.families.fluorimetry_parts import nominal_rfu_per_um
from labtools.simulators.families.protocol import FAINT_REPEATS, PLATE, transfer, well
from labtools.simulators.plate_reading.params import ReaderConstants
from labtools.simulators.tasks.indicator_pka import buffers_of
from labtools.simulators.tasks.pka_fit import pka_posterior
from labtools.simulators.tasks.scripting import Call, nm, site_of
from labtools.simulators.world import SpeciesLibrary

__all__ = ["fluorescence_pka", "one_in_ten", "uncontrolled"]

WELL_UL = 200.0
#: the reader's own read height
OWN_HEIGHT = {"value": 0, "unit": "millimeter"}
#: the emission read (nm) [V: pyranine's emission maximum, 512 nm, species.toml; both forms
#: carry it]
EMISSION_NM = 512
#: the excitation wavelengths read (nm) [A: across both forms' bands (acid 403, base 455 nm),
#: each below the 512 nm emission]
EXCITATION_NM = (380, 400, 415, 430, 445, 460, 475)
#: the base form's excitation (nm) [V: species.toml, pyranine's base form]
BASE_NM = 455
#: the survey's dilutions of the stock in the most basic buffer [A: decades, each from the last]
SURVEY = (10.0, 100.0, 1000.0, 10000.0)
#: a survey well counts if it reads below this (RFU above the blank) [A: a probe at ≤ 1.5 µM,
#: its own inner filter ≤ 3 %: enough to plan]
SURVEY_MAX_RFU = 1e5
#: the probe's brightest well at most this optical density over 1 cm at its excitation [C: a
#: top read attenuates ~1.2 × OD × ln 10 × the ~0.3 cm to the focus: 0.4 % at 0.005]
MAX_OD = 0.005
#: at most this share of a well is stock [A: as the equilibrium family's]
MOST_STOCK = 0.5
#: a dose of diluted stock (µL) [A: a 10 µL tip near its nominal volume]
DOSE_UL = 5.0
#: each dilution step: 10 µL into 190 µL of water; the last, partial step in a well of
#: LAST_UL [A: as the fluorimetry family's]
STEP, STEP_UL, LAST_UL = 20.0, 10.0, 300.0
#: a faint plate's brightest well is read at the gain that brings it here (RFU) [A: as the
#: fluorimetry family's]
GAIN_AIM_RFU = 3e4
#: wells of each buffer [A: as the rubric's replicates]
REPLICATES = 3
#: the library's autofluorescence floor as the package gives it (RFU) [C: the published
#: prior's middle, uniform 10-30 RFU]
NOMINAL_BACKGROUND = 20.0


def fluorescence_pka(
    call: Call, *, stock: str, water: str, key: str, wells: int
) -> tuple[float, float]:
    """The probe ``key``'s apparent pKa and its standard uncertainty, through ``call`` only."""
    from labtools.simulators.families.equilibrium_parts import indicator

    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])
    published = indicator(key).pka
    epsilon = _epsilon(key, "base")
    constants = ReaderConstants()

    # 1. survey: row A
    high = buffers[-1][0]
    survey = ["A2", "A3", "A4", "A5"]
    transfer(
        call, [(water, well("A1"), WELL_UL)] + [(high, well(w), 180.0) for w in survey], "reuse"
    )
    transfer(call, [(stock, well("A2"), 20.0)], "new")
    transfer(call, [(well("A2"), well("A3"), 20.0)], "new")
    transfer(call, [(well("A3"), well("A4"), 20.0)], "new")
    transfer(call, [(well("A4"), well("A5"), 20.0)], "new")
    reading = _read(call, home, ["A1", *survey], [BASE_NM], gain=0, repeats=1)
    blank = reading.get(("A1", BASE_NM), 0.0)
    per_share = 0.0
    for w, dilution in zip(survey, SURVEY, strict=True):
        net = reading.get((w, BASE_NM), math.inf) - blank
        if math.isfinite(net) and net < SURVEY_MAX_RFU:
            per_share = max(net, 1.0) * dilution  # the most concentrated readable well
            break
    if per_share <= 0.0:
        per_share = SURVEY_MAX_RFU * SURVEY[-1] * 10.0

    # 2. the plan: the share of stock that brings the brightest well to MAX_OD
    most_rfu = MAX_OD / epsilon * 1e6 * nominal_rfu_per_um(key)
    share = min(MOST_STOCK, most_rfu / per_share)
    moves: list[tuple[str, str, float]] = []
    source, dose = stock, share * WELL_UL
    if dose < DOSE_UL:
        dilution = DOSE_UL / dose
        steps = 0
        while dilution / STEP**steps > LAST_UL / STEP_UL:
            steps += 1
        source = stock
        for i in range(steps):
            name = well(f"H{i + 1}")
            moves += [(water, name, WELL_UL - STEP_UL), (source, name, STEP_UL)]
            source = name
        part = LAST_UL / (dilution / STEP**steps)
        name = well(f"H{steps + 1}")
        moves += [(water, name, LAST_UL - part), (source, name, part)]
        source, dose = name, DOSE_UL
    dose = round(dose, 1)
    expected = per_share * dose / WELL_UL
    faint = expected < GAIN_AIM_RFU
    gain = 0
    if faint:
        factor = GAIN_AIM_RFU / max(expected + blank, 1.0)
        wanted = constants.gain_reference * factor ** (1.0 / constants.gain_exponent)
        gain = int(min(max(round(wanted), constants.gain_reference), 255))

    # 3. the buffers in triplicate: rows B on
    spare = wells - len(survey) - 1 - len({m[1] for m in moves}) - 2
    chosen = _chosen(buffers, published, spare // REPLICATES)
    slots = iter(f"{row}{col}" for row in "BCDEFG" for col in range(1, 13))
    layout: dict[str, tuple[str, float, float]] = {}
    for buffer in chosen:
        for _ in range(REPLICATES):
            layout[next(slots)] = buffer
    blanks = [next(slots) for _ in range(2)]
    firsts = [m for m in moves if m[0] == water]
    firsts += [(b, well(w), WELL_UL - dose) for w, (b, _, _) in layout.items()]
    firsts += [(water, well(w), WELL_UL) for w in blanks]
    transfer(call, firsts, "per_source")
    for move in (m for m in moves if m[0] != water):  # each dilution from the last, in turn
        transfer(call, [move], "new")
    transfer(call, [(source, well(w), dose) for w in layout], "reuse")
    names = [*layout, *blanks]
    spectra = _read(
        call, home, names, list(EXCITATION_NM), gain=gain, repeats=FAINT_REPEATS if faint else 1
    )

    # 4. the global two-form fit over the excitations every well read
    usable = [ex for ex in EXCITATION_NM if all((w, ex) in spectra for w in names)]
    floor = {ex: float(np.mean([spectra[(w, ex)] for w in blanks])) for ex in usable}
    used = list(layout)
    matrix = np.array([[spectra[(w, ex)] - floor[ex] for ex in usable] for w in used])
    scale = max(float(np.max(np.abs(matrix))), 1e-9)
    ph = np.array([layout[w][1] for w in used])
    sd = np.array([layout[w][2] for w in used])
    return pka_posterior(matrix / scale, ph, sd)


def _epsilon(key: str, form: str) -> float:
    """The library's ε of ``key``'s ``form`` at the base form's excitation (M⁻¹ cm⁻¹)."""
    at = np.array([float(BASE_NM)])
    return float(SpeciesLibrary.default()[key].forms[form].absorptivity(at)[0])


def _chosen(
    buffers: list[tuple[str, float, float]], pka: float, most: int
) -> list[tuple[str, float, float]]:
    """``buffers`` if there are at most ``most``; else the most acidic, the most basic and the
    rest nearest ``pka``, by increasing pH."""
    if len(buffers) <= most:
        return buffers
    ends = [buffers[0], buffers[-1]]
    middle = sorted(buffers[1:-1], key=lambda b: abs(b[1] - pka))[: max(most - 2, 0)]
    return sorted(ends + middle, key=lambda b: b[1])


def _read(
    call: Call,
    home: str,
    wells: list[str],
    excitations: list[int],
    *,
    gain: int,
    repeats: int,
) -> dict[tuple[str, int], float]:
    """The plate into the reader, ``wells``' fluorescence at each excitation at
    :data:`EMISSION_NM` (the mean of ``repeats`` reads; a well that saturated in any
    read is left out at that excitation), and back to ``home``."""
    call("lh_move_plate", plate=PLATE, destination="reader")
    out: dict[tuple[str, int], float] = {}
    for ex in excitations:
        sums: dict[str, float] = {}
        lost: set[str] = set()
        for _ in range(repeats):
            data = call(
                "reader_read_fluorescence",
                plate=PLATE,
                wells=wells,
                excitation_wavelength=nm(ex),
                emission_wavelength=nm(EMISSION_NM),
                gain=gain,
                focal_height=OWN_HEIGHT,
            )
            for w in wells:
                value = data["values"].get(w)
                if value is None:
                    lost.add(w)
                else:
                    sums[w] = sums.get(w, 0.0) + float(value)
        out.update({(w, ex): t / repeats for w, t in sums.items() if w not in lost})
    call("lh_move_plate", plate=PLATE, destination=home)
    return out


def _one_each(call: Call, stock: str, buffers: list[tuple[str, float, float]]) -> dict[str, float]:
    """180 µL of each of ``buffers`` and 20 µL of ``stock`` in one well each of row A, read once
    at the base form's excitation at the reader's own gain (a saturated well reads the
    detector's ceiling): reading by buffer container."""
    wells = [f"A{i + 1}" for i in range(len(buffers))]
    transfer(
        call,
        [(s, well(w), 180.0) for (s, _, _), w in zip(buffers, wells, strict=True)],
        "per_source",
    )
    transfer(call, [(stock, well(w), 20.0) for w in wells], "reuse")
    deck = call("lh_get_deck")
    values = _read(call, site_of(deck, PLATE), wells, [BASE_NM], gain=0, repeats=1)
    ceiling = ReaderConstants().rfu_ceiling
    return {
        s: values.get((w, BASE_NM), ceiling) for (s, _, _), w in zip(buffers, wells, strict=True)
    }


def one_in_ten(
    call: Call, stock: str, buffers: list[tuple[str, float, float]], key: str
) -> np.ndarray:
    """The naive reading: the stock 1 in 10 in each buffer, one well each, one unblanked
    reading at the base form's excitation (``key`` names the probe; unused beyond that)."""
    values = _one_each(call, stock, buffers)
    return np.array([values[s] for s, _, _ in buffers])


def uncontrolled(call: Call, *, stock: str, key: str) -> tuple[float, float]:
    """The experiment without controls: the stock 1 in 10 once in the buffer just below and
    the one just above the library's pKa (the two nearest if it has none on one side), read at
    the base form's excitation at the reader's own gain, :data:`NOMINAL_BACKGROUND` off; the
    pKa at which the library's forms' ε there, mixed by Henderson-Hasselbalch at the labels'
    pH, give the two readings' ratio. ± the labels' ±0.02. No blank, replicate or pure form."""
    from labtools.simulators.families.equilibrium_parts import indicator

    published = indicator(key).pka
    buffers = buffers_of(call("lh_get_deck")["labels"])
    below = [b for b in buffers if b[1] <= published]
    above = [b for b in buffers if b[1] > published]
    pair = (
        [below[-1], above[0]]
        if below and above
        else sorted(sorted(buffers, key=lambda b: abs(b[1] - published))[:2], key=lambda b: b[1])
    )
    values = _one_each(call, stock, pair)
    low, high = (max(values[b[0]] - NOMINAL_BACKGROUND, 1e-6) for b in pair)
    acid, base = _epsilon(key, "acid"), _epsilon(key, "base")
    ph_low, ph_high = pair[0][1], pair[1][1]

    def ratio(pka: float) -> float:
        f1 = 1.0 / (1.0 + 10.0 ** (pka - ph_low))
        f2 = 1.0 / (1.0 + 10.0 ** (pka - ph_high))
        return (acid + (base - acid) * f1) / (acid + (base - acid) * f2)

    target = low / high
    lo, hi = ph_low - 4.0, ph_high + 4.0  # ratio falls as the pKa rises
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if ratio(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0, 0.02
