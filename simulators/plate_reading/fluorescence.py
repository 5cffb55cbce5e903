"""Top-read fluorescence: focal-volume geometry and the inner filter (physics reference §5).

Excitation enters and emission leaves through the liquid surface, so light from depth ``d``
below it is attenuated by ``10^−(α_ex + α_em)·d``, α the absorption coefficients of *all*
absorbers. The top optics collect best at their focal point: along the well axis the
collection weight is ``w(z) = 1 / (1 + ((z − f)/σ)²)`` for height ``z`` above the inner bottom,
focal point ``f`` (the read's focal height less the well's bottom, see :mod:`.layout`) and
half-width σ [A]. Over a liquid column of height ``L``::

    F = k · Σ_f Φ_f · ε_f(ex) · c_f · E_f(em) · I,    I = ∫₀ᴸ w(z) · 10^−(α_ex + α_em)(L − z) dz

``E_f(em)`` is the fluorophore's relative emission at the emission wavelength (1 at its
maximum) [A: a narrow emission band-pass]. At low absorbance ``I = ∫ w`` and F is linear in c;
as absorbance grows emission comes from ever nearer the surface, where ``w`` is smaller when
the focus lies deeper, so F rises, peaks and falls to ``k Φ ε_ex c w(L) / (α ln 10)``: the
rollover of concentrated fluorophores, stronger the deeper the focus [C]. ``k`` is fixed by
the fluorescein calibration point (``ReaderConstants``). A constant plate and buffer
autofluorescence floor adds to every well; the PMT gain scales the light by
``(gain / gain_reference)^k`` (a power law, k ≈ 7 [C: a Tecan Spark's gain series, fpcountr's
conversion factors]); readings above the detector ceiling come back as ``inf`` (reported as
saturated, like PLR's Molecular Devices ``#SAT``). Not modelled:
refraction at the surface, the meniscus's lensing, self-quenching (fluorescein quenches itself
at millimolar concentrations [L], where the inner filter already dominates a 96-well column).
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.plate_reading.composition import Absorptivity, WellContents
from labtools.simulators.plate_reading.params import ReaderConstants, ReaderTruth
from labtools.simulators.world import SpeciesLibrary

__all__ = [
    "FLUORESCEIN_REFERENCE",
    "collected_cm",
    "emitted_rfu",
    "gain_of",
    "inner_filter",
    "measured_rfu",
]

_LN10 = math.log(10.0)

#: the calibration point of ``ReaderConstants.rfu_per_nm_fluorescein``: fluorescein's ε at
#: 490 nm (M⁻¹ cm⁻¹) and quantum yield (the species data) [C]
FLUORESCEIN_REFERENCE = (76_900.0, 0.93)

#: Gauss–Legendre nodes for the collection integral (exact to ~1e-6 for σ ≥ 0.5 mm) [C]
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)


def inner_filter(x: np.ndarray) -> np.ndarray:
    """``g(x) = (1 − 10^−x) / (x ln 10)``, with g(0) = 1."""
    y = np.asarray(x, dtype=float) * _LN10
    with np.errstate(divide="ignore", invalid="ignore"):
        g = -np.expm1(-y) / y
    return np.where(y > 1e-12, g, 1.0)


def collected_cm(
    alpha_per_cm: np.ndarray, column_mm: np.ndarray, focus_mm: np.ndarray, half_width_mm: float
) -> np.ndarray:
    """The collection integral ``I`` (cm) of each well: absorption coefficient α_ex + α_em
    (cm⁻¹), liquid column (mm) and focal point above the inner bottom (mm).

    Substituting ``u = 1 − e^(−k d)`` (``k = α ln 10``, ``d`` the depth below the surface) makes
    the attenuation uniform in ``u``, so one quadrature rule serves every absorbance."""
    k = np.maximum(np.asarray(alpha_per_cm, dtype=float) * _LN10 / 10.0, 1e-9)[:, None]  # /mm
    column = np.asarray(column_mm, dtype=float)[:, None]
    focus = np.asarray(focus_mm, dtype=float)[:, None]
    top = -np.expm1(-k * column)
    u = top * (_NODES[None, :] + 1.0) / 2.0
    depth = -np.log1p(-u) / k
    weight = 1.0 / (1.0 + ((column - depth - focus) / half_width_mm) ** 2)
    integral_mm = (top[:, 0] / 2.0) * (weight @ _WEIGHTS) / k[:, 0]
    return np.where(column[:, 0] > 0.0, integral_mm / 10.0, 0.0)


def reference_collected_cm(constants: ReaderConstants) -> float:
    """``I`` (cm) of the calibration geometry at vanishing absorbance (closed form)."""
    sigma = constants.focal_half_width_mm
    column, focus = constants.reference_column_mm, constants.reference_focus_mm
    return sigma * (math.atan((column - focus) / sigma) + math.atan(focus / sigma)) / 10.0


def emitted_rfu(
    contents: WellContents,
    column_mm: np.ndarray,
    focus_mm: np.ndarray,
    excitation_nm: float,
    emission_nm: float,
    eps: Absorptivity,
    library: SpeciesLibrary,
    gain: float,
    half_width_mm: float,
) -> np.ndarray:
    """Noise-free fluorescence (RFU) of each well, focal geometry and inner filter included,
    no background. ``column_mm``: liquid at the well centre; ``focus_mm``: the focal point
    above each well's inner bottom."""
    ex, em = np.array([float(excitation_nm)]), np.array([float(emission_nm)])
    alpha = eps.alpha(contents, ex)[:, 0] + eps.alpha(contents, em)[:, 0]
    brightness = np.zeros(contents.volume_ul.size)
    molar = contents.molar
    for column, key in enumerate(contents.species):
        species = library[key]
        if species.fluorescence is None or not species.forms:
            continue
        absorbing = eps.species(key, ex, contents.ph)[:, 0]
        yield_at_em = species.fluorescence.quantum_yield * species.fluorescence.emission(
            float(emission_nm)
        )
        brightness += absorbing * molar[:, column] * yield_at_em
    return gain * brightness * collected_cm(alpha, column_mm, focus_mm, half_width_mm)


def measured_rfu(
    emitted: np.ndarray,
    reader: ReaderTruth,
    constants: ReaderConstants,
    rng: np.random.Generator,
    gain_factor: float = 1.0,
) -> np.ndarray:
    """Add the autofluorescence floor and noise; ``inf`` where the detector saturates.
    ``gain_factor``: the PMT gain's factor on the light (signal and floor; the electronic
    noise floor and the ceiling stay in RFU)."""
    signal = emitted + reader.fluorescence_background
    if gain_factor != 1.0:
        signal = signal * gain_factor
    sigma = np.sqrt(constants.rfu_noise_floor**2 + (constants.rfu_cv * signal) ** 2)
    reading = signal + sigma * rng.standard_normal(signal.shape)
    return np.where(reading > constants.rfu_ceiling, np.inf, reading)


def gain_of(constants: ReaderConstants, reader: ReaderTruth) -> float:
    """RFU per (M⁻¹ cm⁻¹ · M · cm · Φ), from the fluorescein calibration point."""
    epsilon, quantum_yield = FLUORESCEIN_REFERENCE
    path = reference_collected_cm(constants)
    per_unit = constants.rfu_per_nm_fluorescein / (epsilon * 1e-9 * quantum_yield * path)
    return per_unit * reader.fluorescence_scale
