"""The ``ph`` family's protocols on a plate: the expert's calibration of the indicator in the
lab's buffers and its reading of the sample; the naive colour chart; the experiment without
controls.

Why calibrate rather than bracket: bracketing reads the sample between the two buffers on
either side of it, so its pH rests on those two buffers' labels (±0.02 each) and on a straight
line drawn across a sigmoid one or two pH units wide. Calibrating fits the two-form model to
every buffer at once: the apparent pKa and both forms' spectra in this lab, each buffer's
label error averaged with the others', and the sample then read on that curve, where it is
exact at any pH. The sample's pH rests on the same buffers' scale, so the pKa's uncertainty
carries into it one for one.

The expert (:func:`calibrated_ph`):

1. **Survey** (one read, as the ``equilibrium`` expert's): a water blank, the stock 1 in 10 in
   the most acidic and the most basic buffer: how strong the stock is.
2. **Calibration and sample** (one read): the buffers in triplicate with as much stock as brings
   the forms' difference band near :data:`~.equilibrium_expert.TARGET_OD` (equilibrium's dose
   and volume rules), the sample with the same dose in three wells or in the wells the buffers
   leave (up to :data:`MOST_SAMPLES`), the sample diluted alike with water twice (the sample
   blank: a coloured matrix's own absorbance; for a colourless sample it reads as water's, and
   the four blank wells serve both) and two water blanks. Where the wells budget does not hold
   every buffer, the most acidic and most basic and those nearest the published pKa. A faint
   plate is read :data:`FAINT_READS` times. Water's band leaves out defect wells.
3. **Fit**: the buffer wells, blanked and each less its mean, by
   :func:`~labtools.simulators.tasks.pka_fit.pka_posterior` (the apparent pKa and its
   uncertainty); both forms' spectra by least squares at that pKa; each sample well, less the
   sample blank and its mean, unmixed into the two forms: pH = pKa + log10(base / acid), the
   whole-spectrum form of the ratio method, on the wells' mean amounts. The uncertainty: the
   pKa's, and the log ratio's by the delta method from the amounts' covariance (the wells'
   residual noise over the number of wells, and the blank's, common to every well, over the
   blank's wells), in quadrature.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.families.equilibrium_expert import (
    LOW_OD,
    LOW_UL,
    MOST_STOCK,
    OVER_RANGE_OD,
    REPLICATES,
    SURVEY,
    SURVEY_SHARE,
    TARGET_OD,
)
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
from labtools.simulators.tasks.pka_fit import base_fraction, pka_posterior
from labtools.simulators.tasks.scripting import Call, nm, nominal_path_cm, nominal_plate_od, site_of
from labtools.simulators.world.species import Species

__all__ = ["calibrated_ph", "colour_chart", "uncontrolled"]

#: the indicator's stock and water (the statement names both)
STOCK, WATER = "reservoir:A2", "reservoir:A1"
WELL_UL = 200.0
#: blanks: water, and the sample diluted as in its indicator wells [A: two of each]
BLANKS = 2
#: reads of a faint plate averaged [A: three times the families' FAINT_REPEATS: the sample's
#: minor form, 6-14 % of the indicator at level 5, is read near the noise; 18 calls of the
#: level's 60]
FAINT_READS = 3 * FAINT_REPEATS
#: the sample's wells: at least :data:`~.equilibrium_expert.REPLICATES`, and the wells the
#: buffers leave, up to this many [A]
MOST_SAMPLES = 6
#: the base/acid ratio is kept within these bounds before its logarithm [A: ±3 pH units]
RATIO_BOUNDS = (1e-3, 1e3)
#: the experiment without controls states this uncertainty [A: the ratio method's usual
#: accuracy against the pH scale's buffers, 0.02]
UNCONTROLLED_SD = 0.02


def _sample(labels: dict[str, str]) -> str:
    """The container labelled as the sample."""
    return next(c for c, text in labels.items() if text.startswith("sample"))


def calibrated_ph(
    call: Call, *, published_pka: float, wells: int, coloured: bool
) -> tuple[float, float]:
    """The sample's pH and its standard uncertainty, through ``call`` only (``published_pka``
    only chooses buffers where the wells budget, ``wells``, does not hold them all; a sample
    the statement says is colourless, not ``coloured``, is blanked by water and its own blank
    wells together)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    buffers = buffers_of(deck["labels"])
    sample = _sample(deck["labels"])

    # 1. survey: row A
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
    acid = np.nan_to_num(spectra[acid_well] - spectra[blank_well], nan=OVER_RANGE_OD)
    base = np.nan_to_num(spectra[base_well] - spectra[blank_well], nan=OVER_RANGE_OD)
    band = max(float(np.max(np.abs(base - acid))), 1e-4) / SURVEY_SHARE

    # 2. the buffers in triplicate, the sample, the blanks: rows B on
    faint = band * MOST_STOCK < LOW_OD
    volume = LOW_UL if faint else WELL_UL
    gain = nominal_path_cm(volume) / nominal_path_cm(WELL_UL)
    stock_ul = round(max(volume * min(MOST_STOCK, TARGET_OD / (band * gain)), MIN_UL), 1)
    room = (wells - len(SURVEY) - 2 * BLANKS - REPLICATES) // REPLICATES
    chosen = _chosen(buffers, published_pka, room)
    slots = iter(f"{row}{col}" for row in "BCDEFGH" for col in range(1, 13))
    layout = {next(slots): b for b in chosen for _ in range(REPLICATES)}
    spare = wells - len(SURVEY) - 2 * BLANKS - len(layout)
    sampled = [next(slots) for _ in range(min(max(REPLICATES, spare), MOST_SAMPLES))]
    sample_blanks = [next(slots) for _ in range(BLANKS)]
    water_blanks = [next(slots) for _ in range(BLANKS)]
    moves = [(source, well(w), volume - stock_ul) for w, (source, _, _) in layout.items()]
    moves += [(sample, well(w), volume - stock_ul) for w in sampled + sample_blanks]
    moves += [(WATER, well(w), stock_ul) for w in sample_blanks]
    moves += [(WATER, well(w), volume) for w in water_blanks]
    transfer(call, moves, "per_source")
    transfer(call, [(STOCK, well(w), stock_ul) for w in [*layout, *sampled]], "reuse")
    names = [*layout, *sampled, *sample_blanks, *water_blanks]
    spectra = read(call, home, names, path_check=True, repeats=FAINT_READS if faint else 1)
    healthy = sound(spectra.pop("band"), names)
    water_used = kept([w for w in water_blanks if w in healthy], water_blanks, 1)
    water = np.mean([spectra[w] for w in water_used], axis=0)
    blanks_used = kept([w for w in sample_blanks if w in healthy], sample_blanks, 1)
    if not coloured:  # the sample's blank reads as water's: the four wells blank both
        blanks_used = [*water_used, *blanks_used]
        water = np.mean([spectra[w] for w in blanks_used], axis=0)
    matrix_blank = np.mean([spectra[w] for w in blanks_used], axis=0)
    used = []
    for buffer in chosen:
        mine = [w for w, b in layout.items() if b == buffer]
        used += kept([w for w in mine if w in healthy], mine, 2)
    samples = kept([w for w in sampled if w in healthy], sampled, 2)

    # 3. the calibration, then the sample on it
    calibration = np.array([spectra[w] - water for w in used])
    readings = np.array([spectra[w] - matrix_blank for w in samples])
    raw = np.array([spectra[w] for w in [*used, *samples]])
    readable = (
        np.all(np.isfinite(raw), axis=0)
        & np.all(raw < ACCURATE_OD, axis=0)
        & np.all(np.isfinite(calibration), axis=0)
        & np.all(np.isfinite(readings), axis=0)
    )
    calibration = _centred(calibration[:, readable])
    readings = _centred(readings[:, readable])
    ph = np.array([layout[w][1] for w in used])
    sd = np.array([layout[w][2] for w in used])
    pka, pka_sd = pka_posterior(calibration, ph, sd)
    f = base_fraction(ph, pka)
    forms, *_ = np.linalg.lstsq(np.column_stack([1.0 - f, f]), calibration, rcond=None)
    coefs, *_ = np.linalg.lstsq(forms.T, readings.T, rcond=None)
    acid, base = (float(c) for c in coefs.mean(axis=1))
    ratio = min(max(base / acid if acid > 0 else RATIO_BOUNDS[1], RATIO_BOUNDS[0]), RATIO_BOUNDS[1])
    # the amounts' uncertainty: the wells' own noise (their residuals) over the wells, and the
    # sample blank's, common to them all, over the blank's wells
    residual = readings.T - forms.T @ coefs
    noise = float(np.sum(residual**2)) / max(residual.size - coefs.size, 1)
    share = 1.0 / len(samples) + 1.0 / len(blanks_used)
    covariance = noise * share * np.linalg.inv(forms @ forms.T)
    gradient = np.array([-1.0 / acid, 1.0 / base]) / math.log(10.0)
    log_sd = math.sqrt(max(float(gradient @ covariance @ gradient), 0.0))
    return pka + math.log10(ratio), math.hypot(pka_sd, log_sd)


