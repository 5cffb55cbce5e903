"""T4 enzyme kinetics and its inhibition variant: statements, submissions, scores, protocols,
hidden truth, determinism and rewinds."""

from __future__ import annotations

import math
from functools import partial
from itertools import pairwise

import numpy as np
import pytest
from leaks import assert_not_revealed, hidden_numbers, seen_by_agent

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.simulators.tasks.enzyme_kinetics import TAU, log_term
from labtools.simulators.tasks.kinetics_expert import prepare, serial_dilution
from labtools.simulators.tasks.kinetics_protocol import Assay
from labtools.units import QuantityJSON, qty

ALP, INHIBITOR = "alkaline_phosphatase", "inhibitor_x"
MECHANISMS = ("competitive", "noncompetitive", "uncompetitive")


@pytest.fixture(scope="module")
def kinetics():
    with Session("enzyme_kinetics", secret="enzyme tests") as session:
        yield session


@pytest.fixture(scope="module")
def inhibition():
    with Session("enzyme_inhibition", secret="enzyme tests") as session:
        yield session


def _truth(session: Session) -> dict[str, float]:
    return session.lab.shared["world"].kinetics.enzyme(ALP)


def _inhibition(session: Session) -> dict[str, object]:
    return session.lab.shared["world"].kinetics.inhibition(INHIBITOR)


def _mm(molar: float) -> QuantityJSON:
    return qty(molar * 1e3, "millimolar")


_per_s = partial(qty, unit="1 / second")


def test_statements_are_the_same_for_every_seed_and_hide_the_truth(kinetics, inhibition) -> None:
    for session in (kinetics, inhibition):
        first = session.reset(0)["task"]
        truth = dict(_truth(session))
        assert session.reset(1)["task"] == first
        assert _truth(session) != truth
        for value in (truth["km_molar"] * 1e3, truth["km_molar"] * 1e6, truth["kcat_per_s"]):
            for text in (f"{value:.2g}", f"{value:.3g}"):
                assert f" {text} " not in first
        assert f"submit_{session.task.id}" in first
    assert "inhibitor X (A6)" in inhibition.observation()["task"]
    assert "inhibitor" not in kinetics.observation()["task"].lower()


@pytest.mark.parametrize(
    "arguments, code",
    [
        ({"km": {"value": 1, "unit": "microliter"}, "kcat": _per_s(10)}, "unit_error"),
        ({"km": _mm(1e-3), "kcat": {"value": 10, "unit": "revolutions_per_minute"}}, "unit_error"),
        ({"km": _mm(1e-3), "kcat": {"value": 10, "unit": "second"}}, "unit_error"),
        ({"km": _mm(-1e-3), "kcat": _per_s(10)}, "out_of_range"),
        ({"km": _mm(1e-3), "kcat": _per_s(0)}, "out_of_range"),
        ({"km": _mm(1e-3)}, "invalid_arguments"),
    ],
)
def test_bad_kinetics_submissions_are_tool_errors(kinetics, arguments, code) -> None:
    kinetics.reset(2)
    result = kinetics.call_tool("submit_enzyme_kinetics", arguments)
    assert not result.ok and result.error["code"] == code, result.error
    assert not kinetics.done and kinetics.task.submission is None
    ok = kinetics.call_tool(
        "submit_enzyme_kinetics", {"km": _mm(1e-3), "kcat": {"value": 600, "unit": "1 / minute"}}
    )
    assert ok.ok and kinetics.terminated
    assert kinetics.task.submission == {"km_molar": pytest.approx(1e-3), "kcat_per_s": 10.0}


@pytest.mark.parametrize(
    "mechanism, field",
    [
        ({"competitive": 0.5, "noncompetitive": 0.2, "uncompetitive": 0.2}, "/mechanism"),
        ({"competitive": 1.5, "noncompetitive": -0.5, "uncompetitive": 0.0}, "/mechanism/"),
        ({"competitive": 0.5, "noncompetitive": 0.5, "uncompetitive": math.nan}, "/mechanism/"),
    ],
)
def test_mechanism_probabilities_must_be_probabilities(inhibition, mechanism, field) -> None:
    inhibition.reset(3)
    arguments = {"km": _mm(1e-3), "kcat": _per_s(10), "ki": _mm(1e-4), "mechanism": mechanism}
    result = inhibition.call_tool("submit_enzyme_inhibition", arguments)
    assert not result.ok and result.error["field"].startswith(field), result.error
    assert not inhibition.done


