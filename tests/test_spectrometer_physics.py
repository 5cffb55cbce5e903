"""CCD spectrometer physics against published numbers (physics reference §7, §8).

Everything goes through the real driver and the OBP bytes of the in-process emulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from labtools import Lab
from labtools.simulators.spectrometer import virtual_spectrometer
from labtools.simulators.spectrometer.optics import Optics
from labtools.simulators.spectrometer.profiles import get_profile
from labtools.simulators.world import Mixture, World

MS = "millisecond"
# ε = E1%1cm × M / 10 (EU Regulation 231/2012 E1% values, Na-salt molar masses)
EPSILON = {"tartrazine": 530 * 534.36 / 10, "brilliant_blue": 1630 * 792.85 / 10}
LAMBDA_MAX = {"tartrazine": 426.0, "brilliant_blue": 630.0}


def blank_lab(seed: int = 0, model: str = "FLAME-S") -> tuple[Lab, World]:
    world = World(seed)
    world.fill("cuvette", Mixture.solution(3000, {}))
    return Lab([virtual_spectrometer("spec", world, model)]), world


def call(lab: Lab, tool: str, **arguments: object) -> dict:
    result = lab.call(f"spec_{tool}", arguments)
    assert result.ok, result.error
    return result.data


def referenced(lab: Lab, integration_ms: float = 100, scans: int = 30) -> None:
    call(lab, "set_integration_time", time={"value": integration_ms, "unit": MS})
    call(lab, "acquire_dark", scans=scans)
    call(lab, "acquire_reference", scans=scans)


def absorbance_spectrum(lab: Lab, scans: int = 30) -> tuple[np.ndarray, np.ndarray, dict]:
    data = call(lab, "measure_absorbance", scans=scans)
    full = lab.data(data["data"])
    values = np.array([np.nan if a is None else a for a in full["absorbance"]])
    return np.array(full["wavelengths_nm"]), values, data


def counts_of(lab: Lab, data: dict) -> np.ndarray:
    return np.array(lab.data(data["data"])["counts"])


def peak_of(nm: np.ndarray, absorbance: np.ndarray) -> float:
    """Band maximum (nm): vertex of a parabola through the top 10 % of the band."""
    finite = ~np.isnan(absorbance)
    nm, absorbance = nm[finite], absorbance[finite]
    smooth = np.convolve(absorbance, np.ones(15) / 15, mode="same")
    top = absorbance > 0.9 * smooth.max()
    a, b, _ = np.polyfit(nm[top], absorbance[top], 2)
    return float(-b / (2 * a))


def test_published_absorptivities_match_the_species_library() -> None:
    species = World(0).species
    for key, epsilon in EPSILON.items():
        assert species[key].epsilon_max == pytest.approx(epsilon, rel=1e-9)
        assert species[key].lambda_max_nm == LAMBDA_MAX[key]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("dye", "molar"), [("tartrazine", 30e-6), ("brilliant_blue", 5e-6)])
def test_dye_peaks_at_lambda_max_with_beer_lambert_height(
    seed: int, dye: str, molar: float
) -> None:
    lab, world = blank_lab(seed)
    referenced(lab)
    world.fill("cuvette", Mixture.solution(3000, {dye: molar}))
    nm, absorbance, _ = absorbance_spectrum(lab)
    band = np.abs(nm - LAMBDA_MAX[dye]) < 60
    assert peak_of(nm[band], absorbance[band]) == pytest.approx(LAMBDA_MAX[dye], abs=2.0)
    at_max = np.nanmean(absorbance[np.abs(nm - LAMBDA_MAX[dye]) <= 1.0])
    assert at_max == pytest.approx(EPSILON[dye] * molar * 1.0, rel=0.03)


def test_absorbance_is_linear_in_concentration() -> None:
    lab, world = blank_lab(4)
    referenced(lab)
    expected, measured = [], []
    for micromolar in (4, 10, 20, 35):
        world.fill("cuvette", Mixture.solution(3000, {"tartrazine": micromolar * 1e-6}))
        nm, absorbance, _ = absorbance_spectrum(lab)
        measured.append(np.nanmean(absorbance[np.abs(nm - 426) <= 2]))
        expected.append(EPSILON["tartrazine"] * micromolar * 1e-6)
    slope, intercept = np.polyfit(expected, measured, 1)
    assert slope == pytest.approx(1.0, abs=0.03)
    assert intercept == pytest.approx(0.0, abs=0.01)


def test_dark_counts_grow_linearly_with_integration_time() -> None:
    lab, _ = blank_lab(5)
    times_s = np.array([0.01, 0.1, 0.5, 1.0, 2.0])
    means = []
    for seconds in times_s:
        call(lab, "set_integration_time", time={"value": seconds, "unit": "second"})
        means.append(counts_of(lab, call(lab, "acquire_dark", scans=4)).mean())
    slope, intercept = np.polyfit(times_s, means, 1)
    residual = np.array(means) - (slope * times_s + intercept)
    assert np.abs(residual).max() < 3.0  # counts, on a ~3300-count span
    profile = get_profile("FLAME-S")
    assert intercept == pytest.approx(profile.offset_counts, abs=5)
    assert slope == pytest.approx(profile.dark_rate_e_per_s * profile.gain, rel=0.02)


def test_saturated_pixels_read_full_scale_and_give_null_absorbance() -> None:
    lab, world = blank_lab(6)
    call(lab, "set_integration_time", time={"value": 250, "unit": MS})
    call(lab, "acquire_dark", scans=2)
    reference = call(lab, "acquire_reference", scans=2)
    counts = counts_of(lab, reference)
    assert reference["saturated_pixels"] > 0
    assert reference["max_counts"] == 65535
    assert np.count_nonzero(counts == 65535) == reference["saturated_pixels"]
    assert counts.max() == 65535  # clipped at the ADC, never beyond
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 10e-6}))
    _, absorbance, data = absorbance_spectrum(lab, scans=2)
    assert data["saturated_pixels"] >= reference["saturated_pixels"]
    assert np.all(np.isnan(absorbance[counts >= 65535]))


def photon_transfer(seed: int = 8, repeats: int = 40) -> tuple[float, float]:
    """Gain (counts/e⁻) and read noise (counts) from the variance–signal line."""
    lab, _ = blank_lab(seed)
    call(lab, "set_integration_time", time={"value": 140, "unit": MS})
    dark = counts_of(lab, call(lab, "acquire_dark", scans=50))
    spectra = np.array(
        [counts_of(lab, call(lab, "acquire_spectrum", scans=1)) for _ in range(repeats)]
    )
    signal = spectra.mean(axis=0) - dark
    variance = spectra.var(axis=0, ddof=1)
    usable = spectra.max(axis=0) < 65535
    gain, read_variance = np.polyfit(signal[usable], variance[usable], 1)
    return float(gain), float(np.sqrt(read_variance))


def test_photon_transfer_gives_the_datasheet_noise_and_the_manual_signal_to_noise() -> None:
    """The variance–signal line of real scans: read noise ≈ the datasheet's 50 counts RMS, and
    read plus shot noise at the largest signal give the manual's S:N ≈ 275:1."""
    gain, read_noise = photon_transfer()
    profile = get_profile("FLAME-S")
    s_max = 65535 - profile.offset_counts
    # 40 scans per pixel: the slope is good to ~1 %, the intercept (read variance) to ~10 %
    assert gain == pytest.approx(profile.gain, rel=0.03)
    assert read_noise == pytest.approx(50, rel=0.15)
    assert s_max / np.sqrt(read_noise**2 + gain * s_max) == pytest.approx(275, rel=0.03)


