"""The ``target`` family's protocols on a plate: the expert's design (each standard read alone,
volumes by non-negative least squares, the mix checked and corrected), and the shortcuts' mixes
made from the package's numbers.

The expert (:func:`design`):

1. **Blank**: the empty wells it will use, each well's own optical offset (the plate's plastic
   and the well's), read before anything is put in (:data:`FAINT_CHECKS` times where the target
   is faint, :data:`FAINT_OD`).
2. **Standards**: each standard 1 in 10 in water (:data:`DILUTION_UL` in 200 µL, about 1 OD
   at its band), its spectrum over :data:`~.protocol.GRID_NM` less its well's empty reading:
   the standard's absorbance per µL in a 200 µL well as this reader reads it (its lot, its real
   concentration, the reader's gain, the plate's path).
3. **Volumes**: non-negative least squares of the standards' absorbances at the target's
   wavelengths onto the target (:func:`~labtools.simulators.tasks.scripting.nnls`).
4. **Mix**: the mix's water into both mix wells (:data:`MIXES`); water's band, read in them and
   again in the standards' wells, picks a sound mix well and rescales a standard whose well is
   short beyond its scatter (:func:`_defect`). The standards follow, :data:`MARGIN` short, from
   the stock or, below :data:`STOCK_MIN_UL`, the 1 in 10 well.
5. **Check and correct** (up to :data:`TOP_UPS` times): the mix read, its spectrum fitted by the
   standards' (least squares with a constant over the whole grid: a scale error of a standard's
   reading cancels between the fit and the volumes it asked), weighed against what was
   pipetted by their sd (:data:`PLAN_SD`), and corrected (:func:`_top_up`); then read again,
   so the submitted well is read after its last change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.protocol import (
    ACCURATE_OD,
    FAINT_REPEATS,
    GRID_NM,
    PLATE,
    read,
    transfer,
    well,
)
from labtools.simulators.families.task import WELL_UL
from labtools.simulators.tasks.scripting import (
    Call,
    nnls,
    nominal_path_cm,
    short_of_path,
    site_of,
    water_band,
)
from labtools.simulators.world import SpeciesLibrary

__all__ = ["design", "library_basis", "mix_once", "uncalibrated"]

#: µL of a standard in its 200 µL 1 in 10 well: about 1 OD at its band (families/task.py's
#: standards), the middle of the reader's accurate range [A]
DILUTION_UL = 20.0
DILUTION = WELL_UL / DILUTION_UL  # [C]
#: a standard volume below this (µL) is taken ten times over from its 1 in 10 well [A: ISO
#: 8655-2 lets a 10 µL tip miss by 0.12 µL, 2.4 % of 5 µL; 50 µL of the dilution from a 50 µL
#: tip, 1 %]
STOCK_MIN_UL = 5.0
#: the least transfer (µL): the 10 µL tips' least volume (drivers/pylabrobot/tip_types.py)
TOP_UP_MIN_UL = 1.0
#: a need below this (µL of its source) is none [A: a hundredth of the least transfer]
NEGLIGIBLE_UL = 0.01
#: a top-up's volume is settled when a pass raises it by less than this (µL), within this many
#: passes (each shrinks the change by the sources' share of the well, at most MOST_LOAD) [A]
SETTLED_UL, PASSES = 0.001, 100
#: the first mix holds this much less of each standard than the fit asks [A: a standard in
#: excess is corrected by diluting the whole mix, one short by a top-up of it alone]
MARGIN = 0.01
#: a top-up's sources fill at most this share of the well [A: a source weaker than the mix adds
#: volume, not colour; at 0.8 the well grows by at most five times what the sources bring]
MOST_LOAD = 0.8
#: a dilution tops a standard up only where it holds this many times the standard's share of
#: the mix [A: a source barely richer than the mix adds volume, not colour]
RICHER = 4.0
#: a standard the mix holds less of than this (µL per 200 µL) gets a 1 in 100 well too (one
#: :data:`RICHER` times the mix), for top-ups finer than 1 µL of its 1 in 10 [C: 2/RICHER]
FINE_BELOW_UL = 0.5
#: the first mix's amounts off what was meant, in the standards' reading's units (relative,
#: 1 sd) [A: ISO 8655-2's limits at the volumes the mix and the 1 in 10 wells take, about
#: 0.1 µL of 5 µL from a 10 µL tip and 0.3 µL of 20 µL from a 50 µL one, each]: a check
#: reading less sure than this moves the estimate only in proportion (unless it lies more than
#: three combined sd off: then the plan was wrong, a standard's well short, say)
PLAN_SD = 0.025
#: check-and-correct rounds at most [A]
TOP_UPS = 2
#: a round whose top-up would change no standard's amount by more than this share is not
#: made (the mix is within the reading's own scatter) [A]
CLOSE_ENOUGH = 0.003
#: a target whose strongest value reads below this (OD) is faint: its mix and empty wells are
#: read :data:`FAINT_CHECKS` times, the water band :data:`~.protocol.FAINT_REPEATS` more [A:
#: 50 times the 0.001 OD noise floor]
FAINT_OD = 0.2
#: the water band's relative read scatter assumed where no well was read twice [A: 1-2 %,
#: scripting.PATH_SHORTFALL's note]
BAND_SD = 0.01
#: a faint mix, and its empty well, are read this many times and averaged [A: twice the
#: protocol's three: the check's scatter falls by √6, the budget's calls allow it]
FAINT_CHECKS = 2 * FAINT_REPEATS
#: the mix never grows past this (µL): a reading asking for more is a mistake [A: the
#: validity's 250 µL]
MIX_MAX_UL = 240.0
#: the wells the mix may be made in: water's band read in each tells a defect's short path,
#: and the mix goes into the first that shows none (or the longer) [A]
MIXES = ("B1", "B2")
#: where the shortcuts mix
MIX = MIXES[0]


def design(
    call: Call,
    stocks: Mapping[str, str],
    *,
    water: str,
    target_nm: np.ndarray,
    target_od: np.ndarray,
) -> str:
    """Prepare the solution that reads ``target_od`` at ``target_nm``, through ``call`` only;
    the well holding it. ``stocks``: each standard's container."""
    home = site_of(call("lh_get_deck"), PLATE)
    keys = list(stocks)
    at = _on_grid(target_nm)
    faint = float(np.max(target_od)) < FAINT_OD
    repeats = FAINT_REPEATS if faint else 1
    dilutions = {k: f"A{i + 1}" for i, k in enumerate(keys)}
    names = list(dilutions.values())

    # 1. blank: the empty wells
    empty = read(call, home, [*names, *MIXES], repeats=FAINT_CHECKS if faint else 1)

    # 2. each standard alone, 1 in 10
    transfer(call, [(water, well(w), WELL_UL - DILUTION_UL) for w in names], "reuse")
    transfer(call, [(stocks[k], well(w), DILUTION_UL) for k, w in dilutions.items()], "per_source")
    spectra = read(call, home, names, path_check=True)
    bands = dict(zip(names, spectra.pop("band"), strict=True))
    # OD per µL of each standard in a 200 µL well, over GRID_NM (its path checked below)
    basis = np.column_stack([(spectra[w] - empty[w]) / DILUTION_UL for w in names])

    # 3. the volumes, and the first mix a little short of them
    wanted = nnls(np.nan_to_num(basis[at]), target_od)
    sources: dict[str, list[tuple[str, float]]] = {
        k: [(well(w), 1.0 / DILUTION)] for k, w in dilutions.items()
    }
    moves = _takes(stocks, sources, wanted * (1.0 - MARGIN), "")
    rest = WELL_UL - sum(v for *_, v in moves)
    # a faint standard's 1 in 100 well, for top-ups finer than 1 µL of its 1 in 10
    fine = {k: f"C{i + 1}" for i, k in enumerate(keys) if 0 < wanted[i] < FINE_BELOW_UL}
    for k, w in fine.items():
        sources[k].append((well(w), 1.0 / DILUTION**2))

    # 4. the mix's water into both mix wells, water's band read in them: a sound one takes it
    waters = [(water, well(w), rest) for w in MIXES]
    transfer(
        call, waters + [(water, well(w), WELL_UL - DILUTION_UL) for w in fine.values()], "reuse"
    )
    call("lh_move_plate", plate=PLATE, destination="reader")
    again = [water_band(call, PLATE, [*names, *MIXES]) for _ in range(repeats)]
    call("lh_move_plate", plate=PLATE, destination=home)
    if fine:  # after the bands: the standards' wells hold their 200 µL until then
        moves_fine = [(well(dilutions[k]), well(w), DILUTION_UL) for k, w in fine.items()]
        transfer(call, moves_fine, "per_source")
    path = {w: nominal_path_cm(WELL_UL) for w in names} | {w: nominal_path_cm(rest) for w in MIXES}
    seen_bands = {w: [b[w] for b in again] + ([bands[w]] if w in bands else []) for w in path}
    ratio, ratio_sd = _path_ratios(seen_bands, path)
    # a standard's well read short by more than three of its ratio's sd: a defect
    short = [i for i, w in enumerate(names) if _defect(ratio[w], ratio_sd[w])]
    if short:  # a standard's well of a defect's path read it short: the volumes again
        for i in short:
            basis[:, i] /= ratio[names[i]]
        wanted = nnls(np.nan_to_num(basis[at]), target_od)
        moves = _takes(stocks, sources, wanted * (1.0 - MARGIN), "")
    mix = MIXES[0] if not short_of_path(ratio[MIXES[0]]) else max(MIXES, key=ratio.__getitem__)
    transfer(call, [(source, well(mix), ul) for source, _, ul in moves], "per_source")
    volume = rest + sum(v for *_, v in moves)
    # what the mix should hold (µL of each standard per 200 µL), and how sure that is
    planned = wanted * (1.0 - MARGIN) * WELL_UL / volume
    planned_sd = planned * PLAN_SD

    # 5. check and correct
    for _ in range(TOP_UPS):
        reading = read(call, home, [mix], repeats=FAINT_CHECKS if faint else 1)[mix] - empty[mix]
        seen, seen_sd = _fit(_as_200(reading, volume), basis)
        spread = np.sqrt(planned_sd**2 + seen_sd**2)
        weight = planned_sd**2 / np.maximum(spread**2, 1e-30)
        weight[np.abs(seen - planned) > 3.0 * spread] = 1.0  # the plan was wrong: the reading
        now = planned + weight * (seen - planned)  # the plan and the reading, each by its sd
        if np.all(np.abs(now - wanted) <= CLOSE_ENOUGH * np.maximum(wanted, 1e-9)):
            return well(mix)
        moves = _top_up(stocks, water, sources, now, wanted, volume, well(mix))
        if not moves:
            return well(mix)
        transfer(call, moves, "per_source")
        grown = volume + sum(v for *_, v in moves)
        planned = wanted
        planned_sd = np.sqrt(weight) * seen_sd * volume / grown
        volume = grown
    read(call, home, [mix])  # the mix as submitted, checked
    return well(mix)


