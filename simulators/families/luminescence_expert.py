"""The ``luminescence`` family's expert: an ATP standard curve, blanks and leak probes in the
samples' own plate, read until the faintest sample's counts suffice.

1. **Wells**: the ATP standard at :data:`STANDARD_UL` µL in the diluent (200 µL), each level in
   two wells of rows E and G (every other column: no standard is another's neighbour, none
   a sample's); four diluent blanks away from everything (:data:`BLANKS`); two diluent
   probes beside the control, one at an edge and one at a diagonal, that no sample touches.
2. **Reads**: the plate read once (a survey), then again until the faintest sample's own light
   is counted to :data:`TARGET` (Poisson: a 1 s read of a well reading R counts/s has variance
   R), within the calls the budget leaves; every read is averaged.
3. **Light**: the dark rate is the blanks' mean; the control's leak per edge and per diagonal
   neighbour the probes' net over the control's net. Each well's own light is its net less
   the leak from each read neighbour's net. The counts per pmol are the standards' own light
   over their pmol (the label times the volume); each sample's pmol its own light over that.
4. **Uncertainty**: counting (the sample's, the blanks', the probes' through the leak), the
   standards' scatter, the label (1 %) and the pipetting (:data:`PIPETTING_SD`), in
   quadrature, relative.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.demo.labels import label_micromolar
from labtools.simulators.families.luminescence_parts import SAMPLE_UL, neighbours
from labtools.simulators.families.protocol import PLATE, transfer, well
from labtools.simulators.tasks.scripting import Call, site_of

__all__ = ["luminescence", "read_once"]

#: the standard's volumes (µL of the 1 µM label: pmol), each in two wells [A: a decade of
#: light, 2e5-2e6 counts/s nominal, each delivered by the smallest tip that holds it]
STANDARD_UL = (2.0, 5.0, 10.0, 20.0)
STANDARD_WELLS = (("E2", "G2"), ("E4", "G4"), ("E6", "G6"), ("E8", "G8"))
#: the diluent blanks, far from every light [A]
BLANKS = ("A6", "A8", "A10", "E10")
#: the faintest sample's own light counted to this (relative, 1 sd) [A]
TARGET = 0.02
#: calls kept back from the budget for the deck, transfers, plate moves and submission [A]
RESERVE = 12
#: the most reads made [A]
MOST_READS = 40
#: a delivery's systematic error (1 sd, relative) [A: ISO 8655-2's ±1.2 % at 10 µL as 2 sd]
PIPETTING_SD = 0.006
#: the standard's label (1 sd, relative) [A: the family's certified standards, ±1 %]
LABEL_SD = 0.01


def read_once(call: Call, samples: list[str]) -> list[float]:
    """The samples' counts per second from one read of the plate, in order."""
    names = [s.partition(":")[2] for s in samples]
    call("lh_move_plate", plate=PLATE, destination="reader")
    data = call("reader_read_luminescence", plate=PLATE, wells=names)
    return [float(data["values"].get(w, 0.0)) for w in names]


def _probes(hot: str, samples: list[str]) -> tuple[str, str]:
    """An edge and a diagonal neighbour of ``hot`` that neither is nor touches a sample."""
    touched = set(samples)
    for s in samples:
        edges, corners = neighbours(s)
        touched |= set(edges) | set(corners)
    edges, corners = neighbours(hot)
    edge = next(w for w in edges if w not in touched)
    corner = next(w for w in corners if w not in touched)
    return edge, corner


