"""The verifiers taskset, loaded and run by verifiers itself (0.4): its loader finds
``labtools_verifiers``, its eval runner launches the taskset's one tool server and its null
harness (a chat program run by uv) drives a scripted model over MCP; and the tool server's
sessions, one per rollout, with their eviction rule.

verifiers pins mcp 2.0.0, so the dev install has it only on Python 3.11 (pyproject.toml); the
3.13 run of the suite covers the newest mcp instead and skips this module.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
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
from labtools.result import ToolResult
from labtools.session import Session
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.verifiers import (
    SECRET_ENV,
    LabData,
    LabState,
    LabToolset,
    LabToolsetConfig,
    Rollouts,
)

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


def _state(seed: int, key: str | None = None) -> LabState:
    """A rollout's state as a LabTask's setup leaves it."""
    key = key if key is not None else secrets.token_hex(16)
    return LabState(secret=SECRET, rollout=key, lab_task=TASK, seed=seed)


async def _play(rollouts: Rollouts, state: LabState, calls: list[tuple[str, Any]]) -> list[str]:
    return [result_json(await rollouts.call(state, name, args)) for name, args in calls]


def _refusal(result: ToolResult) -> tuple[str, str]:
    assert not result.ok and result.error is not None
    return result.error["code"], result.error["message"]


def test_each_rollout_plays_its_own_session_to_the_in_process_reward() -> None:
    played = {seed: expert_episode(TASK, seed, SECRET, first=(REFUSED,)) for seed in (3, 4)}
    rollouts = Rollouts()

    async def interleaved() -> dict[int, tuple[LabState, list[str]]]:
        states = {seed: _state(seed) for seed in played}
        texts: dict[int, list[str]] = {seed: [] for seed in played}
        for turn in range(max(len(p.calls) for p in played.values())):
            for seed, state in states.items():  # a call of one, then of the other
                if turn < len(played[seed].calls):
                    texts[seed] += await _play(rollouts, state, played[seed].calls[turn : turn + 1])
            assert len(rollouts) <= 2
        return {seed: (states[seed], texts[seed]) for seed in played}

    for seed, (state, texts) in asyncio.run(interleaved()).items():
        assert texts == [result_json(r) for r in played[seed].results]
        assert state.reward == played[seed].reward.total and state.reward > 0
        assert state.parts["normalized"] == played[seed].reward.normalized
        assert (state.calls, state.terminated, state.truncated) == (len(texts), True, False)
    assert len(rollouts) == 0  # each session closed when its episode ended


def test_a_rollout_reaches_no_session_but_the_one_its_key_names() -> None:
    played = expert_episode(TASK, SEED, SECRET)
    rollouts = Rollouts()

    async def run() -> None:
        first = _state(SEED)
        await _play(rollouts, first, played.calls[:2])
        # another rollout of the same row, with its own key: a fresh episode, not the first's
        other = _state(SEED)
        assert await _play(rollouts, other, played.calls[:1]) == [result_json(played.results[0])]
        assert len(rollouts) == 2
        # the first goes on where it was, undisturbed, to the in-process reward
        assert await _play(rollouts, first, played.calls[2:]) == [
            result_json(r) for r in played.results[2:]
        ]
        assert first.reward == played.reward.total
        assert (other.calls, other.terminated) == (1, False)
        # a request without a rollout's key (or its secret) opens nothing and is refused
        for keyless in (LabState(), _state(SEED, key=""), LabState(rollout="k", lab_task=TASK)):
            result = await rollouts.call(keyless, *played.calls[0])
            assert _refusal(result)[0] == "precondition_failed"
            assert "no rollout" in _refusal(result)[1]
        assert len(rollouts) == 1

    asyncio.run(run())


def test_at_most_max_sessions_are_open_and_the_least_recently_used_is_closed() -> None:
    played = expert_episode(TASK, SEED, SECRET)
    rollouts = Rollouts(max_sessions=2)

    async def run() -> None:
        a, b, c = _state(SEED), _state(SEED), _state(SEED)
        for state in (a, b):
            await _play(rollouts, state, played.calls[:1])
        await _play(rollouts, a, played.calls[1:2])  # b is now the least recently used
        await _play(rollouts, c, played.calls[:1])
        assert len(rollouts) == 2
        # b's session was closed: its next call is refused, ends its rollout, reopens nothing
        result = await rollouts.call(b, *played.calls[1])
        code, message = _refusal(result)
        assert code == "precondition_failed" and "2 newer rollouts" in message
        assert (b.calls, b.terminated, b.truncated, b.reward) == (2, False, True, 0.0)
        assert len(rollouts) == 2
        again = await rollouts.call(b, *played.calls[1])  # and so on, whatever it calls
        assert _refusal(again) == ("precondition_failed", "the episode has ended")
        # the open ones play on to the in-process reward
        await _play(rollouts, a, played.calls[2:])
        await _play(rollouts, c, played.calls[1:])
        assert a.reward == c.reward == played.reward.total
        assert len(rollouts) == 0

    asyncio.run(run())


def test_no_session_is_closed_during_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    played = expert_episode(TASK, SEED, SECRET)
    rollouts = Rollouts(max_sessions=1)
    release = asyncio.Event()
    plain = Session.acall_tool

    async def slow(self: Session, name: str, arguments: object, **kw: Any) -> ToolResult:
        if self.usage.calls == 1:  # each rollout's second call waits for the release
            await release.wait()
        return await plain(self, name, arguments, **kw)

    monkeypatch.setattr(Session, "acall_tool", slow)

    async def run() -> None:
        busy, other = _state(SEED), _state(SEED)
        await _play(rollouts, busy, played.calls[:1])
        in_call = asyncio.create_task(_play(rollouts, busy, played.calls[1:2]))
        await asyncio.sleep(0)  # busy's call is now waiting inside its session
        # a new rollout beyond max_sessions: busy's session stays open, one more opens
        assert await _play(rollouts, other, played.calls[:1]) == [result_json(played.results[0])]
        assert len(rollouts) == 2
        release.set()
        assert await in_call == [result_json(played.results[1])]
        await _play(rollouts, busy, played.calls[2:])
        assert busy.reward == played.reward.total

    asyncio.run(run())


def test_the_tool_server_is_one_verifiers_starts() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must be started by verifiers"):
        LabToolsetConfig(url="http://127.0.0.1:9/mcp")
    with pytest.raises(ValidationError, match="must be started by verifiers"):
        _taskset(lab_tasks=[TASK], seeds=[3], tools={"url": "http://127.0.0.1:9/mcp"})


def test_a_rollout_idle_for_idle_s_is_closed() -> None:
    played = expert_episode(TASK, SEED, SECRET)
    now = [0.0]
    rollouts = Rollouts(idle_s=60.0, clock=lambda: now[0])

    async def run() -> None:
        idle, busy = _state(SEED), _state(SEED)
        await _play(rollouts, idle, played.calls[:1])
        now[0] = 30.0
        await _play(rollouts, busy, played.calls[:1])
        now[0] = 60.0  # not yet: idle for exactly idle_s
        await _play(rollouts, busy, played.calls[1:2])
        assert len(rollouts) == 2
        now[0] = 60.5  # any request closes the sessions idle for longer
        await _play(rollouts, busy, played.calls[2:3])
        assert len(rollouts) == 1
        code, message = _refusal(await rollouts.call(idle, *played.calls[1]))
        assert code == "precondition_failed" and "no call for 60 s" in message
        assert idle.truncated and not idle.terminated and idle.reward == 0.0
        await _play(rollouts, busy, played.calls[3:])
        assert busy.reward == played.reward.total

    asyncio.run(run())


def test_a_call_after_the_episode_ended_is_refused_as_the_session_refuses_it() -> None:
    played = expert_episode(TASK, SEED, SECRET)
    rollouts = Rollouts()
    with Session(TASK, secret=SECRET) as session:  # the same calls in process
        session.reset(SEED)
        for name, arguments in played.calls:
            session.call_tool(name, arguments)
        late = session.call_tool(*played.calls[0])
        in_process = (session.usage.calls, session.score().total)

    async def run() -> tuple[LabState, ToolResult]:
        state = _state(SEED)
        await _play(rollouts, state, played.calls)
        assert len(rollouts) == 0
        return state, await rollouts.call(state, *played.calls[0])

    state, result = asyncio.run(run())
    assert _refusal(result) == _refusal(late)
    assert (state.calls, state.reward) == in_process
    assert state.terminated and not state.truncated


def test_a_rollout_its_server_does_not_know_is_not_given_a_new_session() -> None:
    played = expert_episode(TASK, SEED, SECRET)
    rollouts = Rollouts()  # as after a restart: the rollout made calls on another server
    state = _state(SEED)
    state.calls = 2
    result = asyncio.run(rollouts.call(state, *played.calls[2]))
    assert _refusal(result)[0] == "precondition_failed" and len(rollouts) == 0
    assert (state.calls, state.truncated, state.reward) == (3, True, 0.0)


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


def _descendants() -> dict[int, tuple[str, bytes]]:
    """This process's descendants: each one's command line and environment (Linux's /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    found, mine = {}, {os.getpid()}
    for _ in range(len(parents)):
        grown = {pid for pid, parent in parents.items() if parent in mine} - mine
        if not grown:
            break
        mine |= grown
    for pid in mine - {os.getpid()}:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            found[pid] = (command, Path(f"/proc/{pid}/environ").read_bytes())
        except OSError:
            continue
    return found


class Watching(ChatAgent):
    """The expert's calls for the seed whose statement the prompt is; at every request, the
    processes the eval has started (the tool servers, the chat programs) and whether any
    has the secret in its environment."""

    def __init__(self, scripts: dict[str, list[tuple[str, Any]]]) -> None:
        super().__init__([])
        self.scripts = scripts
        self.servers: set[int] = set()
        self.exposed: list[str] = []

    def script(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        [prompt] = [m["content"] for m in body["messages"] if m["role"] == "user"]
        return self.scripts[prompt]

    def reply(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
        for pid, (command, environment) in _descendants().items():
            if "labtools.session.verifiers" in command:
                self.servers.add(pid)
            if SECRET.encode() in environment:
                self.exposed.append(command)
        return super().reply(body)


def _eval(model: ChatAgent, out: Path, lab_tasks: list[str], rollouts: int, turns: int) -> Any:
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    config = EvalConfig(
        env={
            "taskset": {"id": "labtools_verifiers", "lab_tasks": lab_tasks, "seeds": [SEED]},
            "agent": {
                "harness": {"id": "null"},
                "max_turns": turns,
                "runtime": {"type": "subprocess"},
            },
        },
        num_rollouts=rollouts,
        max_concurrent=4,
        rich=None,
        push=False,
        output_dir=out,
        run={"dir": "run"},
        model="scripted",
        client={"type": "eval", "base_url": f"{model.url}/v1", "api_key_var": "SCRIPTED_MODEL_KEY"},
    )
    return [trace for episode in asyncio.run(run_eval(config)) for trace in episode.traces]


def test_one_tool_server_runs_every_rollout_to_the_sessions_reward(hermetic: Path) -> None:
    tasks = [TASK, "standard_curve"]
    played = {
        TASK: expert_episode(TASK, SEED, SECRET, first=(REFUSED,)),
        "standard_curve": expert_episode("standard_curve", SEED, SECRET),
    }
    assert all(p.reward.success for p in played.values())
    texts = {task: [result_json(r) for r in p.results] for task, p in played.items()}
    assert texts[TASK][0].startswith('{"error":{"code":"unit_error"')
    statements, catalogues = {}, {}
    for task in tasks:
        with Session(task, secret=SECRET) as session:
            statements[session.reset(SEED)["task"]] = task
            catalogues[task] = {t["name"]: t["inputSchema"] for t in session.tools("mcp")}
    turns = max(len(p.calls) for p in played.values()) + 3
    with Watching({prompt: played[task].calls for prompt, task in statements.items()}) as model:
        traces = _eval(model, hermetic, tasks, rollouts=2, turns=turns)
    assert SECRET_ENV not in os.environ  # taken before any tool server or agent started

    # two rows (two tasks), two rollouts each, four at once: all on one tool server
    assert len(traces) == 4 and len(model.servers) == 1, model.servers
    # no process the eval started (the tool server, the chat programs) had the secret
    assert model.exposed == []
    for trace in traces:
        p = played[trace.task.data.lab_task]
        assert trace.stop_condition == "episode_ended", trace
        assert trace.rewards["session_reward"].score == p.reward.total
        assert trace.metrics["calls"] == len(p.calls)
        assert trace.metrics["normalized"] == p.reward.normalized
    for request in model.requests:
        body = request["body"]
        [prompt] = [m["content"] for m in body["messages"] if m["role"] == "user"]
        task = statements[prompt]
        # the model was offered the task's tools, under their own names and schemas ...
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
        assert offered == catalogues[task]
        # ... and read back, call for call, what the same calls give in process
        read = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        assert read == texts[task][: len(read)]
    assert len(model.requests) == sum(len(played[t.task.data.lab_task].calls) for t in traces)
    for path in hermetic.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_the_tool_server_refuses_a_request_without_a_rollouts_signed_address(
    hermetic: Path,
) -> None:
    from verifiers.v1.harnesses.utils.mcp import mcp_client
    from verifiers.v1.mcp.launch import serve_shared

    async def run() -> list[Any]:
        async with serve_shared([LabToolset(LabToolsetConfig(warm=[TASK]))]) as servers:
            [server] = servers.values()
            assert server.state_secret and server.state_secret not in server.url
            forged = (
                f"{server.url}?vf_state_url=http%3A%2F%2F127.0.0.1%3A9%2Fstate"
                f"&vf_state_route=another-rollout&vf_state_signature={'0' * 64}"
            )
            results = []
            for url in (server.url, forged):
                async with mcp_client({"url": url}) as client:
                    results.append(await client.call_tool(*REFUSED))
            return results

    bare, forged = asyncio.run(run())
    # without coordinates there is no state, so no rollout: refused, nothing opened
    assert bare.is_error
    assert json.loads(bare.content[0].text)["error"]["code"] == "precondition_failed"
    assert "no rollout" in bare.content[0].text
    # forged coordinates fail verifiers' signature check before any state is read
    assert forged.is_error and "invalid shared state coordinates" in forged.content[0].text
