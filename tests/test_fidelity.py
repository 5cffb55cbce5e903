"""Fidelity on a stand-in real lab: a twin calibrated on it, and the published twin, held against
held-out readings of the same instruments (fresh noise, plate and samples). The twin is
calibrated with the lab's balance (the gravimetric check); the held-out comparison uses the
photometric one, which reads the same pipetting parameters through the reader.

The stand-in: the instruments ``drawn_profile(4242)`` draws from the published spread, with the
reader's UV stray light at 4 × 10⁻⁴ [V: issue 19, a Tecan Spark's readings plateau near
3.35 OD, implying stray light ≈ 4 × 10⁻⁴], 8× above the published prior's bound, so the
stand-in differs from the published twin in what the dye series reads and nowhere else the
protocol looks (seed 4242 is not one the benchmark uses; nothing here was tuned on it).
"""

from __future__ import annotations

import json

import pytest

from labtools.lab import Lab
from labtools.simulators.calibration import calibrate
from labtools.simulators.calibration.fitted import fitted_profile
from labtools.simulators.fidelity import fidelity
from labtools.simulators.profile import Parameter, Profile
from labtools.simulators.published import published
from labtools.simulators.stand_in import drawn_profile

STRAY = 4e-4
TASKS = ("colour_matching", "dye_quantification")
REPLICATES = 8


@pytest.fixture(scope="module")
def hidden() -> Profile:
    key = "reader.absorbance.stray_light"
    return drawn_profile(4242).with_values(
        {key: Parameter(key, "dimensionless", STRAY)}, name="stand-in 4242, stray light 4e-4"
    )


@pytest.fixture(scope="module")
def twin(hidden: Profile) -> Profile:
    with Lab.virtual(31, profile=hidden) as lab:
        return fitted_profile(calibrate(lab), origin="tests/test_fidelity.py")


@pytest.fixture(scope="module")
def reports(hidden: Profile, twin: Profile) -> dict:
    out = {}
    for name, profile in (("calibrated", twin), ("published", published())):
        with Lab.virtual(32, profile=hidden) as lab:
            out[name] = fidelity(
                lab,
                profile,
                replicates=REPLICATES,
                tasks=TASKS,
                reward_seeds=(0, 1),
                pipetting="photometric",  # a quarter of the gravimetric check's calls
            )
    return out


def test_the_report_is_json(reports: dict) -> None:
    report = reports["calibrated"]
    assert json.loads(json.dumps(report)) == report
    assert set(report["groups"]) == {
        "path check",
        "dye series",
        "blanks",
        "volume checks",
        "spectrometer dark",
    }
    assert report["overall"]["readings"] == sum(g["readings"] for g in report["groups"].values())
    assert report["parameters"]["against"] == "truth"
    assert set(report["rewards"]["tasks"]) == set(TASKS)


def test_fitted_parameters_hold_the_hidden_values(reports: dict) -> None:
    summary = reports["calibrated"]["parameters"]["summary"]
    print(summary)
    assert summary["parameters"] > 100
    assert summary["inside_ci95"] >= 0.85
    assert abs(summary["z_mean"]) < 0.5
    assert 0.5 < summary["z_sd"] < 1.6
    stray = reports["calibrated"]["parameters"]["z"]["reader.absorbance.stray_light"]
    assert stray["truth"] == STRAY and stray["inside"]


def test_calibrated_twin_covers_the_held_out_readings(reports: dict) -> None:
    for name, group in {
        **reports["calibrated"]["groups"],
        "overall": reports["calibrated"]["overall"],
    }.items():
        print("calibrated", name, group["coverage"], group["test"])
    for name, group in {
        **reports["published"]["groups"],
        "overall": reports["published"]["overall"],
    }.items():
        print("published", name, group["coverage"], group["test"])
    calibrated = reports["calibrated"]
    assert 0.85 <= calibrated["overall"]["coverage"]["95"] <= 1.0
    # independent pixels: the dark's coverage is the nominal one within its binomial spread
    dark = calibrated["groups"]["spectrometer dark"]["coverage"]
    assert abs(dark["90"] - 0.90) < 0.03 and abs(dark["50"] - 0.50) < 0.05


def test_published_twin_misses_what_the_stand_in_changed(reports: dict) -> None:
    """Stray light lowers the high-OD dye readings: the published twin's central half misses
    most of the dye series and its PITs depart from its own replicates' several times as far
    (AD statistic) as the calibrated twin's; the dark, which the stand-in leaves alone, is
    covered alike."""
    calibrated, default = reports["calibrated"]["groups"], reports["published"]["groups"]
    assert default["dye series"]["coverage"]["50"] < 0.4
    assert default["dye series"]["pit_mean"] < calibrated["dye series"]["pit_mean"] - 0.1
    assert (
        default["dye series"]["test"]["statistic"]
        > 3 * calibrated["dye series"]["test"]["statistic"]
    )
    dark = (default["spectrometer dark"]["coverage"], calibrated["spectrometer dark"]["coverage"])
    assert all(abs(dark[0][level] - dark[1][level]) < 0.04 for level in ("50", "90", "95"))


def test_reward_gap_is_smaller_with_the_calibrated_twin(reports: dict) -> None:
    gaps = reports["calibrated"]["rewards"]["tasks"]
    print({t: (g["gap_twin"], g["gap_default"]) for t, g in gaps.items()})
    assert sum(abs(g["gap_twin"]) for g in gaps.values()) < sum(
        abs(g["gap_default"]) for g in gaps.values()
    )
