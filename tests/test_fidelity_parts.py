"""The parts of labtools.simulators.fidelity: the predictive draws, PIT coverage and the
two-sample test on known distributions, the reading groups, z-scores, the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labtools.errors import InvalidArguments
from labtools.lab import Lab
from labtools.simulators.calibration import run_all
from labtools.simulators.fidelity import Predictive, fidelity, uncertainty
from labtools.simulators.fidelity.compare import compare_group
from labtools.simulators.fidelity.parameters import z_against_fit
from labtools.simulators.fidelity.readings import readings
from labtools.simulators.profile import Parameter
from labtools.simulators.published import published
from labtools.simulators.stand_in import drawn_profile


def _quantiles(spread, n: int = 40_000) -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.quantile([spread.draw(rng) for _ in range(n)], [0.025, 0.5, 0.975])


@pytest.mark.parametrize(
    ("value", "ci95", "shape"),
    [
        (0.004, (-0.002, 0.011), "linear"),  # a gain error, skewed
        (1.7e-5, (1.36e-5, 2.09e-5), "log"),  # a stray light fitted on the log scale
        (0.0, (0.0, 0.2), "bound"),  # a film volume at its bound 0
    ],
)
def test_draws_have_the_interval_as_quantiles(value: float, ci95: tuple, shape: str) -> None:
    spread = uncertainty(value, ci95)
    assert spread.shape == shape
    low, median, high = _quantiles(spread)
    width = ci95[1] - ci95[0]
    if shape == "bound":  # a half-normal from the bound: 95 % inside, the rest above
        rng = np.random.default_rng(4)
        draws = np.array([spread.draw(rng) for _ in range(40_000)])
        assert draws.min() >= 0.0
        assert abs(np.mean(draws <= ci95[1]) - 0.95) < 0.005
        return
    assert abs(low - ci95[0]) < 0.02 * width and abs(high - ci95[1]) < 0.02 * width
    assert abs(median - value) < 0.02 * width


def test_whole_number_ends_are_limits() -> None:
    rng = np.random.default_rng(0)
    angle = uncertainty(89.5, (85.2, 90.0))  # a contact angle the fit clipped at 90°
    assert max(angle.draw(rng) for _ in range(5000)) == 90.0
    c = uncertainty(0.003, (0.0, 0.01))
    assert min(c.draw(rng) for _ in range(5000)) == 0.0


def _twin(**values: tuple[float, tuple[float, float]]) -> object:
    base = published()
    laid = {
        key.replace("__", "."): Parameter(
            key.replace("__", "."), base[key.replace("__", ".")].unit, v, ci95=ci, fitted_from="t"
        )
        for key, (v, ci) in values.items()
    }
    return base.with_values(laid)


def test_a_replicate_profile_is_drawn_per_seed() -> None:
    twin = _twin(
        reader__absorbance__noise_floor=(0.00104, (0.00100, 0.00108)),  # a constant
        reader__absorbance__gain_error=(0.004, (-0.002, 0.011)),  # a per-seed prior
    )
    predictive = Predictive(twin)
    assert set(predictive.uncertain) == {
        "reader.absorbance.noise_floor",
        "reader.absorbance.gain_error",
    }
    a, b = predictive.profile(5), predictive.profile(6)
    assert a == predictive.profile(5)  # deterministic
    assert a["reader.absorbance.noise_floor"].value != b["reader.absorbance.noise_floor"].value
    assert Predictive(published()).uncertain == {}  # the published twin has nothing fitted


def test_a_poorly_identified_bias_draws_from_the_posterior() -> None:
    """A 1000 µL tip's bias fitted ±8 % against the published N(0, 0.27 %) spread: the draws
    follow the published spread, not the fit's (the fit alone with combine=False)."""
    key = "liquid_handler.channel_3.tip_1000.beta"
    twin = _twin(liquid_handler__channel_3__tip_1000__beta=(0.019, (-0.65, 0.69)))
    posterior = [Predictive(twin).profile(s)[key].value for s in range(300)]
    alone = [Predictive(twin, combine=False).profile(s)[key].value for s in range(300)]
    assert np.std(posterior) < 0.0035
    assert np.std(alone) > 0.25


def test_coverage_and_test_on_exchangeable_and_shifted_readings() -> None:
    rng = np.random.default_rng(11)
    n, k = 3000, 19
    names = [f"r{i}" for i in range(n)]
    centre = rng.uniform(0, 2, n)
    replicates = [dict(zip(names, centre + rng.normal(0, 0.1, n), strict=True)) for _ in range(k)]
    same = dict(zip(names, centre + rng.normal(0, 0.1, n), strict=True))
    shifted = dict(zip(names, centre + 0.1 + rng.normal(0, 0.1, n), strict=True))
    ok = compare_group(same, replicates, np.random.default_rng(1))
    off = compare_group(shifted, replicates, np.random.default_rng(1))
    for level in ("50", "90", "95"):  # binomial sd ≤ 0.0092 at n = 3000
        assert abs(ok["coverage"][level] - int(level) / 100) < 0.03
    assert off["coverage"]["50"] < 0.40 and off["pit_mean"] > 0.70
    assert ok["test"]["p_mc"] > 0.05
    assert off["test"]["p_mc"] == pytest.approx(1 / (k + 1)) and off["test"]["p_iid"] == 0.001


