"""T5 compound screen: the expert's verdicts and estimates, the naive protocol fooled by the
decoy, the shortcuts held down, the process rubric, determinism under a fixed secret."""

from __future__ import annotations

import pytest

from labtools.session import Session
from labtools.session.evaluate import EVALUATION_SECRET, evaluate

TASK = "labtools.simulators.tasks.compound_screen:CompoundScreen"
SEEDS = range(10)


def _inhibits(session: Session) -> bool:
    return session.lab.shared["world"].hidden("compound_screen/case", lambda rng: {})["inhibits"]


@pytest.fixture(scope="module")
def session():
    with Session(TASK, secret=EVALUATION_SECRET) as s:
        yield s


def test_both_cases_occur_and_the_statement_does_not_tell_them_apart(session) -> None:
    cases, statements = set(), set()
    for seed in SEEDS:
        statements.add(session.reset(seed)["task"])
        cases.add(_inhibits(session))
    assert cases == {True, False}
    assert len(statements) == 1


def test_expert_reaches_0_9_within_25_calls(session) -> None:
    for seed in SEEDS:
        session.reset(seed)
        session.task.expert(session)
        assert session.usage.calls <= 25
        assert session.terminated
    report = evaluate(TASK, "expert", SEEDS, session=session)
    assert report.mean_normalized >= 0.9


def test_expert_reads_the_compound_alone(session) -> None:
    session.reset(1)
    session.task.expert(session)
    components = session.score().components
    assert components["process/compound_only"] == 1.0


def test_naive_is_fooled_by_every_decoy(session) -> None:
    decoys = 0
    for seed in SEEDS:
        session.reset(seed)
        session.task.naive(session)
        if not _inhibits(session):
            decoys += 1
            assert session.task.submission["inhibits"] > 0.5
            assert session.score().components["process/compound_only"] == 0.0
    assert decoys > 0


@pytest.mark.parametrize("agent", ["prior", "inversion", "naive"])
def test_shortcuts_score_at_most_0_2(session, agent: str) -> None:
    assert evaluate(TASK, agent, SEEDS, session=session).mean_normalized <= 0.2


def test_a_confident_right_verdict_on_a_decoy_beats_a_wrong_one(session) -> None:
    seed = next(s for s in SEEDS if not (session.reset(s), _inhibits(session))[1])
    rewards = []
    for p in (0.0, 1.0):
        session.reset(seed)
        session.call_tool(
            "submit_compound_screen",
            {
                "inhibits": p,
                "ki": {"value": 1.0, "unit": "millimolar"},
                "mechanism": {"competitive": 1, "noncompetitive": 0, "uncompetitive": 0},
            },
        ).unwrap()
        rewards.append(session.score().components["verdict_term"])
    assert rewards == [1.0, 0.0]


def test_same_secret_same_seed_same_reward() -> None:
    results = []
    for _ in range(2):
        with Session(TASK, secret="compound screen tests") as s:
            s.reset(3)
            s.task.expert(s)
            results.append((s.task.submission, s.score().raw))
    assert results[0] == results[1]