def test_averaging_n_scans_improves_signal_to_noise_by_root_n() -> None:
    lab, _ = blank_lab(9)
    call(lab, "set_integration_time", time={"value": 100, "unit": MS})
    single = np.array([counts_of(lab, call(lab, "acquire_spectrum", scans=1)) for _ in range(30)])
    averaged = np.array(
        [counts_of(lab, call(lab, "acquire_spectrum", scans=16)) for _ in range(30)]
    )
    bright = single.mean(axis=0) > 20_000
    ratio = np.median(single.std(axis=0, ddof=1)[bright] / averaged.std(axis=0, ddof=1)[bright])
    assert ratio == pytest.approx(4.0, rel=0.12)


def test_same_seed_same_bytes_other_seed_other_noise() -> None:
    def traffic(seed: int) -> bytes:
        lab, world = blank_lab(seed)
        recording = lab.spec.instrument.transport.record()
        referenced(lab, 50, 3)
        world.fill("cuvette", Mixture.solution(3000, {"allura_red": 15e-6}))
        absorbance_spectrum(lab, 3)
        return recording.replied()

    assert traffic(12) == traffic(12)
    assert traffic(12) != traffic(13)


def test_acquisition_advances_the_world_clock() -> None:
    lab, world = blank_lab(10)
    call(lab, "set_integration_time", time={"value": 20, "unit": MS})
    call(lab, "acquire_dark", scans=5)
    call(lab, "acquire_spectrum", scans=3)
    assert world.clock.now() == pytest.approx(0.02 * 8)


