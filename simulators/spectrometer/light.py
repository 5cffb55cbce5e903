"""The reference lamp and the spectrometer's spectral response; constants and their sources in
``simulators/data/spectrometer.toml`` (``[light_path]``).

The lamp is a deuterium–halogen source: a tungsten-halogen filament (a 3000 K Planck photon
spectrum) plus a smooth deuterium UV continuum. The response folds grating efficiency, silicon
detector QE and fibre transmission into one broad curve with a soft UV edge near 235 nm, times a
window term that is exactly zero below 190 nm: nothing reaches the detector there (oxygen in the
air path, the fibre and grating's UV limit). Their product, normalised to 1 at its maximum over
180–1000 nm, gives the relative photoelectron rate per pixel.
"""

from __future__ import annotations

import numpy as np

from labtools.simulators.spectrometer.profiles import spectrometer_data

__all__ = ["relative_rate", "window"]

_H = 6.62607015e-34  # J s (SI, exact)
_C = 2.99792458e8  # m/s (SI, exact)
_K = 1.380649e-23  # J/K (SI, exact)

_PATH = spectrometer_data()["light_path"]
FILAMENT_K = float(_PATH["filament_k"])
DEUTERIUM_WEIGHT = float(_PATH["deuterium_weight"])
DEUTERIUM_DECAY_NM = float(_PATH["deuterium_decay_nm"])
RESPONSE_PEAK_NM = float(_PATH["response_peak_nm"])
RESPONSE_WIDTH_NM = float(_PATH["response_width_nm"])
UV_EDGE_NM = float(_PATH["response_uv_edge_nm"])
WINDOW_ZERO_NM = float(_PATH["window_zero_nm"])
WINDOW_FULL_NM = float(_PATH["window_full_nm"])


def _filament(nm: np.ndarray) -> np.ndarray:
    """Planck photon radiance (arbitrary units, 1 at 700 nm)."""

    def photons(lam_nm: np.ndarray) -> np.ndarray:
        lam = lam_nm * 1e-9
        return lam**-4 / np.expm1(_H * _C / (lam * _K * FILAMENT_K))

    return photons(nm) / photons(np.array(700.0))


def _deuterium(nm: np.ndarray) -> np.ndarray:
    rise = 1.0 / (1.0 + np.exp(-(nm - 195.0) / 5.0))
    return DEUTERIUM_WEIGHT * np.exp(-(nm - 200.0) / DEUTERIUM_DECAY_NM) * rise


def window(nm: np.ndarray) -> np.ndarray:
    """Transmission of the UV limit (0–1): 0 up to 190 nm, a smooth step, 1 from 205 nm."""
    x = np.clip(
        (np.asarray(nm, dtype=float) - WINDOW_ZERO_NM) / (WINDOW_FULL_NM - WINDOW_ZERO_NM), 0, 1
    )
    return x * x * (3.0 - 2.0 * x)


def _response(nm: np.ndarray) -> np.ndarray:
    edge = 1.0 / (1.0 + np.exp(-(nm - UV_EDGE_NM) / 12.0))
    return np.exp(-(((nm - RESPONSE_PEAK_NM) / RESPONSE_WIDTH_NM) ** 2)) * edge * window(nm)


def _unnormalised(nm: np.ndarray) -> np.ndarray:
    return (_filament(nm) + _deuterium(nm)) * _response(nm)


_NORM = float(_unnormalised(np.linspace(180.0, 1000.0, 8201)).max())


def relative_rate(nm: np.ndarray) -> np.ndarray:
    """Lamp × response at ``nm`` (wavelengths in nm), 1 at the brightest wavelength, 0 where
    the light path passes nothing."""
    return _unnormalised(np.asarray(nm, dtype=float)) / _NORM
