"""``labtools calibrate`` on a stand-in lab: a virtual lab built from a profile drawn with a seed
the calibrator never sees, fitted through the tools, written as a profile over the published one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtools import Lab
from labtools.cli import main
from labtools.simulators.published import load_profile, published
from labtools.simulators.stand_in import drawn_profile


def test_calibrating_a_stand_in_writes_a_profile_whose_intervals_hold_its_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hidden = tmp_path / "hidden.toml"
    hidden.write_text(drawn_profile(4711).to_toml(base=published()), "utf-8")
    fitted_path = tmp_path / "fitted.toml"
    argv = ["calibrate", "--profile", str(hidden), "--seed", "9", "--out", str(fitted_path)]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["runs"]["reader"]["calls"] > 0 and result["runs"]["gravimetric"]["calls"] > 0
    assert result["runs"]["gravimetric"]["method"] == "gravimetric"  # the lab has a balance

    truth, fitted = load_profile(hidden), load_profile(fitted_path)
    assert fitted.name.startswith("fitted")
    held = total = 0
    spread = fitted["reader.absorbance.well_offset"]
    assert spread.prior is not None and spread.fitted_from.startswith("labtools calibrate")
    for key, entry in result["parameters"].items():
        if key == "reader.absorbance.well_offset_sd":
            continue  # a spread: the prior above
        parameter = fitted[key]
        assert parameter.fixed and parameter.ci95 == tuple(entry["ci95"])
        assert parameter.fitted_from.startswith("labtools calibrate")
        if truth[key].fixed:  # a value the stand-in lab really has
            low, high = parameter.ci95
            total += 1
            held += low <= truth[key].value <= high
    assert total > 130  # 128 channel-and-tip terms (gravimetric), the reader and the detector
    assert held / total >= 0.9, (held, total)  # 132 of 138 seen
    # the twin built from the fit reads as a lab with those values
    twin = Lab.virtual(1, profile=fitted_path)
    beta = fitted["liquid_handler.channel_2.tip_300.beta"].value
    assert twin.instruments["lh"].plr.backend.channels[2][300.0].beta == beta


def test_calibrate_refuses_a_hidden_profile_for_a_lab_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["calibrate", "--lab", "my_lab.toml", "--profile", "x.toml"]) == 2
    assert "--lab virtual" in capsys.readouterr().err
