"""The true contents of the wells being read, as arrays, and their absorption coefficients.

Follows :meth:`labtools.simulators.world.Mixture.absorbance` (water's own absorption plus every
species that has absorbing forms, indicators mixed by their base fraction at the well's buffer
pH) but for many wells and wavelengths at once, with ε(λ) cached per species, form and wavelength
(and dropped when a species in the world's library is replaced).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from labtools.simulators.world import SpeciesLibrary, World
from labtools.simulators.world.species import LIBRARY_C, Form

__all__ = ["Absorptivity", "WellContents", "gather"]

_NMOL_PER_UL_TO_MOLAR = 1e-3


@dataclass(frozen=True)
class WellContents:
    """Contents of ``n`` wells: volume (µL), pH, and amounts of ``species`` (columns)."""

    volume_ul: np.ndarray
    ph: np.ndarray
    species: tuple[str, ...]
    nmol: np.ndarray

    @property
    def molar(self) -> np.ndarray:
        """Concentrations (M), shape (n, species); 0 in empty wells."""
        with np.errstate(divide="ignore", invalid="ignore"):
            c = self.nmol / self.volume_ul[:, None] * _NMOL_PER_UL_TO_MOLAR
        return np.where(self.volume_ul[:, None] > 0, c, 0.0)


def gather(world: World, keys: Sequence[str], buffer_ph: dict[str, float | None]) -> WellContents:
    """Read the true contents of the world containers ``keys``.

    ``buffer_ph``: each species' buffer pH (``None`` if not a buffer), refreshed here on every
    call (a world's library may change between episodes: see ``SpeciesLibrary.put``).
    A well's pH is the amount-weighted pH of its buffers, 7.0 without one (as ``Mixture.ph``).
    """
    contents = world.peek  # reading makes no entries for empty wells
    n = len(keys)
    volume = np.zeros(n)
    columns: dict[str, int] = {}
    entries: list[tuple[int, int, float]] = []
    for i, key in enumerate(keys):
        mixture = contents(key)
        if mixture.volume_ul > 0.0:
            volume[i] = mixture.volume_ul
            for name, amount in mixture.amounts.items():
                entries.append((i, columns.setdefault(name, len(columns)), amount))
    nmol = np.zeros((n, len(columns)))
    if entries:
        at_row, at_col, amounts = zip(*entries, strict=True)
        nmol[at_row, at_col] = amounts
    return WellContents(
        volume, _buffered_ph(nmol, tuple(columns), world, buffer_ph), tuple(columns), nmol
    )


def _buffered_ph(
    nmol: np.ndarray, species: tuple[str, ...], world: World, buffer_ph: dict[str, float | None]
) -> np.ndarray:
    for name in species:
        buffer_ph[name] = world.species[name].ph
    levels = [buffer_ph[name] for name in species]
    is_buffer = np.array([level is not None for level in levels], dtype=bool)
    ph = np.full(nmol.shape[0], 7.0)
    if is_buffer.any():
        amounts = nmol[:, is_buffer]
        total = amounts.sum(axis=1)
        weighted = amounts @ np.array([lv for lv in levels if lv is not None])
        np.divide(weighted, total, out=ph, where=total > 0)
    return ph


class Absorptivity:
    """ε(λ) of the library's species, cached per (species, form, wavelength).

    Each cached table remembers the :class:`~labtools.simulators.world.species.Form` it was computed
    from and is dropped when the library's entry is another (a species drawn per seed).
    """

    def __init__(self, library: SpeciesLibrary) -> None:
        self._library = library
        self._cache: dict[tuple[str, str], tuple[Form, dict[float, float]]] = {}

    def form(self, species: str, form: str, nm: np.ndarray) -> np.ndarray:
        """ε (M⁻¹ cm⁻¹) of one form of ``species`` at ``nm``."""
        current = self._library[species].forms[form]
        cached = self._cache.get((species, form))
        if cached is None or cached[0] is not current:
            cached = self._cache[(species, form)] = (current, {})
        table = cached[1]
        missing = [x for x in dict.fromkeys(nm.tolist()) if x not in table]
        if missing:
            values = current.absorptivity(np.asarray(missing))
            table.update(zip(missing, np.atleast_1d(values).tolist(), strict=True))
        return np.fromiter((table[x] for x in nm.tolist()), dtype=float, count=nm.size)

    def species(self, key: str, nm: np.ndarray, ph: np.ndarray) -> np.ndarray:
        """Apparent ε of ``key`` in each well (rows: ``ph``) at each wavelength (columns)."""
        species = self._library[key]
        if "default" in species.forms:
            return np.broadcast_to(self.form(key, "default", nm), (ph.size, nm.size))
        base = 1.0 / (1.0 + 10.0 ** (species.pka - ph))
        acid_eps, base_eps = self.form(key, "acid", nm), self.form(key, "base", nm)
        return (1.0 - base)[:, None] * acid_eps[None, :] + base[:, None] * base_eps[None, :]

    def alpha(
        self, contents: WellContents, nm: np.ndarray, celsius: float = LIBRARY_C
    ) -> np.ndarray:
        """Absorption coefficient Σ ε c (cm⁻¹) per well and wavelength, water included, at
        ``celsius`` (the plate's temperature: a species with a temperature table follows it)."""
        water = self._library["water"]
        strength = (water.concentration_molar or 0.0) * water.temperature_factor(celsius)
        solvent = self.form("water", "default", nm) * strength
        filled = (contents.volume_ul > 0).astype(float)
        total = filled[:, None] * solvent[None, :]
        molar = contents.molar
        for column, key in enumerate(contents.species):
            species = self._library[key]
            if not species.forms:
                continue
            eps = self.species(key, nm, contents.ph) * species.temperature_factor(celsius)
            total = total + molar[:, column, None] * eps
        return total
