"""The ``equilibrium`` family's protocols on a plate: the expert's survey, buffers in triplicate
and global two-form fit; the naive single-wavelength reading; the experiment without controls.

The expert (:func:`apparent_pka`):

1. **Survey** (one read): a water blank, the stock 1 in 10 in the most acidic and in the most
   basic buffer: the two forms' spectra, screen included, and how strong the stock is.
2. **Buffers** (one read): each buffer in triplicate with as much stock as brings the forms'
   difference band near :data:`TARGET_OD`, at most :data:`MOST_STOCK` of the well (the buffer
   must set the pH); where even that reads below :data:`LOW_OD`, in :data:`LOW_UL` wells (the
   longest path a well holds) and the plate read :data:`~.protocol.FAINT_REPEATS` times. The
   stock goes into every well from one tip, after the buffers, so that the amounts differ only
   by that channel's scatter; water blanks of the same volume. Where the wells budget does not
   hold every buffer in triplicate, the most acidic and most basic (both forms alone) and those
   nearest the published pKa. Water's band leaves out defect wells.
3. **Fit**: every blanked spectrum, over the wavelengths that read inside the accurate range in
   every well, less its mean there (a well's own offset reads alike at every wavelength), by
   :func:`~labtools.simulators.tasks.pka_fit.pka_posterior` (both forms' spectra, each
   buffer's real pH within its label's ±, each well's amount within the replicates'
   scatter): the pKa and its standard uncertainty. A screen is read in proportion
   to the indicator in every well, so the two forms' fitted spectra carry it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    FAINT_REPEATS,
    GRID_NM,
    MIN_UL,
    PLATE,
    amounts,
    kept,
    read,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.indicator_pka import buffers_of
from labtools.simulators.tasks.pka_fit import pka_posterior
from labtools.simulators.tasks.scripting import Call, nm, nominal_path_cm, nominal_plate_od, site_of
from labtools.simulators.world.species import Form, Species

__all__ = ["apparent_pka", "half_max_ph", "one_in_ten", "uncontrolled"]

#: the forms' difference band aimed at in a buffer well [A: mid-range of the reader's accurate
#: 0.1-2.0 OD, leaving room for a screen]
TARGET_OD = 0.8
#: at most this share of a well is stock [A: the rest, 100 mM buffer, sets the pH, the
#: indicator's µM taking none of its capacity. The simulator sets a well's pH by its buffers
#: alone; a real buffer's pH moves on a twofold dilution (its dilution value, up to ~0.08 for
#: the usual standards [L]), which it does not model]
MOST_STOCK = 0.5
#: a difference band reading below this at :data:`MOST_STOCK` sends the buffers to
#: :data:`LOW_UL` wells, the plate read :data:`~.protocol.FAINT_REPEATS` times [A]
LOW_OD = 0.3
WELL_UL, LOW_UL = 200.0, 300.0
#: wells of each buffer [A: as the rubric's replicates, and the amounts' scatter the fit needs]
REPLICATES = 3
#: the survey's wells (row A): a water blank, the stock in the most acidic and the most basic
#: buffer; the stock's share there [A: 1 in 10, as indicator_pka's dose]
SURVEY = ("A1", "A2", "A3")
SURVEY_SHARE = 0.1
#: an over-range survey value stands for this optical density [A: the reader's ceiling]
OVER_RANGE_OD = 4.0
#: the experiment without controls reads the buffers within this many pH units of the
#: published pKa (the nearest one if none is) [A: both forms ≥ 9 % there]
TRANSITION_UNITS = 1.0


def apparent_pka(
    call: Call, *, stock: str, water: str, published_pka: float, wells: int
) -> tuple[float, float]:
    """The indicator's apparent pKa and its standard uncertainty, through ``call`` only.

    ``stock``: the indicator's container; ``water``: water's; ``published_pka``: the
    literature's value (it only chooses buffers where the wells budget, ``wells``, does not
    hold them all)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])

    # 1. survey: row A
    blank_well, acid_well, base_well = SURVEY
    low, high = buffers[0][0], buffers[-1][0]
    fill = WELL_UL * (1.0 - SURVEY_SHARE)
    transfer(
        call,
        [
            (water, well(blank_well), WELL_UL),
            (low, well(acid_well), fill),
            (high, well(base_well), fill),
        ],
        "per_source",
    )
    dose = WELL_UL * SURVEY_SHARE
    transfer(call, [(stock, well(acid_well), dose), (stock, well(base_well), dose)], "reuse")
    spectra = read(call, home, list(SURVEY))
    blank = spectra[blank_well]
    acid = np.nan_to_num(spectra[acid_well] - blank, nan=OVER_RANGE_OD)
    base = np.nan_to_num(spectra[base_well] - blank, nan=OVER_RANGE_OD)
    # the forms' difference band per share of stock in a 200 µL well (the screen cancels)
    band = max(float(np.max(np.abs(base - acid))), 1e-4) / SURVEY_SHARE

    # 2. the buffers in triplicate: rows B on
    faint = band * MOST_STOCK < LOW_OD
    volume = LOW_UL if faint else WELL_UL
    gain = nominal_path_cm(volume) / nominal_path_cm(WELL_UL)
    share = min(MOST_STOCK, TARGET_OD / (band * gain))
    stock_ul = round(max(volume * share, MIN_UL), 1)
    chosen = _chosen(buffers, published_pka, (wells - len(SURVEY) - 2) // REPLICATES)
    slots = iter(f"{row}{col}" for row in "BCDEFGH" for col in range(1, 13))
    layout: dict[str, tuple[str, float, float]] = {}
    for buffer in chosen:
        for _ in range(REPLICATES):
            layout[next(slots)] = buffer
    blanks = [next(slots) for _ in range(2)]
    moves = [(source, well(w), volume - stock_ul) for w, (source, _, _) in layout.items()]
    moves += [(water, well(w), volume) for w in blanks]
    transfer(call, moves, "per_source")
    transfer(call, [(stock, well(w), stock_ul) for w in layout], "reuse")
    names = [*layout, *blanks]
    spectra = read(call, home, names, path_check=True, repeats=FAINT_REPEATS if faint else 1)
    healthy = sound(spectra.pop("band"), names)
    blanks = kept([w for w in blanks if w in healthy], blanks, 1)
    blank = np.mean([spectra[w] for w in blanks], axis=0)
    used = []
    for buffer in chosen:
        mine = [w for w, b in layout.items() if b == buffer]
        used += kept([w for w in mine if w in healthy], mine, 2)

    # 3. the global two-form fit
    matrix = np.array([spectra[w] - blank for w in used])
    readable = np.all(np.isfinite(matrix), axis=0) & np.all(
        np.array([spectra[w] for w in used]) < ACCURATE_OD, axis=0
    )
    ph = np.array([layout[w][1] for w in used])
    sd = np.array([layout[w][2] for w in used])
    # each well's own offset (its plastic, OD alike at every wavelength) off: each spectrum
    # less its mean, a linear map that leaves the two-form model as it is
    matrix = matrix[:, readable]
    return pka_posterior(matrix - matrix.mean(axis=1, keepdims=True), ph, sd)


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


def one_in_ten(
    call: Call, stock: str, buffers: list[tuple[str, float, float]], *, wavelength_nm: float
) -> np.ndarray:
    """The naive reading: 180 µL of each buffer and 20 µL of ``stock`` in one well each of row
    A, one unblanked reading at ``wavelength_nm`` (an over-range well reads 4 OD)."""
    wells = [f"A{i + 1}" for i in range(len(buffers))]
    transfer(
        call,
        [(s, well(w), 180.0) for (s, _, _), w in zip(buffers, wells, strict=True)],
        "per_source",
    )
    transfer(call, [(stock, well(w), 20.0) for w in wells], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(wavelength_nm), wells=wells)
    values = data["values"]
    return np.array([OVER_RANGE_OD if values.get(w) is None else float(values[w]) for w in wells])


def half_max_ph(ph: np.ndarray, values: np.ndarray) -> float:
    """The first pH where ``values`` cross half their maximum (linear interpolation); the
    middle pH if they never do."""
    half = float(np.max(values)) / 2.0
    above = values >= half
    for i in range(1, ph.size):
        if above[i] != above[i - 1]:
            t = (half - values[i - 1]) / (values[i] - values[i - 1])
            return float(ph[i - 1] + t * (ph[i] - ph[i - 1]))
    return float(np.median(ph))


def uncontrolled(
    call: Call,
    *,
    stock: str,
    published_pka: float,
    forms: Mapping[str, Form],
    screen: Species | None,
) -> tuple[float, float]:
    """The experiment without controls: 180 µL of each buffer within :data:`TRANSITION_UNITS`
    of ``published_pka`` and 20 µL of ``stock`` in one well each, one spectrum read, the
    nominal plate's OD taken off; each unmixed with the library's spectra (``forms``, and the
    ``screen``'s) over the nominal path; the base fraction gives each well's pKa
    (Henderson-Hasselbalch). Their mean, ± the labels' ±0.02 over √n or their scatter's
    standard error, whichever is larger. No blank, replicate or pure form."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])
    near = [b for b in buffers if abs(b[1] - published_pka) <= TRANSITION_UNITS]
    near = near or [min(buffers, key=lambda b: abs(b[1] - published_pka))]
    wells = [f"A{i + 1}" for i in range(len(near))]
    transfer(
        call, [(s, well(w), 180.0) for (s, _, _), w in zip(near, wells, strict=True)], "per_source"
    )
    transfer(call, [(stock, well(w), 20.0) for w in wells], "reuse")
    spectra = read(call, home, wells)
    path = nominal_path_cm(WELL_UL) * 1e-6  # OD per µM per unit ε
    basis = [forms["acid"].absorptivity(GRID_NM) * path, forms["base"].absorptivity(GRID_NM) * path]
    if screen is not None:
        basis.append(np.asarray(screen.absorptivity(GRID_NM), dtype=float) * path)
    estimates = []
    for (_, ph, _), w in zip(near, wells, strict=True):
        acid, base = amounts(spectra[w] - nominal_plate_od(), basis)[:2]
        total = acid + base
        fraction = min(max(base / total if total > 0 else 0.5, 1e-3), 1.0 - 1e-3)
        estimates.append(ph - math.log10(fraction / (1.0 - fraction)))
    n = len(estimates)
    spread = float(np.std(estimates, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    return float(np.mean(estimates)), max(0.02 / math.sqrt(n), spread)