def _centred(spectra: np.ndarray) -> np.ndarray:
    """Each spectrum less its mean (a well's own offset, alike at every wavelength, off)."""
    return spectra - spectra.mean(axis=1, keepdims=True)


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


def colour_chart(call: Call, *, wavelength_nm: float) -> tuple[float, float]:
    """The naive reading: 180 µL of each buffer and of the sample with 20 µL of the stock, one
    well each, one unblanked reading at ``wavelength_nm``; the sample's pH interpolated
    linearly between the two buffers whose readings bracket its own (the nearer end's pH if
    none do), ± a quarter of the buffers' step."""
    deck = call("lh_get_deck")
    buffers = buffers_of(deck["labels"])
    sources = [s for s, _, _ in buffers] + [_sample(deck["labels"])]
    wells = [f"A{i + 1}" for i in range(len(sources))]
    transfer(call, [(s, well(w), 180.0) for s, w in zip(sources, wells, strict=True)], "per_source")
    transfer(call, [(STOCK, well(w), 20.0) for w in wells], "reuse")
    call("lh_move_plate", plate=PLATE, destination="reader")
    data = call("reader_read_absorbance", plate=PLATE, wavelength=nm(wavelength_nm), wells=wells)
    values = [data["values"].get(w) for w in wells]
    read_ = np.array([OVER_RANGE_OD if v is None else float(v) for v in values])
    ph = np.array([p for _, p, _ in buffers])
    step = float(np.median(np.diff(ph)))
    chart, mine = read_[:-1], float(read_[-1])
    for i in range(1, ph.size):
        low, high = sorted((chart[i - 1], chart[i]))
        if low <= mine <= high and high > low:
            t = (mine - chart[i - 1]) / (chart[i] - chart[i - 1])
            return float(ph[i - 1] + t * (ph[i] - ph[i - 1])), step / 4.0
    nearest = int(np.argmin(np.abs(chart - mine)))
    return float(ph[nearest]), step / 4.0


