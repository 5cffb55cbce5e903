"""Luminescence as photon counts per second, with cross-talk (physics reference §6).

Each well emits ``Σ photons_per_s_per_pmol · pmol`` of its luminescent species [species data].
Light from the eight neighbours leaks in through and above the walls: a 3×3 kernel with fraction
``f`` for edge neighbours and ``f · diagonal_ratio`` for diagonal ones [A; f 10⁻⁶–10⁻⁴ per
physics §6]. Counts in the integration time ``t`` are
``Poisson(η · (S + cross-talk) · t + dark · t)``, reported as counts per second (RLU).
Glow/flash decay is not modelled: the world does not record when reagent was added.
"""

from __future__ import annotations

import numpy as np

from labtools.simulators.plate_reading.composition import WellContents
from labtools.simulators.plate_reading.layout import PlateLayout
from labtools.simulators.plate_reading.params import ReaderConstants, ReaderTruth
from labtools.simulators.world import SpeciesLibrary

__all__ = ["emitted_photons", "measured_rlu", "with_crosstalk"]


def emitted_photons(contents: WellContents, library: SpeciesLibrary) -> np.ndarray:
    """Photons per second from each well (nmol → pmol × the species' yield)."""
    rate = np.zeros(contents.volume_ul.size)
    for column, key in enumerate(contents.species):
        luminescence = library[key].luminescence
        if luminescence:
            rate += contents.nmol[:, column] * 1e3 * luminescence["photons_per_s_per_pmol"]
    return rate


def with_crosstalk(
    source: np.ndarray, layout: PlateLayout, edge: float, diagonal: float
) -> np.ndarray:
    """Per-item light reaching each well's detector: its own plus its neighbours' leaks."""
    grid = np.zeros((layout.rows + 2, layout.cols + 2))
    grid[layout.row + 1, layout.col + 1] = source
    centre = grid[1:-1, 1:-1]
    edges = grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:]
    corners = grid[:-2, :-2] + grid[:-2, 2:] + grid[2:, :-2] + grid[2:, 2:]
    seen = centre + edge * edges + diagonal * corners
    return seen[layout.row, layout.col]


def measured_rlu(
    photons: np.ndarray,
    integration_s: float,
    reader: ReaderTruth,
    constants: ReaderConstants,
    rng: np.random.Generator,
) -> np.ndarray:
    """Counts per second for incident photon rates ``photons``."""
    mean_counts = constants.photon_detection_efficiency * photons + reader.dark_cps
    counts = rng.poisson(mean_counts * integration_s)
    return counts / integration_s