def test_ties_and_censored_readings() -> None:
    rng = np.random.default_rng(5)
    n, k = 2000, 15
    names = [f"p{i}" for i in range(n)]
    counts = [rng.poisson(20, n).astype(float) for _ in range(k)]
    replicates = [dict(zip(names, c, strict=True)) for c in counts]
    lab = dict(zip(names, rng.poisson(20, n).astype(float), strict=True))
    lab["p0"] = float("inf")  # over range
    result = compare_group(lab, replicates, np.random.default_rng(2))
    assert result["censored"] == 1 and result["readings"] == n - 1
    assert abs(result["coverage"]["50"] - 0.5) < 0.04  # ties broken at random


def test_readings_group_the_protocol_by_call_and_well() -> None:
    with Lab.virtual(7) as lab:
        groups = readings(run_all(lab, pipetting="photometric"))
    sizes = {group: len(values) for group, values in groups.items()}
    # 96 wells × 8 nm × 2 reads × 2 plate reads, 96 × 6 nm × 2 × 6 rounds, 4 darks × 518 pixels
    assert sizes == {
        "path check": 352,
        "dye series": 576,
        "blanks": 2144,
        "volume checks": 6912,
        "spectrometer dark": 2072,
    }
    assert "reader/filled/977/1/A1" in groups["path check"]
    assert "spectrometer/dark/4000/517" in groups["spectrometer dark"]


def test_z_against_the_lab_s_own_fit() -> None:
    twin = _twin(reader__absorbance__gain_error=(0.004, (0.000, 0.008)))
    fit = {"parameters": {"reader.absorbance.gain_error": {"value": 0.010, "ci95": [0.006, 0.014]}}}
    z = z_against_fit(Predictive(twin), fit)["reader.absorbance.gain_error"]
    # both sd 0.004 / 1.96: z = 0.006 / (√2 · 0.00204)
    assert z["z"] == pytest.approx(0.006 / (2**0.5 * 0.004 / 1.959964), rel=1e-3)


class _Blind:
    """A lab seen only through its tools, as a real one is."""

    def __init__(self, lab: Lab) -> None:
        self.call = lab.call
        self.clock = lab.clock
        self.tool_names = lab.tool_names
        self.state = lab.state


def test_a_lab_without_known_truth() -> None:
    with Lab.virtual(3) as lab:
        report = fidelity(
            _Blind(lab),
            published(),
            replicates=2,
            tasks=["dye_quantification"],
            pipetting="photometric",
        )
    assert report["rewards"] == {
        "skipped": "the lab's profile is not known (a real lab): its tasks cannot be played"
    }
    assert report["parameters"]["note"] == "nothing fitted"
    overall = report["overall"]
    assert overall["readings"] + overall["censored"] == 12056  # every reading, aligned or not


def test_bad_arguments_are_refused_before_any_call() -> None:
    with Lab.virtual(3) as lab:
        for bad in (1, 2.5, True):
            with pytest.raises(InvalidArguments) as caught:
                fidelity(lab, published(), replicates=bad)
            assert caught.value.field == "replicates"
        with pytest.raises(InvalidArguments, match="no task 'nope'"):
            fidelity(lab, published(), tasks=["nope"])
        with pytest.raises(InvalidArguments, match="not one string"):
            fidelity(lab, published(), tasks="dye_quantification")
        assert lab.journal.count == 0


def test_the_command_line(tmp_path: Path) -> None:
    labtools = Path(sys.executable).with_name("labtools")
    hidden = tmp_path / "hidden.toml"
    hidden.write_text(drawn_profile(5).to_toml(base=published()), "utf-8")
    plot = tmp_path / "fidelity.png"
    done = subprocess.run(
        [
            labtools,
            "fidelity",
            "--profile",
            hidden,
            "--twin",
            "published",
            "--replicates",
            "2",
            "--task",
            "dye_quantification",
            "--pipetting",
            "photometric",
            "--json",
            "--plot",
            plot,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["lab"] == "published-2, seed 5" and report["replicates"] == 2
    assert report["pipetting"] == "photometric"
    assert set(report["rewards"]["tasks"]) == {"dye_quantification"}
    assert plot.read_bytes()[:4] == b"\x89PNG"
    refused = subprocess.run(
        [labtools, "fidelity", "--lab", "x.toml", "--profile", hidden, "--twin", "published"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "--profile builds a virtual lab" in refused.stderr