def test_liquid_below_the_beam_reads_air_not_dye() -> None:
    lab, world = blank_lab(11)
    referenced(lab)
    world.fill("cuvette", Mixture.solution(500, {"tartrazine": 30e-6}))
    nm, absorbance, _ = absorbance_spectrum(lab)
    near_peak = np.nanmean(absorbance[np.abs(nm - 426) <= 5])
    red = np.nanmean(absorbance[np.abs(nm - 600) <= 5])
    # silica–air instead of silica–water inner faces: ≈0.029 OD, flat; no tartrazine band
    assert red == pytest.approx(0.029, abs=0.005)
    assert near_peak == pytest.approx(red, abs=0.02)


def test_a_beam_half_under_the_surface_mixes_both_paths() -> None:
    lab, world = blank_lab(12)
    referenced(lab)
    world.fill("cuvette", Mixture.solution(625, {"tartrazine": 30e-6}))  # beam half covered
    nm, absorbance, _ = absorbance_spectrum(lab)
    at_peak = np.nanmean(absorbance[np.abs(nm - 426) <= 1])
    true = EPSILON["tartrazine"] * 30e-6
    # T = ½(T_liquid + T_air): far from Beer–Lambert — the honest result of an underfilled cuvette
    expected = -np.log10(0.5 * 10**-true + 0.5 * 10**-0.029)
    assert at_peak == pytest.approx(expected, abs=0.02)
    assert at_peak < 0.5 * true


def test_stray_light_caps_the_measurable_absorbance() -> None:
    world = World(13)
    optics = Optics(world, get_profile("FLAME-S"), name="spec")
    world.fill("cuvette", Mixture.solution(3000, {}))
    blank = optics.rate(light=True)
    world.fill("cuvette", Mixture.solution(3000, {"brilliant_blue": 50e-6}))  # true A ≈ 6.5
    dense = optics.rate(light=True)
    nm = optics.true_nm
    at_630 = np.abs(nm - 630) < 0.5
    apparent = -np.log10(dense[at_630] / blank[at_630]).mean()
    s600 = world.hidden_truth()["spec/stray_light_600nm"]
    assert 3e-4 <= s600 <= 7e-4  # ≈0.05 % [physics reference §7]
    assert 2.9 < apparent < 3.7  # ceiling ≈ −log10(s), far below the true 6.5


@pytest.mark.parametrize("model", ["STS", "ST"])
def test_other_models_measure_too(model: str) -> None:
    lab, world = blank_lab(14, model)
    referenced(lab, 100, 10)
    world.fill("cuvette", Mixture.solution(3000, {"allura_red": 20e-6}))
    nm, absorbance, _data = absorbance_spectrum(lab, 10)
    assert nm.size == {"STS": 1024, "ST": 1516}[model]
    at_max = np.nanmean(absorbance[np.abs(nm - 504) <= 1.5])
    assert at_max == pytest.approx(540 * 496.42 / 10 * 20e-6, rel=0.05)
