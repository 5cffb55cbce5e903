"""Detector and optics constants of each emulated model, read from
``simulators/data/spectrometer.toml`` (every number there carries its evidence tag and source).

A model is given by what a user measures in counts — single-scan dark noise, S:N at full
signal, offset, dark and lamp rates — and the detector's gain and well follow from them [C]:
``gain = ((S_max / snr)² − dark_noise²) / S_max`` counts per photoelectron, ``S_max = full scale −
offset`` (the derivation, worked through for the Flame-S, heads the data file).
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from labtools.drivers.ocean.models import DeviceModel, get_model
from labtools.simulators.profile import Parameter
from labtools.simulators.published import DETECTOR_FIELDS, detector_key

__all__ = [
    "PROFILES",
    "DetectorProfile",
    "ProfileError",
    "detector_of",
    "get_profile",
    "spectrometer_data",
]


class ProfileError(ValueError):
    """A model's numbers in the data file cannot describe a detector."""


@dataclass(frozen=True)
class DetectorProfile:
    """How one model turns light into counts (all rates per pixel)."""

    model: DeviceModel
    #: RMS of a single dark scan at short integration (read noise), counts
    dark_noise_counts: float
    #: single-scan S:N at the largest net signal (full scale − offset)
    snr_full_signal: float
    #: electronic offset (counts) and dark-current growth (counts/s)
    offset_counts: float
    dark_counts_per_s: float
    #: brightest pixel with the lamp on and a water blank in the holder, counts/s
    peak_counts_per_s: float
    #: spectral resolution (FWHM of the slit/grating line shape), nm
    resolution_nm: float
    #: nominal wavelength calibration λ(p) = Σ c_i p^i, as stored in the device
    coefficients: tuple[float, ...]
    #: integration time at power-up, µs
    default_integration_us: int
    serial_prefix: str

    def __post_init__(self) -> None:
        if not 0 < self.offset_counts < self.model.full_scale:
            raise ProfileError(f"{self.model.name}: offset outside the ADC range")
        if not 0 < self.dark_noise_counts < self.max_signal_counts / self.snr_full_signal:
            raise ProfileError(
                f"{self.model.name}: the dark noise must be positive and below the noise at "
                "full signal (else there is no room for shot noise)"
            )

    @property
    def max_signal_counts(self) -> float:
        """The largest net signal before the ADC clips: full scale − offset [C]."""
        return self.model.full_scale - self.offset_counts

    @property
    def gain(self) -> float:
        """ADC counts per photoelectron: shot noise fills what read noise leaves of the noise
        at full signal [C]."""
        s_max = self.max_signal_counts
        return ((s_max / self.snr_full_signal) ** 2 - self.dark_noise_counts**2) / s_max

    @property
    def full_well_e(self) -> float:
        """Photoelectrons at the largest net signal [C]."""
        return self.max_signal_counts / self.gain

    @property
    def read_noise_e(self) -> float:
        """Read noise, electrons RMS per pixel per scan [C]."""
        return self.dark_noise_counts / self.gain

    @property
    def dark_rate_e_per_s(self) -> float:
        """Dark current, electrons/s [C]."""
        return self.dark_counts_per_s / self.gain

    @property
    def peak_rate_e_per_s(self) -> float:
        """Photoelectrons/s at the brightest pixel of a water blank [C]."""
        return self.peak_counts_per_s / self.gain

    @property
    def dynamic_range(self) -> float:
        """Single-acquisition dynamic range: largest signal over dark noise [C]."""
        return self.max_signal_counts / self.dark_noise_counts


@cache
def spectrometer_data() -> dict[str, Any]:
    """The parsed ``spectrometer.toml`` (shared; do not change it)."""
    text = resources.files("labtools.simulators").joinpath("data/spectrometer.toml")
    return tomllib.loads(text.read_text("utf-8"))


def _profile(name: str, row: dict[str, Any]) -> DetectorProfile:
    return DetectorProfile(
        model=get_model(name),
        dark_noise_counts=float(row["dark_noise_counts"]),
        snr_full_signal=float(row["snr_full_signal"]),
        offset_counts=float(row["offset_counts"]),
        dark_counts_per_s=float(row["dark_counts_per_s"]),
        peak_counts_per_s=float(row["peak_counts_per_s"]),
        resolution_nm=float(row["resolution_nm"]),
        coefficients=tuple(float(c) for c in row["coefficients"]),
        default_integration_us=int(row["default_integration_us"]),
        serial_prefix=str(row["serial_prefix"]),
    )


PROFILES: dict[str, DetectorProfile] = {
    name: _profile(name, row) for name, row in spectrometer_data()["models"].items()
}


def get_profile(model: str) -> DetectorProfile:
    """The profile of ``model`` (case-insensitive)."""
    return PROFILES[get_model(model).name]


def detector_of(profile: Mapping[str, Parameter], model: str) -> DetectorProfile:
    """``model``'s detector with the figures of the lab's ``profile``
    (``spectrometer.detector.<MODEL>.*``; the data file's where the profile has none)."""
    base = get_profile(model)
    given: dict[str, Any] = {
        name: profile[key].expected
        for field, (name, _) in DETECTOR_FIELDS.items()
        if (key := detector_key(base.model.name, field)) in profile
    }
    return dataclasses.replace(base, **given)
