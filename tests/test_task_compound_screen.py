"""T5 compound screen: the expert's verdicts and estimates, the naive protocol fooled by the
decoy, the shortcuts and verdicts without the deciding readings held down, the process rubric,
determinism under a fixed secret."""

from __future__ import annotations

import pytest

from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.evaluate import DEV_SECRET, evaluate
from labtools.simulators.tasks.compound_screen import P_INHIBITOR

TASK = "labtools.simulators.tasks.compound_screen:CompoundScreen"
SEEDS = range(10)
#: the seeds the verdict-only gambles are evaluated on (5 of the 20 compounds are decoys)
GAMBLE_SEEDS = range(20)
BUFFER, PNPP, ENZYME, COMPOUND = "reservoir:A2", "reservoir:A3", "reservoir:A5", "reservoir:A6"
#: the decoy verdict: P(inhibits) 0, and a Ki and mechanisms that count only for an inhibitor
DECOY_VERDICT = {
    "inhibits": 0.0,
    "ki": {"value": 1.0, "unit": "millimolar"},
    "mechanism": {"competitive": 1 / 3, "noncompetitive": 1 / 3, "uncompetitive": 1 / 3},
}
#: control wells (µL of each source in 200 µL): the compound without enzyme, a buffer blank,
#: a reaction without the compound (the pilot's top pNPP level, the enzyme stock)
CONTROL_WELLS = {
    "compound_only": [(BUFFER, 180.0), (COMPOUND, 20.0)],
    "blank": [(BUFFER, 200.0)],
    "reference": [(BUFFER, 80.0), (PNPP, 100.0), (ENZYME, 20.0)],
}


def _inhibits(session: Session) -> bool:
    return session.lab.shared["world"].hidden("compound_screen/case", lambda rng: {})["inhibits"]


def _ul(volume: float) -> dict[str, object]:
    return {"value": volume, "unit": "microliter"}


def _read_controls(session: Session, names: tuple[str, ...]) -> None:
    """Fill one plate_1 well per control in ``names`` and read each at 405 nm (one read per
    control), through tools only."""
    wells = [f"{row}1" for row in "ABCDEFGH"[: len(names)]]
    transfers = [
        {"source": source, "destination": f"plate_1:{well}", "volume": _ul(volume)}
        for name, well in zip(names, wells, strict=True)
        for source, volume in CONTROL_WELLS[name]
    ]
    session.call_tool(
        "lh_transfer",
        {
            "transfers": transfers,
            "tip_rack": "tips_300ul",
            "tips": "per_source",
            "channels": [],
            "mix_cycles": 0,
            "mix_volume": _ul(0.0),
        },
    ).unwrap()
    session.call_tool("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).unwrap()
    for well in wells:
        session.call_tool(
            "reader_read_absorbance",
            {
                "plate": "plate_1",
                "wells": [well],
                "wavelength": {"value": 405, "unit": "nanometer"},
            },
        ).unwrap()


def decoy_unread(session: Session, seed: int) -> None:
    """Gamble: "a decoy" with no reading at all."""
    session.call_tool("submit_compound_screen", DECOY_VERDICT).unwrap()


def decoy_after_controls(session: Session, seed: int) -> None:
    """Gamble: the compound without enzyme and a buffer blank read (the rubric's controls),
    the readings ignored, then "a decoy"."""
    _read_controls(session, ("compound_only", "blank"))
    session.call_tool("submit_compound_screen", DECOY_VERDICT).unwrap()


def decoy_after_unmatched_controls(session: Session, seed: int) -> None:
    """Gamble: the compound without enzyme and a reaction without the compound read (no
    reaction holds the compound), the readings ignored, then "a decoy"."""
    _read_controls(session, ("compound_only", "reference"))
    session.call_tool("submit_compound_screen", DECOY_VERDICT).unwrap()


GAMBLES = {
    "decoy_unread": decoy_unread,
    "decoy_after_controls": decoy_after_controls,
    "decoy_after_unmatched_controls": decoy_after_unmatched_controls,
}


@pytest.fixture(scope="module")
def session():
    with Session(TASK, secret=DEV_SECRET) as s:
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
    """Without reading anything a right verdict earns the prior's Brier score, 1 − (π − 0)²,
    and no more (the deciding readings are missing); a wrong one still earns 0."""
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
    assert rewards == [pytest.approx(1.0 - P_INHIBITOR**2), 0.0]


@pytest.mark.parametrize("agent", list(GAMBLES))
def test_a_decoy_verdict_without_the_deciding_readings_earns_the_prior(session, agent: str) -> None:
    seed = next(s for s in SEEDS if not (session.reset(s), _inhibits(session))[1])
    session.reset(seed)
    GAMBLES[agent](session, seed)
    assert session.score().components["verdict_term"] == pytest.approx(1.0 - P_INHIBITOR**2)


def test_the_expert_reads_what_decides_the_verdict(session) -> None:
    """On a decoy and on an inhibitor the expert's confident verdict is scored in full."""
    seen = set()
    for seed in SEEDS:
        session.reset(seed)
        inhibits = _inhibits(session)
        if inhibits in seen:
            continue
        seen.add(inhibits)
        session.task.expert(session)
        p = session.task.submission["inhibits"]
        assert session.score().components["verdict_term"] == pytest.approx(
            1.0 - (p - inhibits) ** 2
        )
    assert seen == {True, False}


@pytest.mark.parametrize("agent", list(GAMBLES))
def test_a_decoy_verdict_gamble_scores_at_most_0_2(
    session, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    """Mean normalised rewards on seeds 0–19 (5 decoys), measured: decoy_unread 0.028,
    decoy_after_controls 0.047, decoy_after_unmatched_controls 0.047. Scored by the Brier term
    alone, with no gate on the deciding readings (its anchors: naive 0.3078, expert 0.9864),
    the first two earn 0.181 and 0.226."""
    monkeypatch.setitem(AGENTS, agent, GAMBLES[agent])
    report = evaluate(TASK, agent, GAMBLE_SEEDS, session=session)
    assert report.mean_normalized <= 0.2, report


def test_the_expert_scores_at_least_0_9_where_the_gambles_are_measured(session) -> None:
    report = evaluate(TASK, "expert", GAMBLE_SEEDS, session=session)
    assert report.mean_normalized >= 0.9, report
    assert report.pass_k >= 0.8, report


def test_same_secret_same_seed_same_reward() -> None:
    results = []
    for _ in range(2):
        with Session(TASK, secret="compound screen tests") as s:
            s.reset(3)
            s.task.expert(s)
            results.append((s.task.submission, s.score().raw))
    assert results[0] == results[1]
