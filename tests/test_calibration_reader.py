"""The reader fit's 95 % intervals hold the hidden reader and dye-lot values.

Seeds 21-26, none used while the fit was written, on the published profile (published-2: defect
wells and the path offset): 43 of the 48 intervals (8 parameters × 6 labs) hold their hidden
value (nominal 45.6); the misses: seed 21's path offset, seed 24's gain and with it the dye
lot's ε factor, seed 26's noise floor and snr0 (their intervals are joint). On seeds 27-34,
looked at once and not tuned on, 60 of 64 (two path offsets, a gain, a stray light): the path
offset's interval is the least honest (3 misses in 14)."""

from __future__ import annotations

import math

import pytest

from labtools.lab import Lab
from labtools.simulators.calibration.fit_reader import fit_reader
from labtools.simulators.calibration.protocol import reader_run

SEEDS = (21, 22, 23, 24, 25, 26)


def hidden(lab: Lab) -> dict[str, float]:
    """The values the reader fit estimates, as the virtual lab holds them (tests only)."""
    truth = lab.shared["reader_backend"].truth
    constants = lab.shared["reader_backend"].constants
    factor, shift = lab.shared["world"].hidden_truth()["batch/tartrazine"]
    return {
        "reader.absorbance.gain_error": truth.gain_error,
        "reader.absorbance.stray_light": truth.stray_light,
        "reader.absorbance.noise_floor": constants.od_noise_floor,
        "reader.absorbance.snr0": constants.snr0,
        "reader.path.offset": constants.path_offset_mm,
        # the per-well offsets are drawn U(-0.004, 0.004) (params.draw_plate): SD 0.004/√3
        "reader.absorbance.well_offset_sd": 0.004 / math.sqrt(3.0),
        "species.tartrazine.lot.shift": shift,
        "species.tartrazine.lot.epsilon_factor": factor,
    }


@pytest.fixture(scope="module")
def fits() -> list[tuple[dict, dict]]:
    out = []
    for seed in SEEDS:
        lab = Lab.virtual(seed)
        try:
            out.append((fit_reader(reader_run(lab)), hidden(lab)))
        finally:
            lab.close()
    return out


def test_intervals_hold_the_hidden_values(fits: list[tuple[dict, dict]]) -> None:
    held = total = 0
    for fit, truth in fits:
        assert set(fit["parameters"]) == set(truth)
        for key, estimate in fit["parameters"].items():
            low, high = estimate["ci95"]
            total += 1
            held += low <= truth[key] <= high
    assert total == 48
    assert held >= 43  # 43 seen (90 %)


def test_estimates_are_informative(fits: list[tuple[dict, dict]]) -> None:
    """Narrower than what the published profile allows, where the runs see the parameter."""
    for fit, _ in fits:
        p = fit["parameters"]
        width = {key: p[key]["ci95"][1] - p[key]["ci95"][0] for key in p}
        assert width["species.tartrazine.lot.shift"] < 0.1  # nm; the lot prior's SD is 1 nm
        assert width["reader.absorbance.noise_floor"] < 1.5e-4
        low, high = p["reader.absorbance.stray_light"]["ci95"]
        assert high / low < 2.0  # the prior spans 1e-5 to 5e-5, a factor 5
        assert width["reader.absorbance.gain_error"] < 0.015
        for estimate in p.values():
            assert estimate["ci95"][0] <= estimate["value"] <= estimate["ci95"][1]


def test_what_the_runs_cannot_see_is_said(fits: list[tuple[dict, dict]]) -> None:
    fit, _ = fits[0]
    assert {
        "reader.absorbance.zero_offset",
        "reader.absorbance.plate_od",
        "reader.path.k_factor",
        "reader.fluorescence.scale",
        "reader.incubation.sensor_offset",
    } <= set(fit["not_identified"])
    assert not set(fit["not_identified"]) & set(fit["parameters"])
    blank = fit["derived"]["blank_od"]
    assert 0.03 < blank["value"] < 0.05  # (1 + g) · plate OD (0.036-0.044) + zero (±0.004)
