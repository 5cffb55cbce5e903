"""Real runs one at a time: pooled across days, and the next one chosen by expected information
about a task's parameters (simulators/calibration/pool.py, schedule.py; ``labtools calibrate
--next``). Stand-in labs' seeds here (4100-4299) are apart from the benchmarks'."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labtools import Lab
from labtools.cli import main
from labtools.simulators.calibration.pool import pool_fits, pooled_entry
from labtools.simulators.calibration.real_runs import RUN_KINDS, fit_run, make_run
from labtools.simulators.calibration.schedule import calibrate_budget, next_run, task_weights
from labtools.simulators.profile import Profile
from labtools.simulators.published import published
from labtools.simulators.stand_in import drawn_profile

LABS = (4101, 4102)
DAYS = 3
KIND = "gravimetric:300"


@pytest.fixture(scope="module")
def stand_ins() -> dict[int, tuple[Profile, list[dict[str, Any]]]]:
    """Per stand-in lab: its hidden profile and DAYS fitted one-tip gravimetric runs."""
    out = {}
    for seed in LABS:
        hidden = drawn_profile(seed)
        fits = []
        for day in range(DAYS):
            with Lab.virtual(4200 + 10 * (seed - 4100) + day, profile=hidden) as lab:
                fits.append(fit_run(make_run(lab, KIND)))
        out[seed] = (hidden, fits)
    return out


def test_normal_likelihoods_pool_to_the_inverse_variance_mean() -> None:
    values, sds = np.array([1.0, 1.4, 0.7]), np.array([0.2, 0.4, 0.3])
    entries = [
        {"value": v, "unit": "microliter", "ci95": [v - 1.959964 * s, v + 1.959964 * s]}
        for v, s in zip(values, sds, strict=True)
    ]
    pooled = pooled_entry(entries)
    weights = 1.0 / sds**2
    mean, sd = float(np.sum(weights * values) / weights.sum()), float(weights.sum() ** -0.5)
    assert pooled["value"] == pytest.approx(mean, abs=1e-6)
    assert pooled["ci95"][0] == pytest.approx(mean - 1.959964 * sd, abs=1e-5)
    assert pooled["ci95"][1] == pytest.approx(mean + 1.959964 * sd, abs=1e-5)
    assert pooled["unit"] == "microliter"
    assert pooled_entry(entries[:1]) == entries[0]


def test_an_interval_ending_at_a_physical_limit_still_reaches_it() -> None:
    # a contact angle's fits: two at 90° (the limit), one below with its interval clipped there
    entries = [
        {"value": 90.0, "unit": "degree", "ci95": [88.6, 90.0]},
        {"value": 89.6, "unit": "degree", "ci95": [87.4, 90.0]},
        {"value": 90.0, "unit": "degree", "ci95": [88.9, 90.0]},
    ]
    pooled = pooled_entry(entries)
    assert pooled["ci95"][1] == 90.0 and 88.6 < pooled["ci95"][0] < pooled["value"] <= 90.0


def test_pooled_days_hold_the_hidden_channels_and_narrow(
    stand_ins: dict[int, tuple[Profile, list[dict[str, Any]]]],
) -> None:
    held, total, ratios = 0, 0, []
    for hidden, fits in stand_ins.values():
        assert all("failed" not in f for f in fits)
        pooled = pool_fits(fits)
        assert pooled["runs"][KIND]["runs"] == DAYS
        for key, entry in pooled["parameters"].items():
            if not key.startswith("liquid_handler.channel_"):
                continue
            truth = hidden[key].value
            assert truth is not None
            total += 1
            held += entry["ci95"][0] <= truth <= entry["ci95"][1]
            if key.endswith(".beta"):
                one = fits[0]["parameters"][key]["ci95"]
                ratios.append((entry["ci95"][1] - entry["ci95"][0]) / (one[1] - one[0]))
    assert total == 2 * 8 * 4
    # 95 % intervals: 61 of 64 expected, 54 or fewer has probability 0.1 % for independent
    # ones [C: scipy.stats.binom]; measured 58 (the single days' own: 183 of 192)
    assert held / total >= 0.85, (held, total)
    # three days' bias intervals about 1/√3 of one day's
    assert 0.45 < float(np.median(ratios)) < 0.75, ratios


def test_the_scheduler_weighs_the_tip_the_task_uses(
    stand_ins: dict[int, tuple[Profile, list[dict[str, Any]]]],
) -> None:
    weights = task_weights("dye_quantification", RUN_KINDS)  # its expert pipettes with 300 µL
    by_group: dict[str, float] = {}
    for key, w in weights.items():
        group = key.split(".")[2] if key.startswith("liquid_handler.channel_") else key
        by_group[group] = by_group.get(group, 0.0) + w
    assert by_group["tip_300"] > 0.9 and by_group.get("tip_10", 0.0) == 0.0
    assert math.isclose(sum(weights.values()), 1.0)
    first = next_run([], weights, RUN_KINDS, published())
    assert first["next"] == KIND
    assert first["eig"]["gravimetric:10"] == 0.0 and first["eig"]["gravimetric:50"] == 0.0
    # runs of that tip made: its expected information falls, and stays ahead of the small tips'
    _, fits = stand_ins[LABS[0]]
    later = next_run(fits, weights, RUN_KINDS, published())
    assert 0.0 < later["eig"][KIND] < first["eig"][KIND]
    assert later["eig"][KIND] > later["eig"]["gravimetric:10"]
    assert next_run(fits, weights, RUN_KINDS, published()) == later  # deterministic
    # the parameters' own sum ranks the first run alike
    alike = next_run([], weights, RUN_KINDS, published(), "parameters")
    assert alike["next"] == KIND and alike["criterion"] == "parameters"


def test_the_reward_criterion_turns_to_the_next_group_once_one_is_known() -> None:
    # two groups, each half the reward's variance; the first's sd already a tenth of its prior
    prior = published()
    first, second = (
        "liquid_handler.channel_0.tip_300.beta",
        "liquid_handler.channel_0.tip_1000.beta",
    )
    spread = prior[first].prior
    assert spread is not None
    sd = 0.1 * spread.b
    fits = [
        {
            "kind": "gravimetric:300",
            "parameters": {
                first: {
                    "value": 0.0,
                    "unit": "dimensionless",
                    "ci95": [-1.959964 * sd, 1.959964 * sd],
                }
            },
        }
    ]
    weights = {first: 0.5, second: 0.5}
    kinds = ["gravimetric:300", "gravimetric:1000"]
    gains = next_run(fits, weights, kinds, prior)["eig"]
    # the reward's variance is 0.5 (0.01 + 1) of the prior's; a 300 µL run can remove at most
    # the first part, 1 %; the 1000 µL run, with its simulated information, most of the rest
    assert gains["gravimetric:300"] < 0.5 * math.log(1.0 / (1.0 - 0.01 / 1.01)) + 1e-12
    assert gains["gravimetric:1000"] > 10 * gains["gravimetric:300"]
    assert next_run(fits, weights, kinds, prior)["next"] == "gravimetric:1000"


def test_next_prints_each_candidates_gain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "runs.json"
    with Lab.virtual(4150, profile=drawn_profile(LABS[0])) as lab:
        records.write_text(json.dumps([make_run(lab, "spectrometer")]), "utf-8")
    assert (
        main(["calibrate", "--next", "--task", "dye_quantification", "--records", str(records)])
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    assert set(answer) == {"next", "criterion", "eig", "task", "made"}
    assert answer["criterion"] == "reward"
    assert answer["made"] == ["spectrometer"] and answer["task"] == ["dye_quantification"]
    assert set(answer["eig"]) == set(RUN_KINDS)  # the virtual lab has every instrument
    assert all(isinstance(v, float) and v >= 0.0 for v in answer["eig"].values())
    assert answer["next"] == max(answer["eig"], key=answer["eig"].get) == KIND


@pytest.mark.parametrize(
    ("records", "arguments", "said"),
    [
        ("not json", [], "Expecting value"),
        ('{"run": "reader"}', [], "not a JSON list of run records"),
        ('[{"run": "reader"}]', [], "a record lacks"),
        ("[]", ["--task", "no_such_task"], "unknown task 'no_such_task'"),
        ("[]", ["--budget", "0"], "--budget must be at least 1"),
    ],
)
def test_a_bad_plan_is_one_stderr_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], records: str, arguments: list, said: str
) -> None:
    path = tmp_path / "runs.json"
    path.write_text(records, "utf-8")
    command = ["calibrate", "--next", "--records", str(path), *arguments]
    if "--budget" in arguments:
        command.remove("--next")
    assert main(command) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err and err.startswith("labtools: ")


def test_a_budget_is_deterministic_and_each_run_on_its_own_day() -> None:
    hidden = drawn_profile(LABS[1])
    opened: list[int] = []

    def open_day(k: int) -> Lab:
        opened.append(k)
        return Lab.virtual(4250 + k, profile=hidden)

    kinds = ["gravimetric:300", "spectrometer"]
    runs = [calibrate_budget(open_day, 2, kinds, task="dye_quantification") for _ in range(2)]
    assert opened == [0, 1, 0, 1]
    assert runs[0]["schedule"] == runs[1]["schedule"]
    assert runs[0]["result"]["parameters"] == runs[1]["result"]["parameters"]
    # the darks inform nothing the task depends on: both runs weigh
    assert [s["kind"] for s in runs[0]["schedule"]] == ["gravimetric:300"] * 2
    assert runs[0]["result"]["runs"]["gravimetric:300"]["runs"] == 2
    fixed = calibrate_budget(open_day, 2, kinds, policy="fixed")
    assert [s["kind"] for s in fixed["schedule"]] == ["gravimetric:300", "spectrometer"]