def luminescence(
    call: Call, *, samples: list[str], hot: str, standard: str, water: str, calls: int
) -> tuple[list[float], list[float]]:
    """Each sample's ATP (nM in its well) and its standard uncertainty, through ``call``
    only; ``calls`` is the budget's."""
    deck = call("lh_get_deck")
    home = site_of(deck, PLATE)
    std_um = label_micromolar(deck["labels"][standard])
    sample_names = [s.partition(":")[2] for s in samples]
    hot_name = hot.partition(":")[2]
    edge_probe, corner_probe = _probes(hot_name, sample_names)
    probes = [edge_probe, corner_probe]

    # 1. the wells
    volume = {w: v for v, pair in zip(STANDARD_UL, STANDARD_WELLS, strict=True) for w in pair}
    moves = [(water, well(w), SAMPLE_UL - v) for w, v in volume.items()]
    moves += [(water, well(w), SAMPLE_UL) for w in (*BLANKS, *probes)]
    transfer(call, moves, "reuse")
    transfer(call, [(standard, well(w), v) for w, v in volume.items()], "per_source")
    used = 3 + len({_rack(v) for v in volume.values()})  # deck, transfers, the move in

    # 2. the reads: a survey, then as many as the faintest sample needs
    wells = [*sample_names, hot_name, *volume, *BLANKS, *probes]
    call("lh_move_plate", plate=PLATE, destination="reader")
    sums = dict.fromkeys(wells, 0.0)
    reads = 0

    def read() -> None:
        nonlocal reads
        data = call("reader_read_luminescence", plate=PLATE, wells=wells)
        for w in wells:
            sums[w] += float(data["values"].get(w, math.inf))
        reads += 1

    read()
    rates = _light(sums, reads, sample_names, hot_name, edge_probe, corner_probe, wells)
    needed = 3
    for name in sample_names:
        alone = max(rates["own"][name], 1.0)
        needed = max(needed, math.ceil(rates["total"][name] / (TARGET * alone) ** 2))
    room = calls - used - RESERVE
    for _ in range(max(0, min(needed, MOST_READS, room) - reads)):
        read()
    call("lh_move_plate", plate=PLATE, destination=home)

    # 3. the light
    rates = _light(sums, reads, sample_names, hot_name, edge_probe, corner_probe, wells)
    own, var = rates["own"], rates["var"]
    per_pmol = np.array([own[w] / (std_um * v) for w, v in volume.items()])
    slope = float(np.mean(per_pmol))
    slope_rel = float(np.std(per_pmol, ddof=1)) / math.sqrt(len(per_pmol)) / slope

    # 4. each sample, and its uncertainty
    estimates, sds = [], []
    for name in sample_names:
        light, spread = own[name], math.sqrt(var[name])
        if light <= spread:  # not above its own noise: a one-sd upper figure, ± itself
            light, counting = max(spread, 1e-3), 1.0
        else:
            counting = spread / light
        relative = math.sqrt(counting**2 + slope_rel**2 + LABEL_SD**2 + PIPETTING_SD**2)
        estimate = light / slope * 1000.0 / SAMPLE_UL
        estimates.append(estimate)
        sds.append(estimate * relative)
    return estimates, sds


def _rack(volume: float) -> str:
    return "small" if volume <= 10.0 else "middle"


def _light(
    sums: dict[str, float],
    reads: int,
    samples: list[str],
    hot: str,
    edge_probe: str,
    corner_probe: str,
    wells: list[str],
) -> dict[str, dict[str, float]]:
    """Each read well's own light (counts/s, dark and leaks off), its variance, and its total
    reading."""
    mean = {w: sums[w] / reads for w in wells}
    dark = float(np.mean([mean[w] for w in BLANKS]))
    dark_var = dark / (reads * len(BLANKS))
    net = {w: mean[w] - dark for w in wells}
    hot_net = max(net[hot], 1.0)
    f_edge = max(net[edge_probe], 0.0) / hot_net
    f_corner = max(net[corner_probe], 0.0) / hot_net
    f_edge_var = (mean[edge_probe] / reads + dark_var) / hot_net**2
    f_corner_var = (mean[corner_probe] / reads + dark_var) / hot_net**2
    read_set = set(wells)
    own: dict[str, float] = {}
    var: dict[str, float] = {}
    for w in wells:
        edges, corners = neighbours(w)
        edge_sum = sum(max(net[n], 0.0) for n in edges if n in read_set)
        corner_sum = sum(max(net[n], 0.0) for n in corners if n in read_set)
        own[w] = net[w] - f_edge * edge_sum - f_corner * corner_sum
        var[w] = (
            max(mean[w], 0.0) / reads
            + dark_var
            + edge_sum**2 * f_edge_var
            + corner_sum**2 * f_corner_var
        )
    return {"own": own, "var": var, "total": {w: max(mean[w], 1.0) for w in wells}}