def test_kinetics_score_is_the_product_of_two_log_normal_terms(kinetics) -> None:
    kinetics.reset(4)
    truth = _truth(kinetics)
    task = kinetics.task

    def raw(km: float, kcat: float) -> float:
        task.submission = {"km_molar": km, "kcat_per_s": kcat}
        return task.score(kinetics.lab)["raw"]

    km, kcat = truth["km_molar"], truth["kcat_per_s"]
    assert raw(km, kcat) == pytest.approx(1.0)
    off = math.exp(TAU)  # a factor e^τ off costs e^−½, either way
    assert raw(km * off, kcat) == pytest.approx(math.exp(-0.5))
    assert raw(km, kcat / off) == pytest.approx(math.exp(-0.5))
    assert raw(km * 1.1, kcat * 0.9) == pytest.approx(
        math.exp(-(math.log(1.1) ** 2 + math.log(0.9) ** 2) / (2 * TAU**2))
    )
    assert raw(km * 10, kcat) == pytest.approx(math.exp(-(math.log(10.0) ** 2) / (2 * TAU**2)))
    assert raw(km * 10, kcat) < 1e-12
    assert log_term(0.0, 1.0) == 0.0
    task.submission = None
    assert task.score(kinetics.lab) == {"raw": 0.0}


def test_inhibition_score_adds_ki_and_a_brier_term(inhibition) -> None:
    inhibition.reset(5)
    truth, hidden = _truth(inhibition), _inhibition(inhibition)
    task = inhibition.task
    true_mechanism = hidden["mechanism"]

    def score(probabilities: dict[str, float], ki_factor: float = 1.0) -> dict[str, float]:
        task.submission = {
            "km_molar": truth["km_molar"],
            "kcat_per_s": truth["kcat_per_s"],
            "ki_molar": hidden["ki_molar"] * ki_factor,
            "mechanism": probabilities,
        }
        return task.score(inhibition.lab)

    certain = {m: float(m == true_mechanism) for m in MECHANISMS}
    wrong = {m: float(m == next(x for x in MECHANISMS if x != true_mechanism)) for m in MECHANISMS}
    uniform = dict.fromkeys(MECHANISMS, 1 / 3)
    assert score(certain)["raw"] == pytest.approx(1.0)
    assert score(wrong)["raw"] == pytest.approx(0.0)
    assert score(uniform)["raw"] == pytest.approx(2 / 3)  # Brier 2/3
    assert score(certain, math.exp(TAU))["raw"] == pytest.approx(math.exp(-0.5))
    # proper: reporting the truth's probability 0.7 beats rounding it up to certainty when
    # the truth is the 30 %: expected scores under p = (0.7, 0.3, 0)
    others = [m for m in MECHANISMS if m != true_mechanism]
    honest = {true_mechanism: 0.7, others[0]: 0.3, others[1]: 0.0}
    sure = {true_mechanism: 1.0, others[0]: 0.0, others[1]: 0.0}
    flipped = {m: 1.0 - p if m != others[1] else 0.0 for m, p in honest.items()}

    def expected(report: dict[str, float]) -> float:
        right = 1 - sum((report[m] - (m == true_mechanism)) ** 2 for m in MECHANISMS) / 2
        alt = 1 - sum((report[m] - (m == others[0])) ** 2 for m in MECHANISMS) / 2
        return 0.7 * right + 0.3 * alt

    assert expected(honest) > expected(sure) > expected(flipped)


@pytest.mark.parametrize("task", ["enzyme_kinetics", "enzyme_inhibition"])
def test_expert_beats_naive_and_same_seed_gives_the_same_reward(task, kinetics, inhibition) -> None:
    session = kinetics if task == "enzyme_kinetics" else inhibition
    session.reset(6)
    session.task.naive(session)
    naive = session.score()
    session.reset(6)
    session.task.expert(session)
    expert = session.score()
    # the lot's and the day's factors cap the expert near 10 % (see kinetics.toml)
    assert expert.success and expert.raw > 0.6, expert
    assert naive.raw < 0.2 and not naive.success, naive
    session.reset(6)
    session.task.expert(session)
    assert session.score() == expert


