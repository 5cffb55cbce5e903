"""A volume of liquid and what is dissolved in it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from labtools.simulators.world.species import SpeciesLibrary

__all__ = ["Mixture"]

#: amounts are in nanomoles and volumes in microlitres, so nmol / µL is millimolar
_NMOL_PER_UL_TO_MOLAR = 1e-3


@dataclass
class Mixture:
    """``volume_ul`` of aqueous solution holding ``amounts`` (nmol) of each solute."""

    volume_ul: float = 0.0
    amounts: dict[str, float] = field(default_factory=dict)

    @classmethod
    def solution(cls, volume_ul: float, concentrations_molar: dict[str, float]) -> Mixture:
        """``volume_ul`` of a solution at the given molar concentrations."""
        amounts = {
            k: c / _NMOL_PER_UL_TO_MOLAR * volume_ul for k, c in concentrations_molar.items()
        }
        return cls(volume_ul, {k: a for k, a in amounts.items() if a > 0})

    def copy(self) -> Mixture:
        return Mixture(self.volume_ul, dict(self.amounts))

    def take(self, volume_ul: float) -> Mixture:
        """Remove and return a well-mixed portion (at most what there is)."""
        volume_ul = min(max(volume_ul, 0.0), self.volume_ul)
        if volume_ul <= 0.0:
            return Mixture()
        fraction = volume_ul / self.volume_ul
        portion = {k: a * fraction for k, a in self.amounts.items()}
        self.volume_ul -= volume_ul
        if self.volume_ul <= 1e-12:
            self.volume_ul = 0.0
            self.amounts = {}
        else:
            for k, a in portion.items():
                self.amounts[k] -= a
        return Mixture(volume_ul, portion)

    def add(self, other: Mixture) -> None:
        """Pour ``other`` in (it is not emptied; pass a portion from :meth:`take`)."""
        self.volume_ul += other.volume_ul
        for k, a in other.amounts.items():
            self.amounts[k] = self.amounts.get(k, 0.0) + a

    def concentration(self, species: str) -> float:
        """Molar concentration of ``species`` (0 in an empty container)."""
        if self.volume_ul <= 0.0:
            return 0.0
        return self.amounts.get(species, 0.0) / self.volume_ul * _NMOL_PER_UL_TO_MOLAR

    def concentrations(self) -> dict[str, float]:
        return {k: self.concentration(k) for k in self.amounts}

    def ph(self, library: SpeciesLibrary) -> float:
        """pH set by the buffers present (amount-weighted), 7.0 without one."""
        total = weighted = 0.0
        for key, amount in self.amounts.items():
            species = library[key]
            if species.ph is not None:
                total += amount
                weighted += amount * species.ph
        return weighted / total if total > 0 else 7.0

    def absorbance(
        self, nm: Iterable[float] | np.ndarray, path_cm: float, library: SpeciesLibrary
    ) -> np.ndarray:
        """True decadic absorbance over ``path_cm`` at each wavelength (solvent included)."""
        nm = np.asarray(nm, dtype=float)
        if self.volume_ul <= 0.0 or path_cm <= 0.0:
            return np.zeros(nm.shape)
        water = library["water"]
        total = water.absorptivity(nm) * (water.concentration_molar or 0.0)
        ph = self.ph(library)
        for key in self.amounts:
            species = library[key]
            if species.forms:
                total = total + species.absorptivity(nm, ph) * self.concentration(key)
        return total * path_cm

    def state(self) -> dict[str, object]:
        return {"volume_ul": self.volume_ul, "amounts_nmol": dict(self.amounts)}
