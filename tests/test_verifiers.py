"""The verifiers taskset, loaded and run by verifiers itself (0.4): its loader finds
``labtools_verifiers``, its eval runner launches the tool server per rollout and its null
harness (a chat program run by uv) drives a scripted model over MCP.

verifiers pins mcp 2.0.0, so the dev install has it only on Python 3.11 (pyproject.toml); the
3.13 run of the suite covers the newest mcp instead and skips this module.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 12) and importlib.util.find_spec("verifiers") is None:
    pytest.skip(
        "verifiers is installed for Python 3.11 only (it pins mcp 2.0.0)", allow_module_level=True
    )

import verifiers.v1 as vf
from episodes import expert_episode
from scripted_endpoint import ChatAgent

from labtools.providers.calls import result_json
from labtools.session import Session
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.verifiers import SECRET_ENV, LabData

SECRET = "verifiers-test-secret"
TASK = "dye_quantification"
SEED = 3
#: a call the lab refuses (a volume in metres), which changes nothing
REFUSED = (
    "lh_transfer",
    {
        "transfers": [
            {
                "source": "reservoir:A1",
                "destination": "plate_1:A1",
                "volume": {"value": 1, "unit": "meter"},
            }
        ],
        "tip_rack": "tips_300ul",
        "tips": "new",
        "channels": [],
        "mix_cycles": 0,
        "mix_volume": {"value": 0, "unit": "microliter"},
    },
)


def _taskset(**config: Any) -> Any:
    data = {"id": "labtools_verifiers", **config}
    return vf.load_taskset(vf.taskset_config_type("labtools_verifiers").model_validate(data))


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test as a new process: no secret read yet."""
    monkeypatch.setattr("labtools.session.verifiers._SECRETS", {})


def test_the_taskset_rows_are_typed_and_hold_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    tasks = list(_taskset(lab_tasks=[TASK, "standard_curve"], seeds=[3, 4]))
    # the secret left the environment when the taskset read it: nothing started later
    # (a tool server, an agent's shell) inherits it; a second taskset has the same one
    assert SECRET_ENV not in os.environ and tasks[0]._secret == SECRET
    assert _taskset(lab_tasks=[TASK], seeds=[3])._secret == SECRET
    assert [(t.data.lab_task, t.data.seed) for t in tasks] == [
        (TASK, 3),
        (TASK, 4),
        ("standard_curve", 3),
        ("standard_curve", 4),
    ]
    with Session(TASK, secret=SECRET) as session:  # the statements are the secret's worlds'
        assert tasks[1].data.prompt == session.reset(4)["task"]
    assert all(isinstance(t.data, LabData) and t.data.system_prompt == INSTRUCTIONS for t in tasks)
    # what verifiers records and writes: the rows and the config, neither with the secret
    wire = json.dumps([t.data.model_dump(mode="json") for t in tasks])
    assert SECRET not in wire and SECRET not in tasks[0].config.model_dump_json()


def test_without_a_secret_a_process_draws_one_and_sets_no_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    first = list(_taskset(lab_tasks=[TASK], seeds=[0]))
    again = list(_taskset(lab_tasks=[TASK], seeds=[0]))
    assert SECRET_ENV not in os.environ
    assert len(first[0]._secret) == 32 and first[0]._secret == again[0]._secret
    assert first[0]._secret not in first[0].data.model_dump_json()


@pytest.fixture
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The null harness runs uv from PATH: this environment's, with a cache inside it."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("UV_CACHE_DIR", str(Path(sys.prefix) / "uv-cache"))
    # verifiers' runtime work directories and locks, here rather than in ~/.cache/verifiers
    monkeypatch.setattr("verifiers.v1.runtimes.subprocess.CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr("verifiers.v1.runtimes.limiters.LIMITER_DIR", tmp_path / "limiter")
    monkeypatch.setenv(SECRET_ENV, SECRET)  # read when the taskset is made
    monkeypatch.setenv("SCRIPTED_MODEL_KEY", "not-a-key")
    return tmp_path


def test_verifiers_runs_the_expert_to_the_sessions_reward(hermetic: Path) -> None:
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    played = expert_episode(TASK, SEED, SECRET, first=(REFUSED,))
    calls, texts = played.calls, [result_json(r) for r in played.results]
    assert texts[0].startswith('{"error":{"code":"unit_error"') and played.reward.success
    with ChatAgent(calls) as model:
        config = EvalConfig(
            env={
                "taskset": {"id": "labtools_verifiers", "lab_tasks": [TASK], "seeds": [SEED]},
                "agent": {
                    "harness": {"id": "null"},
                    "max_turns": len(calls) + 3,
                    "runtime": {"type": "subprocess"},
                },
            },
            select={"limit": 1},
            num_rollouts=1,
            rich=None,
            push=False,
            output_dir=hermetic,
            run={"dir": "run"},
            model="scripted",
            client={
                "type": "eval",
                "base_url": f"{model.url}/v1",
                "api_key_var": "SCRIPTED_MODEL_KEY",
            },
        )
        episodes = asyncio.run(run_eval(config))
    assert SECRET_ENV not in os.environ  # taken before any tool server or agent started
    [trace] = [trace for episode in episodes for trace in episode.traces]

    assert trace.stop_condition == "episode_ended", trace
    assert trace.rewards["session_reward"].score == played.reward.total
    assert trace.metrics["calls"] == len(calls)
    assert trace.metrics["normalized"] == played.reward.normalized
    # the model was offered the session's tools, under their own names and schemas ...
    offered = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in model.requests[0]["body"]["tools"]
    }
    with Session(TASK, secret=SECRET) as session:
        assert offered == {t["name"]: t["inputSchema"] for t in session.tools("mcp")}
    # ... and read back, call for call, what the same calls give in process
    last = model.requests[-1]["body"]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == texts[: len(calls) - 1]
    assert len(model.requests) == len(calls)  # the submission ended the rollout
    for path in hermetic.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
