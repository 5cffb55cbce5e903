"""Grounded-reward sessions: episodes, budgets, hidden truth, replay, adapters."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import anyio
import pytest
from mcp import Client

from labtools.journal import read_journal
from labtools.session import Session
from labtools.session.registry import task_ids
from labtools.session.replay import replay
from labtools.simulators.tasks.dye_quantification import PRESENT_UM, DyeQuantification

TASK = "dye_quantification"
DYE_NAMES = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")


@pytest.fixture(scope="module")
def session():
    with Session(TASK, secret="test-session") as instance:
        yield instance


def test_reset_gives_the_task_the_tools_and_the_budget(session) -> None:
    observation = session.reset(3)
    assert set(observation) == {"task", "tools", "budget"}
    assert "submit_dye_quantification" in observation["tools"]
    assert "lh_transfer" in observation["tools"]
    assert observation["budget"]["calls"] == DyeQuantification.budget.calls
    state = session.state()
    assert state["steps"] == 0 and not state["terminated"] and state["virtual_time_s"] == 0


def test_submitting_ends_the_episode_and_later_calls_are_refused(session) -> None:
    session.reset(4)
    bad = session.call_tool("submit_dye_quantification", {"concentrations": {}})
    assert not bad.ok and not session.done  # a malformed submission is an ordinary refusal
    zero = {"value": 0, "unit": "micromolar"}
    answer = {d: zero for d in ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")}
    assert session.call_tool("submit_dye_quantification", {"concentrations": answer}).ok
    assert session.terminated and session.done
    after = session.call_tool("lh_get_deck", {})
    assert after.error["code"] == "precondition_failed" and "ended" in after.error["message"]
    reward = session.score()
    assert reward.raw == 0 and reward.total == 0 and not reward.success
    assert "score" not in " ".join(session.tool_names())


def test_exceeding_the_budget_truncates(session) -> None:
    class Tight(DyeQuantification):
        budget = replace(DyeQuantification.budget, calls=3)

    with Session(Tight()) as tight:
        tight.reset(1)
        for _ in range(4):
            tight.call_tool("lh_get_deck", {})
        assert tight.truncated and not tight.terminated
        assert tight.score().total == 0
        assert tight.call_tool("lh_get_deck", {}).error["code"] == "precondition_failed"


def test_the_expert_is_scored_from_hidden_truth(session) -> None:
    session.reset(7)
    session.task.expert(session)
    reward = session.score()
    truth = session.lab.shared["world"].hidden_truth()["task/dye_quantification"]
    claimed = {k for k, v in session.task.submission.items() if v > PRESENT_UM}
    assert claimed == set(truth)
    assert reward.components["f1"] == 1.0
    for dye, true_um in truth.items():
        assert session.task.submission[dye] == pytest.approx(true_um, rel=0.08)
    assert reward.success and 0.5 < reward.total <= 1.2


def test_an_episode_journal_replays_exactly(tmp_path) -> None:
    with Session(TASK, secret="replayed", journal_dir=tmp_path) as session:
        session.reset(5)
        session.task.expert(session)
        path = tmp_path / f"{session.episode_id}.jsonl"
    events = read_journal(path)
    assert events[0]["event"] == "reset" and events[-1]["event"] == "end"
    assert events[-1]["reward"]["total"] > 0.5
    with pytest.raises(ValueError, match="secret"):
        replay(path)
    with pytest.raises(ValueError, match="another secret"):
        replay(path, secret="guessed")
    report = replay(path, secret="replayed")
    assert report.identical, report.differences
    assert report.calls == sum("tool" in e for e in events)
    # a tampered record is caught
    tampered = tmp_path / "tampered.jsonl"
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        event = json.loads(line)
        if event.get("tool") == "reader_read_absorbance_spectrum":
            event["data"]["peaks"]["A5"]["absorbance"] += 0.001
            lines[i] = json.dumps(event)
    tampered.write_text("\n".join(lines) + "\n")
    assert not replay(tampered, secret="replayed").identical
    # the command line: identical (0), a difference (1), a refusal said in one line (2)
    from labtools.cli import main

    assert main(["replay", str(path), "--secret", "replayed"]) == 0
    assert main(["replay", str(tampered), "--secret", "replayed"]) == 1
    assert main(["replay", str(path), "--secret", "guessed"]) == 2
    assert main(["replay", str(tmp_path / "none.jsonl"), "--secret", "replayed"]) == 2


def test_gymnasium_adapter_passes_the_env_checker() -> None:
    from gymnasium.error import ResetNeeded
    from gymnasium.utils.env_checker import check_env

    from labtools.session.gym import LabEnv

    env = LabEnv(TASK)
    check_env(env, skip_render_check=True)
    observation, info = env.reset(seed=2)
    tools = json.loads(observation)["tools"]
    assert info["episode_id"] and {t["name"] for t in tools} == set(env.session.tool_names())
    assert all(t["description"] and t["input_schema"]["type"] == "object" for t in tools)
    text, reward, terminated, truncated, _ = env.step("not json")
    assert json.loads(text)["error"]["code"] == "invalid_arguments" and reward == 0
    assert not terminated and not truncated
    zero = {"value": 0, "unit": "micromolar"}
    submit = {"concentrations": {d: zero for d in DYE_NAMES}}
    _, reward, terminated, _, _ = env.step(
        json.dumps({"tool": "submit_dye_quantification", "arguments": submit})
    )
    assert terminated
    with pytest.raises(ResetNeeded, match="ended"):  # no second reward, no penalty either
        env.step(json.dumps({"tool": "lh_get_deck", "arguments": {}}))
    assert env.session.score().total == reward and env.session.usage.calls == 2
    env.close()


def test_openenv_environment_in_process_and_its_mcp_agent_plane() -> None:
    from labtools.server import build_server
    from labtools.session.openenv import CallToolAction, LabEnvironment, ListToolsAction

    env = LabEnvironment(TASK)
    first = env.reset(seed=8, episode_id="ep-8")
    assert not first.done and first.metadata["episode_id"] == "ep-8"
    assert "submit_dye_quantification" in first.tool_names
    listed = env.step(ListToolsAction())
    assert [t.name for t in listed.tools] == first.tool_names
    deck = env.step(CallToolAction(tool_name="lh_get_deck", arguments={}))
    assert deck.result["ok"] and deck.reward is None and not deck.done

    async def agent_plane() -> None:
        async with Client(build_server(env.session)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "submit_dye_quantification" in names
            zero = {"value": 0, "unit": "micromolar"}
            done = await client.call_tool(
                "submit_dye_quantification", {"concentrations": {d: zero for d in DYE_NAMES}}
            )
            assert not done.is_error
            again = await client.call_tool("lh_get_deck", {})
            assert again.is_error

    anyio.run(agent_plane)
    assert env.state.terminated and env.state.step_count == 3
    assert env.state.episode_id == "ep-8"
    env.close()


def test_an_async_reset_rewinds_on_the_callers_loop_to_what_a_reset_gives() -> None:
    """``reset_async`` (an OpenEnv server's) rewinds and sets the instruments up on the
    server's own loop, never bridging to a helper thread through ``Lab.run``, and starts the
    same episode a synchronous reset on that seed does."""
    from unittest.mock import patch

    from labtools import Lab
    from labtools.session.openenv import CallToolAction, LabEnvironment

    def episode(env: LabEnvironment, first: Any) -> tuple[Any, ...]:
        deck = env.step(CallToolAction(tool_name="lh_get_deck", arguments={}))
        return first.task, first.tool_names, deck.result, env.session.lab.state()

    env = LabEnvironment(TASK, secret=b"async-reset")
    expected = episode(env, env.reset(seed=5))
    env.reset(seed=6)  # another world in between

    async def reset_on_this_loop() -> Any:
        with patch.object(Lab, "run", side_effect=AssertionError("bridged to a thread")):
            return await env.reset_async(seed=5)

    assert episode(env, asyncio.run(reset_on_this_loop())) == expected
    env.close()


def test_rollout_with_a_provider_sdk_against_a_scripted_endpoint() -> None:
    import anthropic
    from scripted_endpoint import ScriptedEndpoint

    from labtools.session.rollout import rollout

    zero = {"value": 0, "unit": "micromolar"}
    submit = {
        "concentrations": {
            d: zero for d in ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
        }
    }
    turn = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "lh_get_deck", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "submit_dye_quantification", "input": submit},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    final = {
        **turn,
        "id": "m2",
        "content": [{"type": "text", "text": "Submitted."}],
        "stop_reason": "end_turn",
    }
    with (
        ScriptedEndpoint([turn, final]) as endpoint,
        Session(TASK, secret="test-session") as session,
    ):
        client = anthropic.Anthropic(base_url=endpoint.url, api_key="x", max_retries=0)
        run, reward = rollout(client, "m", session, seed=9, provider="anthropic")
    assert run.stopped == "ended" and run.turns == 1 and session.terminated
    assert len(endpoint.requests) == 1  # no turn after the submission
    assert reward.total == 0.0  # all-zero answer: every present dye missed
    prompt = endpoint.requests[0]["body"]["messages"][0]["content"]
    assert prompt.startswith("The container reservoir:A10")


def test_an_openai_rollout_can_use_chat_completions() -> None:
    """The provider loop's own options pass through rollout: api="chat" talks Chat
    Completions to an endpoint that has no Responses API."""
    import openai
    from scripted_endpoint import ChatAgent

    from labtools.session.rollout import rollout

    zero = {"value": 0, "unit": "micromolar"}
    dyes = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
    calls = [
        ("lh_get_deck", {}),
        ("submit_dye_quantification", {"concentrations": dict.fromkeys(dyes, zero)}),
    ]
    with ChatAgent(calls) as endpoint, Session(TASK, secret="test-session") as session:
        client = openai.OpenAI(base_url=f"{endpoint.url}/v1", api_key="x", max_retries=0)
        run, reward = rollout(client, "m", session, seed=9, provider="openai", api="chat")
    assert run.stopped == "ended" and session.terminated and reward.total == 0.0
    assert {r["path"] for r in endpoint.requests} == {"/v1/chat/completions"}
    assert len(endpoint.requests) == 2


def test_eval_cli_prints_one_json_object_per_task() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "labtools",
            "eval",
            "--task",
            TASK,
            "--agent",
            "naive",
            "--seeds",
            "3",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {
        "task",
        "agent",
        "seeds",
        "mean_reward",
        "mean_normalized",
        "mean_raw",
        "k",
        "pass_k",
        "mean_cost",
    }  # what the text line prints
    assert report["seeds"] == 3 and report["mean_reward"] <= 0.2
    listed = subprocess.run(
        [sys.executable, "-m", "labtools", "eval", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert all(task in listed.stdout for task in task_ids())


def test_same_secret_same_seed_same_calls_same_reward() -> None:
    rewards = []
    for secret in ("lab-a", "lab-a", "lab-b"):
        with Session(TASK, secret=secret) as session:
            session.reset(21)
            session.task.expert(session)
            rewards.append(session.score())
    assert rewards[0] == rewards[1]
    assert rewards[2] != rewards[0]  # the seed alone does not decide the truth


def test_episode_ids_are_opaque_and_the_secret_is_drawn_when_not_given() -> None:
    with Session(TASK) as first, Session(TASK) as second:
        ids = []
        for _ in range(2):
            first.reset(3)
            ids.append(first.episode_id)
        assert ids[0] != ids[1] and all(i and "3" not in i.split("-") for i in ids)
        assert first.world_seed(3) != second.world_seed(3)
        assert first.secret_id != second.secret_id
    with pytest.raises(ValueError, match="non-negative"):
        Session(TASK, secret="x").world_seed(-1)


def test_a_reset_may_change_the_secret_and_a_refused_one_changes_nothing() -> None:
    """``reset(seed, secret=...)`` draws this and later episodes with that secret, as a
    session built with it would; a bad seed or secret is refused before the task or the secret
    changes."""
    with Session(TASK, secret="a") as switched, Session(TASK, secret="b") as built:
        switched.reset(5, secret="b")
        built.reset(5)
        assert switched.secret_id == built.secret_id
        assert switched.world_seed(5) == built.world_seed(5)
        switched.reset(6)  # the secret stays
        assert switched.world_seed(6) == built.world_seed(6)
        before = (switched.task.id, switched.secret_id, switched.episode_id)
        with pytest.raises(ValueError, match="non-negative"):
            switched.reset(-1, task="standard_curve", secret="c")
        with pytest.raises(TypeError, match="secret must be"):
            switched.reset(1, task="standard_curve", secret=3)  # type: ignore[arg-type]
        assert (switched.task.id, switched.secret_id, switched.episode_id) == before
