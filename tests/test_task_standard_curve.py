"""T3 standard curve: statement, submission checks, the CRPS score, protocols."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labtools.session import Session
from labtools.simulators.tasks.standard_curve import SCALE, StandardCurve, crps_normal


@pytest.fixture(scope="module")
def session():
    with Session("standard_curve", secret="standard curve tests") as session:
        yield session


def _truth_um(session: Session) -> float:
    return session.lab.shared["world"].hidden_truth()["task/standard_curve"]


def _submit(session: Session, value_um: float, sd_um: float) -> None:
    session.call_tool(
        "submit_standard_curve",
        {
            "concentration": {"value": value_um, "unit": "micromolar"},
            "uncertainty": {"value": sd_um, "unit": "micromolar"},
        },
    ).unwrap()


def test_statement_is_the_same_for_every_seed(session) -> None:
    """Nothing drawn per seed can be in it; the unknown really differs between seeds."""
    first = session.reset(0)["task"]
    truth = _truth_um(session)
    assert session.reset(1)["task"] == first
    assert _truth_um(session) != truth
    for text in (f"{truth:.0f}", f"{truth:.1f}"):
        assert text not in first
    world = session.lab.shared["world"]
    assert world.contents("reservoir:A10").concentration("tartrazine") * 1e6 == pytest.approx(
        _truth_um(session)
    )


@pytest.mark.parametrize(
    "arguments, code",
    [
        (
            {
                "concentration": {"value": 50, "unit": "microliter"},
                "uncertainty": {"value": 1, "unit": "micromolar"},
            },
            "unit_error",
        ),
        (
            {
                "concentration": {"value": 50, "unit": "micromolar"},
                "uncertainty": {"value": -1, "unit": "micromolar"},
            },
            "out_of_range",
        ),
        ({"concentration": {"value": 50, "unit": "micromolar"}}, "invalid_arguments"),
        ({"concentration": 50, "uncertainty": 1}, "unit_error"),
    ],
)
def test_bad_submissions_are_tool_errors_and_the_episode_goes_on(session, arguments, code) -> None:
    session.reset(2)
    result = session.call_tool("submit_standard_curve", arguments)
    assert not result.ok and result.error["code"] == code, result.error
    assert not session.done and session.task.submission is None
    _submit(session, 50.0, 1.0)
    assert session.terminated


def test_crps_closed_form_matches_the_integral() -> None:
    """CRPS = ∫ (F(x) − 1[x ≥ y])² dx, integrated on either side of the observation y."""
    mean, sd, observed = 10.0, 2.0, 13.0

    def integral(low: float, high: float, step: float) -> float:
        x = np.linspace(low, high, 100_001)
        cdf = 0.5 * (1 + np.vectorize(math.erf)((x - mean) / (sd * math.sqrt(2))))
        f = (cdf - step) ** 2
        return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(x)))

    numeric = integral(mean - 12 * sd, observed, 0.0) + integral(observed, mean + 12 * sd, 1.0)
    assert crps_normal(mean, sd, observed) == pytest.approx(numeric, rel=1e-6)
    assert crps_normal(mean, 0.0, observed) == 3.0


def test_scores_reward_accuracy_and_honest_uncertainty(session) -> None:
    session.reset(3)
    c = _truth_um(session)
    task: StandardCurve = session.task

    def raw(value: float, sd: float) -> float:
        task.submission = {"concentration_um": value, "uncertainty_um": sd}
        return task.score(session.lab)["raw"]

    assert raw(c, 0.0) == pytest.approx(1.0)
    # exact, with a 2 % sd: CRPS = σ(2φ(0) − 1/√π) ≈ 0.234 σ
    assert raw(c, 0.02 * c) == pytest.approx(math.exp(-0.2337 * 0.02 / SCALE), rel=1e-3)
    assert raw(1.5 * c, 0.05 * c) < 1e-3  # far off
    off = 1.05 * c  # 5 % off: claiming 0.1 % is over-confident, 50 % under-confident
    assert raw(off, 0.05 * c) > raw(off, 0.001 * c)
    assert raw(off, 0.05 * c) > raw(off, 0.5 * c)


def test_expert_beats_naive_and_same_seed_gives_same_reward(session) -> None:
    task: StandardCurve = session.task
    for seed in (0, 1):
        session.reset(seed)
        task.naive(session)
        naive = session.score()
        session.reset(seed)
        task.expert(session)
        expert = session.score()
        # the standard is its label ±2 % (1 sd): an honest expert 4 % off still keeps ~0.5
        assert expert.success and expert.raw > 0.4, expert
        assert naive.raw < 0.05 and not naive.success
    session.reset(1)
    task.expert(session)
    assert session.score() == expert


def test_no_submission_scores_zero(session) -> None:
    session.reset(4)
    reward = session.score()
    assert reward.raw == 0.0 and reward.total == 0.0 and not reward.success
