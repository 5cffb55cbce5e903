"""T7 dye stability: both verdicts occur behind one statement, the expert calls them and the
dye, the naive neat read is fooled by the over-range stock, the shortcuts stay low, and the
verdict is scored by a proper rule."""

from __future__ import annotations

import pytest

from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.simulators.tasks.dye_stability import LABEL_UM, THRESHOLD

TASK = "dye_stability"
SEEDS = range(12)


def _case(session: Session) -> dict:
    return session.lab.shared["world"].hidden("dye_stability/case", lambda rng: {})


def _degraded(session: Session) -> bool:
    return _case(session)["micromolar"] < THRESHOLD * LABEL_UM


@pytest.fixture(scope="module")
def session():
    with Session(TASK, secret=DEV_SECRET) as s:
        yield s


def test_every_dye_and_both_verdicts_occur_behind_one_statement(session) -> None:
    dyes, verdicts, statements = set(), set(), set()
    for seed in SEEDS:
        statements.add(session.reset(seed)["task"])
        dyes.add(_case(session)["dye"])
        verdicts.add(_degraded(session))
    assert dyes == {"tartrazine", "sunset_yellow", "allura_red"}
    assert verdicts == {True, False} and len(statements) == 1


def test_the_expert_names_the_dye_and_the_verdict_within_10_calls(session) -> None:
    for seed in SEEDS:
        session.reset(seed)
        session.task.expert(session)
        assert session.terminated and session.usage.calls <= 10
        submitted, case = session.task.submission, _case(session)
        assert submitted["dye"] == case["dye"]
        assert (submitted["degraded"] > 0.5) == _degraded(session)
        assert submitted["micromolar"] == pytest.approx(case["micromolar"], rel=0.08)
        components = session.score().components
        assert components["process"] == 1.0
    assert evaluate(TASK, "expert", SEEDS, session=session).mean_normalized >= 0.9


def test_a_neat_read_calls_every_intact_stock_degraded(session) -> None:
    intact = 0
    for seed in SEEDS:
        session.reset(seed)
        session.task.naive(session)
        assert session.task.submission["degraded"] > 0.5  # capped near 4 OD: "half faded"
        if not _degraded(session):
            intact += 1
            components = session.score().components
            assert components["verdict_term"] < 0.05  # 1 − 0.98²
            assert components["process"] < 0.5  # no blank, no standard, no replicate
    assert intact > 0


@pytest.mark.parametrize("agent", ["prior", "inversion", "naive"])
def test_shortcuts_score_at_most_0_2(session, agent: str) -> None:
    assert evaluate(TASK, agent, SEEDS, session=session).mean_normalized <= 0.2


def _submit(session: Session, dye: str, micromolar: float, p: float) -> dict[str, float]:
    session.call_tool(
        "submit_dye_stability",
        {
            "dye": dye,
            "concentration": {"value": micromolar, "unit": "micromolar"},
            "degraded": p,
        },
    ).unwrap()
    return session.score().components


def test_the_verdict_is_scored_by_brier_and_a_wrong_dye_scores_nothing(session) -> None:
    session.reset(2)
    case = _case(session)
    y = float(_degraded(session))
    for p in (0.0, 0.3, 1.0):
        session.reset(2)
        components = _submit(session, case["dye"], case["micromolar"], p)
        assert components["verdict_term"] == pytest.approx(1 - (p - y) ** 2)
        assert components["accuracy"] == pytest.approx(1.0)
    other = next(d for d in ("tartrazine", "sunset_yellow", "allura_red") if d != case["dye"])
    session.reset(2)
    assert _submit(session, other, case["micromolar"], y)["outcome"] == 0.0


def test_refusals_change_nothing(session) -> None:
    session.reset(0)
    for arguments, field in [
        (
            {"dye": "indigo", "concentration": {"value": 1, "unit": "micromolar"}, "degraded": 0.5},
            "/dye",
        ),
        (
            {
                "dye": "tartrazine",
                "concentration": {"value": 1, "unit": "micromolar"},
                "degraded": 1.5,
            },
            "/degraded",
        ),
        (
            {
                "dye": "tartrazine",
                "concentration": {"value": 1, "unit": "microliter"},
                "degraded": 0.5,
            },
            "/concentration/unit",
        ),
    ]:
        refused = session.call_tool("submit_dye_stability", arguments)
        assert not refused.ok and refused.error["field"] == field
        assert not session.done and session.task.submission is None


def test_same_secret_same_seed_same_reward() -> None:
    results = []
    for _ in range(2):
        with Session(TASK, secret="dye stability tests") as s:
            s.reset(5)
            s.task.expert(s)
            results.append((s.task.submission, s.score().raw))
    assert results[0] == results[1]
