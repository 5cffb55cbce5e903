"""The ``mixture`` family's expert: a survey, standards of the analytes it finds, and each
sample well unmixed.

1. **Survey** (one read): a water blank, every candidate's standard 1 in 10, the sample neat
   and 1 in 10, spectra over :data:`~.protocol.GRID_NM`. Each standard gives its analyte's
   spectrum per µM; the sample's spectrum, fitted by every subset of them
   (:func:`~.protocol.select`), says which are present and about how much.
2. **Calibration** (one read): the sample diluted to bring its strongest band near
   :data:`TARGET_OD`, in triplicate (six times in :data:`LOW_UL` wells, the plate read
   :data:`~.protocol.FAINT_REPEATS` times, where a present analyte reads below
   :data:`LOW_OD`); each present analyte's standard at :data:`LEVELS` of its
   expected amount in a sample well; water blanks. Water's band leaves out defect wells.
3. Each present analyte's spectrum per µM from its two standards (least squares over their
   amounts), the others' from the survey; each sample well fitted by every subset of them: an
   analyte counts where most wells find it, at its mean amount, times the dilution.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    FAINT_REPEATS,
    MIN_UL,
    PLATE,
    amounts,
    kept,
    read,
    select,
    sound,
    transfer,
    well,
)
from labtools.simulators.tasks.scripting import Call, site_of

__all__ = ["composition"]

#: the calibration's aim: the sample's strongest band at this optical density [A]
TARGET_OD = 1.0
#: a present analyte reading below this in a sample well sends the sample to :data:`LOW_UL`
#: wells, six times [A]
LOW_OD = 0.1
WELL_UL, LOW_UL = 200.0, 300.0
#: each present analyte's standard levels, as multiples of its expected amount in a sample
#: well [A: two levels bracket it; the shape needs no more]
LEVELS = (0.5, 1.5)
#: a present analyte's standards read at least this at its peak (the lower level half of it)
#: [A: a faint standard's noise is in its shape, and a noisy shape's amount shrinks in the
#: fits while an overlapping analyte's takes up the rest]
SHAPE_OD = 0.5


def composition(
    call: Call, stocks: Mapping[str, str], *, sample: str, water: str, wells: int
) -> dict[str, float]:
    """Each candidate's concentration in the sample (µM; 0 where absent), through ``call``
    only. ``stocks``: each candidate's standard container; ``wells``: the plate wells the
    budget allows (the sample's replicates give way)."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    keys = list(stocks)
    std_um = {k: label_micromolar(deck["labels"][c]) for k, c in stocks.items()}

    # 1. survey: row A
    tenths = {k: f"A{i + 2}" for i, k in enumerate(keys)}
    blank_well, neat_well, tenth_well = "A1", f"A{len(keys) + 2}", f"A{len(keys) + 3}"
    water_moves = [(water, well(blank_well), WELL_UL), (water, well(tenth_well), 180.0)]
    water_moves += [(water, well(w), 180.0) for w in tenths.values()]
    transfer(call, water_moves, "reuse")
    stock_moves = [(stocks[k], well(w), 20.0) for k, w in tenths.items()]
    stock_moves += [(sample, well(neat_well), WELL_UL), (sample, well(tenth_well), 20.0)]
    transfer(call, stock_moves, "per_source")
    spectra = read(call, home, [blank_well, *tenths.values(), neat_well, tenth_well])
    blank = spectra[blank_well]
    shapes = {k: (spectra[w] - blank) / (std_um[k] * 0.1) for k, w in tenths.items()}
    basis = [shapes[k] for k in keys]
    neat, tenth = spectra[neat_well] - blank, spectra[tenth_well] - blank
    in_range = int(np.sum(np.isfinite(neat) & (neat < ACCURATE_OD))) >= len(keys) + 4
    found = select(neat, basis) if in_range else 10.0 * select(tenth, basis)
    if not found.any():  # nothing above the noise: the strongest by plain least squares
        plain = amounts(neat if in_range else 10.0 * tenth, basis)
        found = np.where(np.arange(len(keys)) == int(np.argmax(plain)), plain, 0.0)
    present = [k for k, um in zip(keys, found, strict=True) if um > 0]
    neat_um = dict(zip(keys, found, strict=True))

    # 2. calibration: rows B (standards, blanks) and C (the sample)
    predicted = sum(neat_um[k] * shapes[k] for k in present)
    top = float(np.nanmax(predicted))
    weakest = min(neat_um[k] * float(np.nanmax(shapes[k])) for k in present)
    share = min(1.0, TARGET_OD / max(top, 1e-6))
    faint = weakest * share < LOW_OD
    volume = LOW_UL if faint else WELL_UL
    sample_ul = max(round(volume * share, 1), 10.0)
    sample_ul = volume if volume - sample_ul < MIN_UL else sample_ul
    blanks = ["B11", "B12", "D12"] if faint else ["B11", "B12"]
    spare = wells - (len(keys) + 3) - len(LEVELS) * len(present) - len(blanks)
    samples = [f"C{i + 1}" for i in range(max(2, min(6 if faint else 3, spare)))]
    ladder: dict[str, list[tuple[str, float]]] = {}
    moves, slot = [], 1
    for k in present:
        # bracketing its amount in a sample well, no fainter than SHAPE_OD at its peak
        reads_od = SHAPE_OD / (float(np.nanmax(shapes[k])) * volume / WELL_UL)
        expected = max(neat_um[k] * sample_ul / volume, reads_od)
        lowest = MIN_UL / volume * std_um[k] * 0.1
        for multiple in LEVELS:
            want = max(expected * multiple, lowest)
            stock_ul = want / std_um[k] * volume
            source, take = (
                (stocks[k], stock_ul)
                if stock_ul >= MIN_UL
                else (
                    well(tenths[k]),
                    stock_ul * 10.0,
                )
            )
            take = round(min(max(take, MIN_UL), volume), 1)
            amount = take / volume * std_um[k] * (1.0 if source == stocks[k] else 0.1)
            name = f"B{slot}"
            slot += 1
            ladder.setdefault(k, []).append((name, amount))
            moves.append((source, well(name), take))
    water_moves = [(water, w, volume - v) for (_, w, v) in moves if volume - v >= MIN_UL]
    water_moves += [(water, well(w), volume) for w in blanks]
    if sample_ul < volume:
        water_moves += [(water, well(w), volume - sample_ul) for w in samples]
    transfer(call, water_moves, "reuse")
    transfer(call, [*moves, *[(sample, well(w), sample_ul) for w in samples]], "per_source")
    standards = [w for levels in ladder.values() for w, _ in levels]
    plate = standards + blanks + samples
    spectra = read(call, home, plate, path_check=True, repeats=FAINT_REPEATS if faint else 1)
    healthy = sound(spectra.pop("band"), plate)
    blanks = kept([w for w in blanks if w in healthy], blanks, 1)
    samples = kept([w for w in samples if w in healthy], samples, 2)
    blank = np.mean([spectra[w] for w in blanks], axis=0)

    # 3. each present analyte's spectrum per µM from its standards; the samples unmixed
    for k, levels in ladder.items():
        good = kept([(w, um) for w, um in levels if w in healthy], levels, 1)
        read_out = np.array([spectra[w] - blank for w, _ in good])
        um = np.array([a for _, a in good])
        shapes[k] = np.sum(read_out * um[:, None], axis=0) / float(um @ um)
    basis = [shapes[k] for k in keys]
    fits = np.array([select(spectra[w] - blank, basis) for w in samples])
    seen = (fits > 0).mean(axis=0) > 0.5
    mean = np.where(seen, fits.mean(axis=0), 0.0)
    return {k: float(m) * volume / sample_ul for k, m in zip(keys, mean, strict=True)}
