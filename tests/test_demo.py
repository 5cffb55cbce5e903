"""The main job: the closed-loop demo on the virtual lab, and determinism of whole runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from labtools import Lab
from labtools.demo.protocol import (
    REPLICATE_ROWS,
    SAMPLE_UL,
    STEPS,
    UNKNOWN_ROWS,
    WELL_UL,
    DyeQuantification,
)
from labtools.journal import WALL_CLOCK_KEYS, read_journal


def _run(seed: int) -> tuple[list[dict], dict]:
    with Lab.virtual(seed=seed) as lab:
        outcome = DyeQuantification(lab, echo=lambda line: None).run()
        events = lab.journal.events()
        state = lab.state()
    for event in events:
        for key in WALL_CLOCK_KEYS:
            event.pop(key)
    return events, {"estimate": outcome.estimate_um, "sd": outcome.sd_um, "state": state}


def test_same_seed_same_calls_give_identical_journals() -> None:
    first, outcome_1 = _run(seed=11)
    second, outcome_2 = _run(seed=11)
    assert 15 <= len(first) <= 25
    assert first == second
    assert outcome_1 == outcome_2
    _, outcome_3 = _run(seed=12)
    assert outcome_3["estimate"] != outcome_1["estimate"]


def test_demo_command_prints_the_outcome_as_json(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "labtools", "demo", "--seed", "4", "--json", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert set(outcome) == {"estimate", "uncertainty", "truth", "journal", "plots"}
    for key in ("estimate", "uncertainty", "truth"):
        assert outcome[key]["unit"] == "micromolar"
    estimate, sd, truth = (outcome[k]["value"] for k in ("estimate", "uncertainty", "truth"))
    assert 0 < sd < 0.1 * estimate
    assert abs(estimate - truth) < 3 * sd, outcome
    events = read_journal(outcome["journal"])
    assert all(e["ok"] for e in events) and len(events) <= 25
    for path in outcome["plots"]:
        with open(path, "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_demo_estimates_are_calibrated_across_seeds() -> None:
    """The reported 1-sd uncertainty covers the hidden truth about as often as it should."""
    z_scores = []
    for seed in range(20, 30):
        with Lab.virtual(seed=seed) as lab:
            protocol = DyeQuantification(lab, echo=lambda line: None)
            outcome = protocol.run()
            truth = lab.shared["world"].contents(protocol.unknown).concentration("tartrazine")
        z_scores.append((outcome.estimate_um - truth * 1e6) / outcome.sd_um)
    assert max(abs(z) for z in z_scores) < 3.5, z_scores
    assert sum(abs(z) < 2 for z in z_scores) >= 8, z_scores


def test_the_plate_holds_what_the_protocol_says() -> None:
    """Every standard, blank and unknown well holds 100 µL (the last standards' surplus went to
    the waste; the unknown is made up with water), so every well has one liquid height."""
    with Lab.virtual(seed=4) as lab:
        protocol = DyeQuantification(lab, echo=lambda line: None)
        outcome = protocol.run()
        plate = next(lw for lw in lab.state()["lh"]["labware"] if lw["name"] == "plate_1")
    wells = plate["wells"]
    for row in REPLICATE_ROWS:
        assert [wells[f"{row}{c}"] for c in range(1, STEPS + 2)] == [pytest.approx(WELL_UL)] * (
            STEPS + 1
        )
    assert [wells[f"{r}1"] for r in UNKNOWN_ROWS] == [pytest.approx(WELL_UL)] * 3
    assert [wells[w] for w in outcome.unknown_wells] == [pytest.approx(WELL_UL)] * 3
    assert SAMPLE_UL[0] <= outcome.sample_ul <= WELL_UL
