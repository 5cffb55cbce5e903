"""Episodes as chat-with-tool-calls records for trainers: structure, reward, no leaks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from labtools.session.evaluate import evaluate, play
from labtools.session.session import Session
from labtools.session.trajectory import (
    IncompleteJournal,
    from_journal,
    from_session,
    read_jsonl,
    write_jsonl,
)

TASK = "dye_quantification"
SECRET = "test-trajectory"


@pytest.fixture(scope="module")
def session():
    with Session(TASK, secret=SECRET) as instance:
        yield instance


def _episode(session: Session, agent: str, seed: int, **options) -> dict:
    observation = play(session, agent, seed)
    return from_session(session, observation["task"], **options)


def _check_structure(record: dict) -> None:
    """What chat templates and TRL's tool-calling datasets read."""
    messages = record["messages"]
    roles = [m["role"] for m in messages]
    assert roles[:2] == ["system", "user"]
    assert roles[2:] == ["assistant", "tool"] * ((len(roles) - 2) // 2)
    assert all(isinstance(m["content"], str) for m in messages)
    for call, result in zip(messages[2::2], messages[3::2], strict=True):
        (tool_call,) = call["tool_calls"]
        assert set(tool_call) == {"id", "type", "function"} and tool_call["type"] == "function"
        assert set(tool_call["function"]) == {"name", "arguments"}
        assert result["tool_call_id"] == tool_call["id"]  # every call has its result
        assert result["name"] == tool_call["function"]["name"]
        json.loads(result["content"])  # compact JSON text
    assert len({m["tool_calls"][0]["id"] for m in messages[2::2]}) == len(messages[2:]) // 2
    names = {t["function"]["name"] for t in record["tools"]}
    assert all(t["type"] == "function" for t in record["tools"])
    assert {m["name"] for m in messages[3::2]} <= names


def test_an_expert_episode_as_a_record(session, tmp_path) -> None:
    record = _episode(session, "expert", 3)
    _check_structure(record)
    reward = session.score()
    assert record["reward"] == reward.total > 0.5 and record["success"]
    assert record["components"] == reward.components
    assert record["terminated"] and not record["truncated"]
    assert record["usage"] == session.usage.as_dict()
    assert record["task"] == TASK and record["seed"] == 3
    calls = [e for e in session.lab.journal.events() if "tool" in e]
    assert [m["tool_calls"][0]["function"] for m in record["messages"][2::2]] == [
        {"name": e["tool"], "arguments": e["arguments"]} for e in calls
    ]
    assert record["messages"][-2]["tool_calls"][0]["function"]["name"].startswith("submit_")
    # what the agent saw tells neither the seed's secret nor the episode
    seen = json.dumps([record["messages"], record["tools"]])
    for hidden in (SECRET, session.secret_id, session.episode_id, str(session.world_seed(3))):
        assert hidden not in seen
    path = tmp_path / "episodes.jsonl"
    assert write_jsonl(path, [record, record]) == 2
    assert read_jsonl(path) == [record, record]


def test_refused_calls_and_unfinished_episodes(session) -> None:
    record = _episode(session, "random", 5, system=None, arguments="string")
    assert record["messages"][0]["role"] == "user"
    results = [json.loads(m["content"]) for m in record["messages"][2::2]]
    assert any("error" in r and r["error"]["code"] for r in results)  # refusals as the model reads
    calls = [m["tool_calls"][0]["function"]["arguments"] for m in record["messages"][1::2]]
    assert all(isinstance(json.loads(a), dict) for a in calls)  # JSON text (OpenAI's form)
    assert record["reward"] == session.score().total
    session.reset(6)
    session.call_tool("lh_get_deck", {})
    unfinished = from_session(session, "statement")
    assert not unfinished["terminated"] and unfinished["reward"] == 0.0
    assert len(unfinished["messages"]) == 4


def test_a_journal_without_its_reset_is_refused(session) -> None:
    session.reset(2)
    session.call_tool("lh_get_deck", {})
    events = session.lab.journal.events()[1:]
    with pytest.raises(IncompleteJournal, match="journal_dir"):
        from_journal(events, statement="s", tools=[], reward=session.score())


def test_eval_cli_exports_one_jsonl_per_task_on_any_backend(tmp_path) -> None:
    """``--export`` writes a record per episode; ``--workers 2`` (two processes) prints the
    same report and exports the same records as one process (episode ids aside)."""

    def run(directory, *more: str) -> tuple[dict, list[dict]]:
        args = ["--task", TASK, "--agent", "expert", "--seeds", "3", "--json", *more]
        done = subprocess.run(
            [sys.executable, "-m", "labtools", "eval", *args, "--export", str(directory)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert [p.name for p in directory.iterdir()] == [f"{TASK}.jsonl"]
        return json.loads(done.stdout), read_jsonl(directory / f"{TASK}.jsonl")

    report, records = run(tmp_path / "one")
    expected = evaluate(TASK, "expert", range(3)).as_dict()
    assert report == {k: expected[k] for k in report}  # every key the CLI prints, as evaluated
    assert [r["seed"] for r in records] == [0, 1, 2]
    assert {r["agent"] for r in records} == {"expert"}
    assert report["mean_reward"] == pytest.approx(sum(r["reward"] for r in records) / 3)
    for record in records:
        _check_structure(record)
    parallel_report, parallel = run(tmp_path / "two", "--workers", "2")
    assert parallel_report == report

    def strip(r: dict) -> dict:
        return {k: v for k, v in r.items() if k != "episode_id"}

    assert [strip(r) for r in parallel] == [strip(r) for r in records]