def uncontrolled(call: Call, *, indicator: Species, screen: Species | None) -> tuple[float, float]:
    """The experiment without controls: 180 µL of the sample and 20 µL of the stock in one
    well, one spectrum read, the nominal plate's OD taken off, unmixed with the library's
    spectra of the forms (and the ``screen``'s) over the nominal path; pH = the library's
    pKa + log10(base / acid), ± :data:`UNCONTROLLED_SD`. No blank, calibration or replicate."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    sample = _sample(deck["labels"])
    transfer(call, [(sample, well("A1"), 180.0)], "per_source")
    transfer(call, [(STOCK, well("A1"), 20.0)], "reuse")
    spectrum = read(call, home, ["A1"])["A1"]
    path = nominal_path_cm(WELL_UL) * 1e-6  # OD per µM per unit ε
    basis = [indicator.forms[f].absorptivity(GRID_NM) * path for f in ("acid", "base")]
    if screen is not None:
        basis.append(np.asarray(screen.absorptivity(GRID_NM), dtype=float) * path)
    acid, base = amounts(spectrum - nominal_plate_od(), basis)[:2]
    ratio = base / acid if acid > 0 else RATIO_BOUNDS[1]
    ratio = min(max(ratio, RATIO_BOUNDS[0]), RATIO_BOUNDS[1])
    if indicator.pka is None:
        raise ValueError(f"{indicator.key!r} has no published pKa")
    return indicator.pka + math.log10(ratio), UNCONTROLLED_SD
