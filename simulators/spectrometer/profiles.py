"""Detector and optics constants of each emulated model, with their evidence tags.

[V] confirmed in the named source, [L] recalled literature/datasheet value, [A] assumption,
[C] computed from other rows (physics reference §7 for the Flame numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labtools.drivers.ocean.models import DeviceModel, get_model

__all__ = ["PROFILES", "DetectorProfile", "get_profile"]


@dataclass(frozen=True)
class DetectorProfile:
    """How one model turns light into counts."""

    model: DeviceModel
    #: photoelectrons at ADC full scale (the ADC saturates at ``model.full_scale`` counts)
    full_well_e: float
    #: read noise, electrons rms per pixel per scan
    read_noise_e: float
    #: electronic offset (counts) and dark current (electrons/s per pixel)
    offset_counts: float
    dark_rate_e_per_s: float
    #: photoelectrons/s at the brightest pixel with the lamp on and nothing in the light path
    peak_rate_e_per_s: float
    #: spectral resolution (FWHM of the slit/grating line shape), nm
    resolution_nm: float
    #: nominal wavelength calibration λ(p) = Σ c_i p^i, as stored in the device
    coefficients: tuple[float, ...]
    #: integration time at power-up, µs
    default_integration_us: int
    serial_prefix: str

    @property
    def gain(self) -> float:
        """ADC counts per photoelectron."""
        return self.model.full_scale / self.full_well_e


def _flame_read_noise(full_well: float, snr_shot: float, snr_total: float) -> float:
    """Read noise (e⁻) that brings the shot-limited S:N at full well down to ``snr_total`` [C]."""
    if abs(math.sqrt(full_well) - snr_shot) > 0.01 * snr_shot:
        raise ValueError("shot-limited S:N must be sqrt(full well)")
    return math.sqrt((full_well / snr_total) ** 2 - full_well)


PROFILES: dict[str, DetectorProfile] = {
    profile.model.name: profile
    for profile in (
        DetectorProfile(
            model=get_model("FLAME-S"),
            # ≈160,000 e⁻ well → shot-limited S:N ≈ 400; ≈275 with read noise
            # [V: Ocean Optics Flame manual 225-00000-000-11-201604, physics reference §7]
            full_well_e=160_000.0,
            # [C] ≈ 423 e⁻ (≈173 counts). Note: this puts single-scan dynamic range near 380:1,
            # below the ~1300:1 [L] datasheet figure; the [V] S:N figures win here.
            read_noise_e=_flame_read_noise(160_000.0, 400.0, 275.0),
            offset_counts=1500.0,  # [A]
            dark_rate_e_per_s=4000.0,  # [A] ≈ 1640 counts/s at room temperature
            # [A] a halogen/deuterium source through a 600 µm fibre: a water blank peaks near
            # 65 % of full scale at 100 ms
            peak_rate_e_per_s=1.05e6,
            resolution_nm=1.5,  # [A] within the 1.5–10 nm FWHM range of physics reference §7
            coefficients=(177.8, 0.3867, -1.71e-5, -2.0e-10),  # [A] ≈178–896 nm (grating #1-like)
            default_integration_us=10_000,  # [A]
            serial_prefix="FLMS",
        ),
        DetectorProfile(
            model=get_model("STS"),
            full_well_e=62_500.0,  # [A]
            read_noise_e=45.0,  # [A]
            offset_counts=400.0,  # [A]
            dark_rate_e_per_s=1500.0,  # [A]
            peak_rate_e_per_s=4.0e5,  # [A]
            resolution_nm=1.5,  # [A]
            coefficients=(337.0, 0.4631, -1.2e-5),  # [A] ≈337–798 nm (STS-VIS-like)
            default_integration_us=10_000,  # [A]
            serial_prefix="S",
        ),
        DetectorProfile(
            model=get_model("ST"),
            full_well_e=50_000.0,  # [A]
            read_noise_e=40.0,  # [A]
            offset_counts=400.0,  # [A]
            dark_rate_e_per_s=1500.0,  # [A]
            peak_rate_e_per_s=3.0e5,  # [A]
            resolution_nm=2.0,  # [A]
            coefficients=(345.0, 0.318, -5.0e-6),  # [A] ≈345–815 nm (ST-VIS-like)
            default_integration_us=10_000,  # [A]
            serial_prefix="ST",
        ),
    )
}


def get_profile(model: str) -> DetectorProfile:
    """The profile of ``model`` (case-insensitive)."""
    return PROFILES[get_model(model).name]