def _path_ratios(
    bands: Mapping[str, list[float]], path_cm: Mapping[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """Each well's water band per cm of its nominal path over all the wells' median, and that
    ratio's sd: the band's read scatter, pooled over the wells read more than once (1 % where
    none was), over each well's reads and the median's."""
    per_cm = {w: np.array(b) / path_cm[w] for w, b in bands.items()}
    middle = float(np.median([v.mean() for v in per_cm.values()]))
    repeated = [v for v in per_cm.values() if len(v) > 1]
    scatter = (
        float(np.sqrt(np.mean([np.var(v, ddof=1) for v in repeated]))) / middle
        if repeated
        else BAND_SD
    )
    total = sum(len(v) for v in per_cm.values())
    ratio = {w: float(v.mean()) / middle for w, v in per_cm.items()}
    sd = {w: scatter * float(np.sqrt(1.0 / len(v) + 1.0 / total)) for w, v in per_cm.items()}
    return ratio, sd


def _defect(ratio: float, sd: float) -> bool:
    """Whether a well whose path ratio is ``ratio`` ± ``sd`` is a defect's: short
    (:func:`~.scripting.short_of_path`) by more than three of its sd."""
    return short_of_path(ratio) and 1.0 - ratio > 3.0 * sd


def _fit(spectrum: np.ndarray, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.protocol.amounts` of each basis column in ``spectrum`` (least squares with a
    constant, over the points read inside the accurate range), and their standard errors from
    the fit's residuals."""
    design = np.column_stack([basis, np.ones(len(spectrum))])
    used = np.isfinite(spectrum) & (spectrum < ACCURATE_OD) & np.all(np.isfinite(design), axis=1)
    x, y = design[used], spectrum[used]
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    dof = max(len(y) - x.shape[1], 1)
    variance = float(np.sum((y - x @ coef) ** 2)) / dof
    covariance = variance * np.linalg.pinv(x.T @ x)
    return np.asarray(coef[:-1]), np.sqrt(np.diag(covariance)[:-1])


def _on_grid(nm: np.ndarray) -> np.ndarray:
    """The indices of ``nm`` in :data:`~.protocol.GRID_NM` (each must lie on it)."""
    at = np.array([int(np.argmin(np.abs(GRID_NM - w))) for w in nm])
    if not np.allclose(GRID_NM[at], nm):
        raise ValueError("the target's wavelengths are not on the spectra's 10 nm grid")
    return at


def _as_200(od: np.ndarray, volume_ul: float) -> np.ndarray:
    """``od`` of a solution read at ``volume_ul``, as 200 µL of it would read: over the path
    200 µL fills (the plate's height-volume table, the meniscus offset)."""
    return od * nominal_path_cm(WELL_UL) / nominal_path_cm(volume_ul)


Sources = Mapping[str, list[tuple[str, float]]]
"""Each standard's dilutions: their wells and strengths (the standard's share), strongest
first."""


def _takes(
    stocks: Mapping[str, str], sources: Sources, stock_ul: np.ndarray, into: str
) -> list[tuple[str, str, float]]:
    """Transfers putting ``stock_ul`` (µL of each standard, in ``stocks``' order) into
    ``into``: from the standard, or from its strongest dilution where the volume is below
    :data:`STOCK_MIN_UL`."""
    moves = []
    for key, ul in zip(stocks, stock_ul, strict=True):
        if ul <= 0:
            continue
        source, strength = (sources.get(key) or [(stocks[key], 1.0)])[0]
        if ul >= STOCK_MIN_UL:
            source, strength = stocks[key], 1.0
        moves.append((source, into, round(float(ul / strength), 2)))
    return [m for m in moves if m[2] >= TOP_UP_MIN_UL]


def _top_up(
    stocks: Mapping[str, str],
    water: str,
    sources: Sources,
    now: np.ndarray,
    wanted: np.ndarray,
    volume_ul: float,
    into: str,
) -> list[tuple[str, str, float]]:
    """Transfers that take a well of ``volume_ul`` at ``now`` (µL of each standard per 200 µL)
    to ``wanted``: water where a standard is in excess (it is diluted, the others made up with
    it), each standard short of what is wanted from itself or a dilution of it
    (:func:`_source`), the volume the additions bring counted, and the well grown (more water,
    more of the rest) where a transfer would be below :data:`TOP_UP_MIN_UL`. Where that would
    take the well past :data:`MIX_MAX_UL`, such a small need is left out; none if even then."""
    for grow in (True, False):
        moves, final = _additions(stocks, water, sources, now, wanted, volume_ul, into, grow)
        if final <= MIX_MAX_UL:
            return moves
    return []


def _additions(
    stocks: Mapping[str, str],
    water: str,
    sources: Sources,
    now: np.ndarray,
    wanted: np.ndarray,
    volume_ul: float,
    into: str,
    grow: bool,
) -> tuple[list[tuple[str, str, float]], float]:
    """:func:`_top_up`'s transfers and the well's final volume (µL)."""
    keys = list(stocks)
    present = wanted > 0
    if not present.any():
        return [], math.inf
    final = max(volume_ul, float(np.max(now[present] * volume_ul / wanted[present])))
    takes: list[tuple[str, float, float]] = []
    for _ in range(PASSES):  # each pass only raises ``final``; it settles in a few
        need = np.maximum(wanted * final - now * volume_ul, 0.0) / WELL_UL  # µL of standard
        takes, load = [], float(np.sum(wanted)) / WELL_UL  # the share of the well sources fill
        for i, key in enumerate(keys):
            options = [(stocks[key], 1.0)]  # a dilution only while the load allows it
            for source, strength in sources.get(key, []):
                richer = strength * WELL_UL >= RICHER * wanted[i]
                if richer and load + wanted[i] / WELL_UL * (1.0 / strength - 1.0) <= MOST_LOAD:
                    options.append((source, strength))
            takes.append(_source(options, need[i]))
            load += wanted[i] / WELL_UL * (1.0 / takes[-1][1] - 1.0)
        takes = [(s, k, ul if ul > NEGLIGIBLE_UL else 0.0) for s, k, ul in takes]
        if not grow:  # a need under half the least transfer left out, one over it rounded up
            takes = [
                (s, k, 0.0 if ul < TOP_UP_MIN_UL / 2.0 else max(ul, TOP_UP_MIN_UL))
                for s, k, ul in takes
            ]
        added = sum(ul for _, _, ul in takes)
        water_ul = final - volume_ul - added
        raised = [final, volume_ul + added]
        for i, (_, strength, ul) in enumerate(takes):
            if grow and NEGLIGIBLE_UL < ul < TOP_UP_MIN_UL:  # the well grown to take 1 µL
                least = (TOP_UP_MIN_UL + NEGLIGIBLE_UL) * strength * WELL_UL
                raised.append((least + now[i] * volume_ul) / wanted[i])
        if grow and NEGLIGIBLE_UL < water_ul < TOP_UP_MIN_UL and load < 1.0:
            raised.append(final + (TOP_UP_MIN_UL + NEGLIGIBLE_UL - water_ul) / (1.0 - load))
        if max(raised) <= final + SETTLED_UL:
            break
        final = max(raised)
    else:  # it did not settle: the sources cannot make the mix up
        return [], math.inf
    moves = [(water, into, round(water_ul, 2))] if water_ul >= TOP_UP_MIN_UL else []
    moves += [(source, into, round(max(ul, TOP_UP_MIN_UL), 2)) for source, _, ul in takes if ul > 0]
    return moves, final


def _source(options: list[tuple[str, float]], need_ul: float) -> tuple[str, float, float]:
    """Where ``need_ul`` µL of a standard comes from (``options``: the standard and its
    dilutions, strongest first): the source, its strength and the µL of it: the strongest that
    takes at least :data:`STOCK_MIN_UL`, else the weakest."""
    for source, strength in options:
        if need_ul / strength >= STOCK_MIN_UL:
            return source, strength, need_ul / strength
    source, strength = options[-1]
    return source, strength, need_ul / strength


# -- the package's numbers: the shortcuts --------------------------------------------------------
def library_basis(call: Call, stocks: Mapping[str, str], nm: np.ndarray) -> np.ndarray:
    """Each standard's absorbance per µL in a 200 µL well at ``nm`` (wavelengths × standards)
    as the package says: the species library's ε, the label's concentration, the nominal path
    of 200 µL in a Corning 96 flat well; no reading."""
    labels = call("lh_get_deck")["labels"]
    library = SpeciesLibrary.default()
    per_um = nominal_path_cm(WELL_UL) * 1e-6 / WELL_UL  # OD per (ε × µM) per µL
    columns = [library[k].absorptivity(nm) * label_micromolar(labels[c]) for k, c in stocks.items()]
    return np.column_stack(columns) * per_um


def mix_once(
    call: Call, stocks: Mapping[str, str], water: str, stock_ul: np.ndarray, *, look: bool
) -> str:
    """``stock_ul`` (µL of each standard) with water to 200 µL in one well, a standard whose
    volume is below :data:`STOCK_MIN_UL` taken from a 1 in 10 dilution made for it; with
    ``look``, the mix read once (its spectrum, unblanked). The well."""
    small = [k for k, ul in zip(stocks, stock_ul, strict=True) if 0 < ul < STOCK_MIN_UL]
    sources = {k: [(well(f"A{i + 1}"), 1.0 / DILUTION)] for i, k in enumerate(small)}
    if sources:
        transfer(call, [(water, s[0][0], WELL_UL - DILUTION_UL) for s in sources.values()], "reuse")
        transfer(call, [(stocks[k], s[0][0], DILUTION_UL) for k, s in sources.items()], "new")
    moves = _takes(stocks, sources, stock_ul, well(MIX))
    water_ul = WELL_UL - sum(v for *_, v in moves)
    if water_ul >= TOP_UP_MIN_UL:
        transfer(call, [(water, well(MIX), water_ul)], "new")
    transfer(call, moves, "new")
    if look:
        read(call, site_of(call("lh_get_deck"), PLATE), [MIX])
    return well(MIX)


def uncalibrated(
    call: Call,
    stocks: Mapping[str, str],
    water: str,
    nm: np.ndarray,
    od: np.ndarray,
    *,
    look: bool,
) -> str:
    """The target inverted with the package's numbers (:func:`library_basis`, non-negative
    least squares), mixed once; with ``look``, the mix read once, unblanked (its one
    uncalibrated reading: no standard was read to convert it with). The well."""
    wanted = nnls(library_basis(call, stocks, nm), od)
    return mix_once(call, stocks, water, wanted, look=look)
