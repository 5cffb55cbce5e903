"""Top-read fluorescence with the inner-filter effect (physics reference §5).

Excitation enters and emission leaves through the liquid surface; light from depth ``z`` is
attenuated by ``10^−(α_ex + α_em)·z`` with α the absorption coefficients of *all* absorbers.
Integrating over the liquid column ``0..L``::

    F = k · Σ_f Φ_f · ε_f(ex) · c_f · E_f(em) · L · g(x),   g(x) = (1 − 10^−x) / (x ln 10),
    x = (α_ex + α_em) · L

``E_f(em)`` is the fluorophore's relative emission at the emission wavelength (1 at its
maximum) [A: a narrow emission band-pass]; ``g → 1`` at low absorbance (F linear in c) and falls
as absorbance grows (the inner filter). ``k`` is the instrument's fixed gain. A constant plate and
buffer autofluorescence floor adds to every well; values above the detector ceiling come back as
``inf`` (reported as saturated, like PLR's Molecular Devices ``#SAT``).
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.plate_reading.composition import Absorptivity, WellContents
from labtools.simulators.plate_reading.params import ReaderConstants, ReaderTruth
from labtools.simulators.world import SpeciesLibrary

__all__ = ["FLUORESCEIN_REFERENCE", "emitted_rfu", "gain_of", "inner_filter", "measured_rfu"]

_LN10 = math.log(10.0)

#: the calibration point of ``ReaderConstants.rfu_per_nm_fluorescein``: fluorescein's ε at
#: 490 nm (M⁻¹ cm⁻¹), quantum yield, and the 200 µL Corning 96 flat column (cm) [C]
FLUORESCEIN_REFERENCE = (76_900.0, 0.93, 200.0 / (math.pi * 3.43**2) / 10.0)


def inner_filter(x: np.ndarray) -> np.ndarray:
    """``g(x) = (1 − 10^−x) / (x ln 10)``, with g(0) = 1."""
    y = np.asarray(x, dtype=float) * _LN10
    with np.errstate(divide="ignore", invalid="ignore"):
        g = -np.expm1(-y) / y
    return np.where(y > 1e-12, g, 1.0)


def emitted_rfu(
    contents: WellContents,
    path_cm: np.ndarray,
    excitation_nm: float,
    emission_nm: float,
    eps: Absorptivity,
    library: SpeciesLibrary,
    gain: float,
) -> np.ndarray:
    """Noise-free fluorescence (RFU) of each well, inner filter included, no background."""
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
    return gain * brightness * path_cm * inner_filter(alpha * path_cm)


def measured_rfu(
    emitted: np.ndarray,
    reader: ReaderTruth,
    constants: ReaderConstants,
    rng: np.random.Generator,
) -> np.ndarray:
    """Add the autofluorescence floor and noise; ``inf`` where the detector saturates."""
    signal = emitted + reader.fluorescence_background
    sigma = np.sqrt(constants.rfu_noise_floor**2 + (constants.rfu_cv * signal) ** 2)
    reading = signal + sigma * rng.standard_normal(signal.shape)
    return np.where(signal > constants.rfu_ceiling, np.inf, reading)


def gain_of(constants: ReaderConstants, reader: ReaderTruth) -> float:
    """RFU per (M⁻¹ cm⁻¹ · M · cm · Φ), from the fluorescein calibration point."""
    epsilon, quantum_yield, path = FLUORESCEIN_REFERENCE
    per_unit = constants.rfu_per_nm_fluorescein / (epsilon * 1e-9 * quantum_yield * path)
    return per_unit * reader.fluorescence_scale
