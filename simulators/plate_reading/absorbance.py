"""Absorbance as a plate reader measures it (physics reference §4).

``A_true = α·L + A_plate + offset_well`` (the plate's plastic and the well's optical offset add
to the liquid's Beer–Lambert absorbance), then stray light caps the transmitted fraction,
``T_meas = (10^−A_true + s) / (1 + s)``, so readings saturate near ``−log10 s``; the reader's
systematic gain and zero errors apply, and shot noise ``σ_A = (0.434/SNR₀)·sqrt(10^A)`` grows
with the measured OD above a constant floor. A reading above the reader's stated range
(``ReaderConstants.od_range_max``) is no number: :func:`reported` turns it into NaN, the marker
PLR's BioTek backend gives a starred (out-of-range) value.
"""

from __future__ import annotations

import numpy as np

from labtools.simulators.plate_reading.params import PlateTruth, ReaderConstants, ReaderTruth

__all__ = ["measured_absorbance", "reported"]

_LOG10_E = 0.4342944819032518


def measured_absorbance(
    true_od: np.ndarray,
    plate: PlateTruth,
    items: np.ndarray,
    reader: ReaderTruth,
    constants: ReaderConstants,
    rng: np.random.Generator,
) -> np.ndarray:
    """Readings (OD) for liquid absorbances ``true_od`` (wells × wavelengths) of plate items
    ``items``; noise from ``rng`` (one normal draw per value)."""
    optical = true_od + (plate.plate_od + plate.well_offsets_od[items])[:, None]
    s = reader.stray_light
    transmitted = (10.0 ** (-optical) + s) / (1.0 + s)
    reading = -np.log10(transmitted)
    reading = reading * (1.0 + reader.gain_error) + reader.zero_offset_od
    shot = (_LOG10_E / constants.snr0) ** 2 / transmitted
    sigma = np.sqrt(constants.od_noise_floor**2 + shot)
    return reading + sigma * rng.standard_normal(reading.shape)


def reported(reading: np.ndarray, constants: ReaderConstants) -> np.ndarray:
    """Readings as the reader sends them: NaN where above its stated range (over-range)."""
    return np.where(reading > constants.od_range_max, np.nan, reading)