def test_serial_dilution_rows_hold_their_levels(kinetics) -> None:
    """Two rows of a seven-level serial dilution, pipetted in two batches: every well ends
    with 100 µL of pNPP at twice its level (true contents, relative to the true stock; the
    channels' biases add up along a row), each step the series' ratio within 1.5 %."""
    kinetics.reset(12)
    assay = Assay(kinetics)
    levels = list(np.geomspace(4e-5, 1e-3, 7))
    rows = serial_dilution(assay, levels, rows=2)
    assay.pipette()
    assert kinetics.usage.calls == 3  # the deck, the buffer's batch and the rest
    world = kinetics.lab.shared["world"]

    def pnpp(container: str) -> float:
        held = world.contents(container).concentrations()
        return held.get("pnpp", 0.0) + held.get("p_nitrophenol", 0.0)

    strength = pnpp(assay.stock["pnpp"]) / assay.molar["pnpp"]  # the label's hidden error
    ratio = levels[1] / levels[0]
    for row in rows:
        assert [s for _, s in row] == pytest.approx(levels[::-1])
        for well, s in row:
            assert world.contents(well).volume_ul == pytest.approx(100.0, abs=3.5)
            assert pnpp(well) / (2.0 * s * strength) == pytest.approx(1.0, abs=0.05), well
        for (upper, _), (lower, _) in pairwise(row):
            assert pnpp(upper) / pnpp(lower) == pytest.approx(ratio, rel=0.015), lower


def test_a_dilution_of_less_than_one_and_a_quarter_fold_is_refused(kinetics) -> None:
    kinetics.reset(12)
    assay = Assay(kinetics)
    with pytest.raises(ValueError, match=r"at least 1\.25-fold"):
        prepare(assay, "pnpp", [(assay.molar["pnpp"] / 1.1, 100.0)])
    assert prepare(assay, "pnpp", [(assay.molar["pnpp"], 100.0)]) == [assay.stock["pnpp"]]


@pytest.mark.parametrize("task", ["enzyme_kinetics", "enzyme_inhibition"])
def test_a_rewound_session_scores_as_fresh_sessions(task) -> None:
    """One session over seeds 7 then 8 then 7 against a new session per seed."""
    rewards = []
    with Session(task, secret="t") as reused:
        for seed in (7, 8, 7):
            reused.reset(seed)
            reused.task.expert(reused)
            rewards.append(reused.score())
    fresh = []
    for seed in (7, 8):
        with Session(task, secret="t") as session:
            session.reset(seed)
            session.task.expert(session)
            fresh.append(session.score())
    assert rewards == [fresh[0], fresh[1], fresh[0]]


@pytest.mark.parametrize("task", ["enzyme_kinetics", "enzyme_inhibition"])
@pytest.mark.parametrize("protocol", ["expert", "naive"])
def test_nothing_the_agent_sees_reveals_hidden_truth(task, protocol, kinetics, inhibition) -> None:
    """Statement, state and every tool result: no hidden value (5+ significant digits, in the
    units an agent would use), no mechanism name."""
    session = kinetics if task == "enzyme_kinetics" else inhibition
    observation = session.reset(9)
    getattr(session.task, protocol)(session)
    text = seen_by_agent(session, {})  # the statement names all three mechanisms, by design
    truth = session.lab.shared["world"].hidden_truth()
    assert f"kinetics/{ALP}" in truth and observation["task"]
    assert_not_revealed(text, hidden_numbers(truth))
    if task == "enzyme_inhibition":
        assert not any(m in text.lower() for m in MECHANISMS)


def test_no_submission_scores_zero(inhibition) -> None:
    inhibition.reset(10)
    reward = inhibition.score()
    assert reward.raw == 0.0 and reward.total == 0.0 and not reward.success


def test_a_vanishing_kcat_scores_zero_and_scoring_never_raises(kinetics) -> None:
    # 5e-324 / kcat underflowed to 0 before the log: score() raised "math domain error",
    # and kept raising on every later call
    kinetics.reset(4)
    result = kinetics.call_tool("submit_enzyme_kinetics", {"km": _mm(1e-3), "kcat": _per_s(5e-324)})
    assert result.ok and kinetics.terminated
    first, again = kinetics.score(), kinetics.score()
    assert first == again
    assert first.total == 0.0 and first.components["kcat_term"] == 0.0
    assert "unscorable" not in first.components
    assert log_term(5e-324, 250.0) == 0.0
    assert log_term(1e308, 1e-3) == 0.0
    assert log_term(250.0 * math.exp(TAU), 250.0) == pytest.approx(math.exp(-0.5))


