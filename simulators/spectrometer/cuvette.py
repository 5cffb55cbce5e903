"""The cuvette in the holder: what fraction of the beam its contents let through.

A standard 10 mm fused-silica cuvette. The beam crosses it at a fixed height; liquid fills it from
the bottom, 100 µL per mm. Where the liquid is below the beam, the beam passes through air — no
Beer–Lambert absorbance, but stronger reflections at the inner silica–air faces than at
silica–water faces (Fresnel at normal incidence), so an empty cuvette reads ≈0.03 OD against a
water blank. A beam only partly under the liquid surface mixes both paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labtools.simulators.world import Mixture, SpeciesLibrary

__all__ = ["Cuvette"]


def _fresnel(n1: float, n2: float) -> float:
    """Reflectance of one interface at normal incidence."""
    return ((n1 - n2) / (n1 + n2)) ** 2


@dataclass(frozen=True)
class Cuvette:
    """Geometry and optics of the cuvette."""

    path_cm: float = 1.0
    #: liquid volume per mm of height (10 mm × 10 mm inside) [A: standard macro cuvette]
    ul_per_mm: float = 100.0
    #: beam centre height and diameter, mm [A]; the liquid covers the beam from 700 µL
    beam_centre_mm: float = 6.25
    beam_diameter_mm: float = 1.5
    n_silica: float = 1.46  # [L] fused silica, visible
    n_water: float = 1.333  # [L]
    n_air: float = 1.0

    @property
    def min_fill_ul(self) -> float:
        """Volume at which the liquid covers the whole beam."""
        return (self.beam_centre_mm + self.beam_diameter_mm / 2) * self.ul_per_mm

    def beam_fraction_in_liquid(self, volume_ul: float) -> float:
        """Share of the beam (0–1) passing through liquid at ``volume_ul``; a linear edge [A]."""
        height = volume_ul / self.ul_per_mm
        bottom = self.beam_centre_mm - self.beam_diameter_mm / 2
        return float(np.clip((height - bottom) / self.beam_diameter_mm, 0.0, 1.0))

    def transmission(
        self, contents: Mixture, nm: np.ndarray, species: SpeciesLibrary
    ) -> np.ndarray:
        """Transmitted fraction at ``nm`` through the two inner faces and what lies between.

        The two outer (air–silica) faces are the same for every filling and belong to the lamp
        throughput."""
        inner_liquid = (1.0 - _fresnel(self.n_silica, self.n_water)) ** 2
        inner_air = (1.0 - _fresnel(self.n_silica, self.n_air)) ** 2
        through_air = np.full(np.shape(nm), inner_air)
        fraction = self.beam_fraction_in_liquid(contents.volume_ul)
        if fraction <= 0.0:
            return through_air
        absorbance = contents.absorbance(nm, self.path_cm, species)
        through_liquid = inner_liquid * 10.0 ** (-absorbance)
        return fraction * through_liquid + (1.0 - fraction) * through_air
