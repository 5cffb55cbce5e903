"""The reference lamp and the spectrometer's spectral response. All shapes are [A].

The lamp is a deuterium–halogen source: a tungsten-halogen filament (a 3000 K Planck photon
spectrum) plus a smooth deuterium UV continuum. The deuterium emission lines (486, 656 nm) are
left out. The response folds grating efficiency, silicon detector QE and fibre transmission into
one broad curve with a UV cut-off near 235 nm. Their product, normalised to 1 at its maximum
over 180–1000 nm, gives the relative photoelectron rate per pixel.
"""

from __future__ import annotations

import numpy as np

__all__ = ["relative_rate"]

_H = 6.62607015e-34  # J s
_C = 2.99792458e8  # m/s
_K = 1.380649e-23  # J/K

FILAMENT_K = 3000.0  # [A] halogen colour temperature
DEUTERIUM_WEIGHT = 2.0  # [A] continuum at 200 nm relative to the filament at 700 nm
DEUTERIUM_DECAY_NM = 90.0  # [A]
RESPONSE_PEAK_NM = 500.0  # [A]
RESPONSE_WIDTH_NM = 250.0  # [A]
UV_CUTOFF_NM = 235.0  # [A] fibre/window transmission edge


def _filament(nm: np.ndarray) -> np.ndarray:
    """Planck photon radiance (arbitrary units, 1 at 700 nm)."""

    def photons(lam_nm: np.ndarray) -> np.ndarray:
        lam = lam_nm * 1e-9
        return lam**-4 / np.expm1(_H * _C / (lam * _K * FILAMENT_K))

    return photons(nm) / photons(np.array(700.0))


def _deuterium(nm: np.ndarray) -> np.ndarray:
    rise = 1.0 / (1.0 + np.exp(-(nm - 195.0) / 5.0))
    return DEUTERIUM_WEIGHT * np.exp(-(nm - 200.0) / DEUTERIUM_DECAY_NM) * rise


def _response(nm: np.ndarray) -> np.ndarray:
    cutoff = 1.0 / (1.0 + np.exp(-(nm - UV_CUTOFF_NM) / 12.0))
    return np.exp(-(((nm - RESPONSE_PEAK_NM) / RESPONSE_WIDTH_NM) ** 2)) * cutoff


def _unnormalised(nm: np.ndarray) -> np.ndarray:
    return (_filament(nm) + _deuterium(nm)) * _response(nm)


_NORM = float(_unnormalised(np.linspace(180.0, 1000.0, 8201)).max())


def relative_rate(nm: np.ndarray) -> np.ndarray:
    """Lamp × response at ``nm`` (wavelengths in nm), 1 at the brightest wavelength."""
    return _unnormalised(np.asarray(nm, dtype=float)) / _NORM
