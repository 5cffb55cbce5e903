"""The spectrometer's dark fit: its 95 % intervals hold the emulated detector's constants."""

from __future__ import annotations

import pytest

from labtools.lab import Lab
from labtools.simulators.calibration.fit_spectrometer import fit_spectrometer
from labtools.simulators.calibration.protocol import spectrometer_run
from labtools.simulators.spectrometer.profiles import get_profile

SEEDS = (41, 42, 43, 44, 45, 46)


@pytest.fixture(scope="module")
def fits() -> list[dict]:
    out = []
    for seed in SEEDS:
        lab = Lab.virtual(seed)
        try:
            out.append(fit_spectrometer(spectrometer_run(lab)))
        finally:
            lab.close()
    return out


def test_intervals_hold_the_detector_constants(fits: list[dict]) -> None:
    """Seeds 41-46 (not used while the fit was written): 18 of 18 intervals hold."""
    profile = get_profile("FLAME-S")  # the virtual lab's spectrometer
    truth = {
        "spectrometer.detector.FLAME-S.offset": profile.offset_counts,
        "spectrometer.detector.FLAME-S.dark_rate": profile.dark_counts_per_s,
        "spectrometer.detector.FLAME-S.dark_noise": profile.dark_noise_counts,
    }
    held = 0
    for fit in fits:
        assert set(fit["parameters"]) == set(truth)
        for key, estimate in fit["parameters"].items():
            low, high = estimate["ci95"]
            held += low <= truth[key] <= high
            assert high - low < 0.1 * truth[key]  # within ±5 % of the constant
    assert held >= 17


def test_what_a_dark_series_cannot_see_is_said(fits: list[dict]) -> None:
    assert set(fits[0]["not_identified"]) == {
        "spectrometer.wavelength_offset",
        "spectrometer.wavelength_tilt",
        "spectrometer.stray_light_600nm",
    }
    gain = fits[0]["derived"]["gain_counts_per_electron"]
    low, high = gain["ci95"]
    assert low <= get_profile("FLAME-S").gain <= high
