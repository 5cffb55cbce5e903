"""Absorbance as a plate reader measures it (physics reference §4).

``A_true = α·L + A_plate + offset_well`` (the plate's plastic and the well's optical offset add
to the liquid's Beer–Lambert absorbance), then stray light caps the transmitted fraction,
``T_meas = (10^−A_true + s) / (1 + s)``, so readings saturate near ``−log10 s``; the reader's
systematic gain and zero errors apply, and shot noise ``σ_A = (0.434/SNR₀)·sqrt(10^A)`` grows
with the measured OD above a constant floor. A reading above the reader's stated range
(``ReaderConstants.od_range_max``) is no number: :func:`reported` turns it into NaN, the marker
PLR's BioTek backend gives a starred (out-of-range) value.

Stray light may rise towards the UV (:func:`stray_light`): ``s(λ) = s · (1 + (r − 1) ·
exp(−(λ − λ_uv)/L))`` above ``λ_uv`` and ``s · r`` below it, ``s`` the visible level, ``r``
the reader's UV ratio (1: flat, the published profile) [A; vendors state
stray light at 230 nm, and a Tecan Spark's readings plateau below it].
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.plate_reading.params import PlateTruth, ReaderConstants, ReaderTruth

__all__ = ["measured_absorbance", "reported", "stray_light"]

_LOG10_E = 0.4342944819032518


def measured_absorbance(
    true_od: np.ndarray,
    plate: PlateTruth,
    items: np.ndarray,
    reader: ReaderTruth,
    constants: ReaderConstants,
    rng: np.random.Generator,
    nm: np.ndarray | None = None,
) -> np.ndarray:
    """Readings (OD) for liquid absorbances ``true_od`` (wells × wavelengths ``nm``) of plate
    items ``items``; noise from ``rng`` (one normal draw per value)."""
    optical = true_od + (plate.plate_od + plate.well_offsets_od[items])[:, None]
    s = stray_light(reader, constants, nm)
    transmitted = (10.0 ** (-optical) + s) / (1.0 + s)
    reading = -np.log10(transmitted)
    reading = reading * (1.0 + reader.gain_error) + reader.zero_offset_od
    shot = (_LOG10_E / constants.snr0) ** 2 / transmitted
    sigma = np.sqrt(constants.od_noise_floor**2 + shot)
    return reading + sigma * rng.standard_normal(reading.shape)


def reported(reading: np.ndarray, constants: ReaderConstants) -> np.ndarray:
    """Readings as the reader sends them: NaN where above its stated range (over-range)."""
    return np.where(reading > constants.od_range_max, np.nan, reading)


def stray_light(
    reader: ReaderTruth, constants: ReaderConstants, nm: np.ndarray | None = None
) -> float | np.ndarray:
    """The stray-light fraction at each of ``nm`` (a row, one per wavelength): the reader's
    single ``stray_light`` where its UV ratio is 1 (or no wavelengths are given)."""
    ratio = reader.stray_light_uv_ratio
    if ratio == 1.0 or nm is None:
        return reader.stray_light
    length = constants.stray_light_uv_length_nm
    if not (math.isfinite(ratio) and ratio > 0.0 and math.isfinite(length) and length > 0.0):
        raise ValueError(
            f"stray light's UV ratio ({ratio}) and length ({length} nm) must be positive"
        )
    above = np.maximum(np.asarray(nm, dtype=float) - constants.stray_light_uv_wavelength_nm, 0.0)
    return reader.stray_light * (1.0 + (ratio - 1.0) * np.exp(-above / length))[None, :]
