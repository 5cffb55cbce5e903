"""The colour a liquid shows in transmitted daylight: its absorbance spectrum through CIE
illuminant D65 and the CIE 1931 2° observer, to sRGB.

For a transmittance T(λ) = 10^(−A(λ)) over 380–780 nm (5 nm steps), the tristimulus values are
X = Σ S(λ) x̄(λ) T(λ) / Σ S(λ) ȳ(λ) (and Y, Z alike), S the D65 relative power, so a clear
sample has Y = 1 and D65's own chromaticity, x = 0.3127, y = 0.3290 [V: CIE 015:2018, table
T.3]. XYZ goes to linear sRGB with the matrix of IEC 61966-2-1:1999 (D65 white), clipped to
0–1 (colours outside the sRGB gamut are clipped per channel), then through the sRGB transfer
function (linear below 0.0031308, 1.055·v^(1/2.4) − 0.055 above) [V: IEC 61966-2-1:1999, §5.2,
§5.3]. Tables: ``simulators/data/cie_1931_2deg_cmf.csv``, ``cie_d65.csv`` (the CIE's, CC BY-SA
4.0; sources in their headers).
"""

from __future__ import annotations

import functools
from importlib.resources import files

import numpy as np

__all__ = ["WAVELENGTHS_NM", "hex_colour", "srgb", "tristimulus"]

#: the wavelengths (nm) a spectrum is given at: 380–780 nm in 5 nm steps (81 values)
WAVELENGTHS_NM = np.arange(380.0, 781.0, 5.0)

#: XYZ → linear sRGB [V: IEC 61966-2-1:1999, §5.2, equation 5]
_XYZ_TO_SRGB = np.array(
    [
        [3.2406, -1.5372, -0.4986],
        [-0.9689, 1.8758, 0.0415],
        [0.0557, -0.2040, 1.0570],
    ]
)


def _table(name: str, columns: int) -> np.ndarray:
    text = files("labtools.simulators.data").joinpath(name).read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line and not line.startswith("#")][1:]
    table = np.array([[float(v) for v in row.split(",")] for row in rows])
    if table.shape != (WAVELENGTHS_NM.size, columns + 1) or np.any(table[:, 0] != WAVELENGTHS_NM):
        raise ValueError(f"{name}: expected 380-780 nm at 5 nm with {columns} value columns")
    return table[:, 1:]


@functools.cache
def _weights() -> np.ndarray:
    """S(λ)·(x̄, ȳ, z̄)(λ) normalised so that Σ S ȳ = 1: shape (81, 3)."""
    cmf = _table("cie_1931_2deg_cmf.csv", 3)
    d65 = _table("cie_d65.csv", 1)[:, 0]
    weights = d65[:, None] * cmf
    weights /= weights[:, 1].sum()
    return weights


def tristimulus(absorbance: np.ndarray) -> np.ndarray:
    """CIE XYZ (Y = 1 for a clear sample) of samples with decadic absorbance ``absorbance`` at
    :data:`WAVELENGTHS_NM` (shape ``(..., 81)``), in D65 light: shape ``(..., 3)``."""
    absorbance = np.asarray(absorbance, dtype=float)
    if absorbance.shape[-1:] != WAVELENGTHS_NM.shape:
        raise ValueError(f"absorbance needs {WAVELENGTHS_NM.size} values (380-780 nm, 5 nm)")
    transmittance = np.power(10.0, -np.clip(absorbance, 0.0, 50.0))
    result: np.ndarray = transmittance @ _weights()
    return result


def srgb(absorbance: np.ndarray) -> np.ndarray:
    """Gamma-encoded sRGB (0–1 per channel) of the transmitted colour: shape ``(..., 3)``."""
    linear = np.clip(tristimulus(absorbance) @ _XYZ_TO_SRGB.T, 0.0, 1.0)
    encoded: np.ndarray = np.where(
        linear <= 0.0031308, 12.92 * linear, 1.055 * np.power(linear, 1.0 / 2.4) - 0.055
    )
    return encoded


def hex_colour(rgb: np.ndarray) -> str:
    """``"#rrggbb"`` for one sRGB triple (0–1)."""
    r, g, b = (round(float(v) * 255.0) for v in np.clip(rgb, 0.0, 1.0))
    return f"#{r:02x}{g:02x}{b:02x}"