def test_a_task_that_cannot_score_gives_zero_with_the_reason_and_logs_it(
    kinetics, monkeypatch, caplog
) -> None:
    kinetics.reset(5)

    def broken(lab):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(kinetics.task, "score", broken)
    with caplog.at_level("ERROR", logger="labtools.session.reward"):
        result = kinetics.call_tool("submit_enzyme_kinetics", {"km": _mm(1e-3), "kcat": _per_s(9)})
    assert result.ok and kinetics.terminated  # the episode's end event scored it, no exception
    reward = kinetics.score()
    assert reward.total == 0.0 and not reward.success
    assert reward.components == {"unscorable": "ZeroDivisionError: float division by zero"}
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)


@pytest.mark.parametrize("raw", [math.nan, math.inf, 1.5, -0.1])
def test_a_raw_score_outside_zero_to_one_is_unscorable(kinetics, monkeypatch, raw) -> None:
    kinetics.reset(5)
    monkeypatch.setattr(kinetics.task, "score", lambda lab: {"raw": raw})
    reward = kinetics.score()
    assert reward.total == 0.0 and "not within 0–1" in reward.components["unscorable"]


def test_a_component_that_is_not_finite_is_kept_as_text(kinetics, monkeypatch) -> None:
    kinetics.reset(5)
    monkeypatch.setattr(kinetics.task, "score", lambda lab: {"raw": 0.5, "ratio": math.inf})
    reward = kinetics.score()
    assert reward.components == {"ratio": "inf", "outcome": 0.5}
    assert reward.raw == 0.0  # not terminated: no submission


@pytest.mark.parametrize("task", ["enzyme_kinetics", "enzyme_inhibition"])
def test_the_wells_constants_differ_from_the_truth_by_the_cited_spread(task) -> None:
    """What a perfect measurement recovers (the constants at work, per labelled active site)
    is not the truth: over seeds the ln ratios spread as kinetics.toml says (Km 8 %, kcat
    √(10² + 6²) ≈ 12 %, Ki 6 %), so submitting it scores well but not 1."""
    km, kcat, ki, raws = [], [], [], []
    with Session(task, secret="enzyme spread") as session:
        for seed in range(150):
            session.reset(seed)
            kinetics = session.lab.shared["world"].kinetics
            truth, work = kinetics.enzyme(ALP), kinetics.at_work(ALP)
            km.append(math.log(work["km_molar"] / truth["km_molar"]))
            kcat.append(math.log(work["kcat_per_s"] / truth["kcat_per_s"]))
            session.task.submission = {
                "km_molar": work["km_molar"],
                "kcat_per_s": work["kcat_per_s"],
            }
            if task == "enzyme_inhibition":
                hidden = kinetics.inhibition_at_work(INHIBITOR)
                ki.append(math.log(hidden["ki_molar"] / kinetics.inhibition(INHIBITOR)["ki_molar"]))
                session.task.submission |= {
                    "ki_molar": hidden["ki_molar"],
                    "mechanism": {m: float(m == hidden["mechanism"]) for m in MECHANISMS},
                }
            raws.append(session.task.score(session.lab)["raw"])
    assert np.std(km) == pytest.approx(0.08, rel=0.2)
    assert np.std(kcat) == pytest.approx(math.hypot(0.10, 0.06), rel=0.2)
    if ki:
        assert np.std(ki) == pytest.approx(0.06, rel=0.2)
    assert 0.8 < np.mean(raws) < 0.97 and min(raws) > 0.4


@pytest.mark.parametrize("task", ["enzyme_kinetics", "enzyme_inhibition"])
@pytest.mark.parametrize("agent", ["prior", "inversion"])
def test_shortcuts_without_a_measurement_score_near_zero(task, agent) -> None:
    """The centre of the prior from the labels, and the package's own values: ≤ 0.2
    normalised on the evaluation seeds 0–19, with at most two calls and no success."""
    report = evaluate(task, agent, range(20), secret=DEV_SECRET)
    assert report.mean_normalized <= 0.2, report
    assert report.pass_k == 0.0 and report.mean_cost["calls"] <= 2, report
