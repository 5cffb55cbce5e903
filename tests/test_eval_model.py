"""``labtools eval --model PROVIDER:NAME``: each provider's real SDK, through the command line,
against a model on 127.0.0.1 that replays the expert's recorded calls.

The replaying model is stateless: for each request it takes the task statement and the tool
results the conversation holds so far, finds the recorded episode they match (the results are
the lab's, so they tell the seeds apart) and makes that episode's next call, one per turn, with a
``usage`` block of known numbers. Rewards are checked against the same calls run in process on a
session with the same seed, tokens against what the endpoint served.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import statistics
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from labtools.cli import main
from labtools.providers.calls import result_json
from labtools.result import ToolResult
from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, play
from labtools.session.trajectory import read_jsonl

TASK = "dye_quantification"
TASKS = (TASK, "standard_curve")
SEEDS = 3
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


@dataclass(frozen=True)
class Recorded:
    """One expert episode: its task, seed, statement and calls with the results' JSON."""

    task: str
    seed: int
    statement: str
    calls: list[tuple[str, Any, Any]]  # name, arguments, the result as a model reads it


def record(task: str, seeds: range) -> list[Recorded]:
    """The expert's calls on ``task``, seed by seed, from the episodes' journals."""
    episodes = []
    with Session(task, secret=DEV_SECRET) as session:
        for seed in seeds:
            statement = play(session, "expert", seed)["task"]
            calls = [
                (
                    e["tool"],
                    e["arguments"],
                    _read(ToolResult(e["ok"], e.get("data"), e.get("error"))),
                )
                for e in session.lab.journal.events()
                if "tool" in e
            ]
            episodes.append(Recorded(task, seed, statement, calls))
    return episodes


def _read(result: ToolResult) -> Any:
    return json.loads(result_json(result))


def replay_in_process(episode: Recorded) -> dict[str, Any]:
    """The reward of the episode's calls made directly on a session with its seed."""
    with Session(episode.task, secret=DEV_SECRET) as session:
        session.reset(episode.seed)
        for name, arguments, _ in episode.calls:
            session.call_tool(name, arguments)
        return session.score().as_dict()


# -- the replaying model, in each API's format ------------------------------------------------


def _chat(body: dict[str, Any]) -> tuple[str, list[Any], str | None]:
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    first = next((m["tool_calls"][0]["id"] for m in messages if m.get("tool_calls")), None)
    return prompt, results, first


def _chat_reply(call_id: str, name: str, arguments: Any, tokens: tuple[int, int]) -> Any:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": f"chat-{call_id}",
        "object": "chat.completion",
        "created": 0,
        "model": "replay",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    }


def _chat_answer(text: str) -> Any:
    message = {"role": "assistant", "content": text}
    return {
        "id": "chat-answer",
        "object": "chat.completion",
        "created": 0,
        "model": "replay",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }


def _responses(body: dict[str, Any]) -> tuple[str, list[Any], str | None]:
    items = body["input"]
    prompt = next(i["content"] for i in items if i.get("role") == "user")
    results = [json.loads(i["output"]) for i in items if i.get("type") == "function_call_output"]
    first = next((i["call_id"] for i in items if i.get("type") == "function_call"), None)
    return prompt, results, first


def _responses_reply(call_id: str, name: str, arguments: Any, tokens: tuple[int, int]) -> Any:
    call = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    return {
        "id": f"resp_{call_id}",
        "object": "response",
        "created_at": 0,
        "model": "replay",
        "status": "completed",
        "output": [call],
        "usage": {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _anthropic(body: dict[str, Any]) -> tuple[str, list[Any], str | None]:
    messages = body["messages"]
    blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
    results = [json.loads(b["content"]) for b in blocks if b["type"] == "tool_result"]
    first = next((b["id"] for b in blocks if b["type"] == "tool_use"), None)
    return messages[0]["content"], results, first


def _anthropic_reply(call_id: str, name: str, arguments: Any, tokens: tuple[int, int]) -> Any:
    return {
        "id": f"msg_{call_id}",
        "type": "message",
        "role": "assistant",
        "model": "replay",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }


def _gemini(body: dict[str, Any]) -> tuple[str, list[Any], str | None]:
    parts = [p for c in body["contents"] for p in c["parts"]]
    responses = [p["functionResponse"]["response"] for p in parts if "functionResponse" in p]
    results = [r["output"] if "output" in r else {"error": r["error"]} for r in responses]
    first = next((p["functionCall"]["id"] for p in parts if "functionCall" in p), None)
    return parts[0]["text"], results, first


def _gemini_reply(call_id: str, name: str, arguments: Any, tokens: tuple[int, int]) -> Any:
    content = {
        "role": "model",
        "parts": [{"functionCall": {"id": call_id, "name": name, "args": arguments}}],
    }
    return {
        "candidates": [{"content": content, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": tokens[0],
            "candidatesTokenCount": tokens[1],
            "totalTokenCount": sum(tokens),
        },
    }


FORMATS = {
    "openai": (_chat, _chat_reply),
    "openai-responses": (_responses, _responses_reply),
    "anthropic": (_anthropic, _anthropic_reply),
    "gemini": (_gemini, _gemini_reply),
}


@dataclass
class ReplayModel:
    """A model on 127.0.0.1 (stdlib ``http.server`` on its own thread, port 0) replaying
    ``episodes`` in ``api``'s format. ``fail``: how many requests (from the first) get a 500;
    ``-1``: every one; ``fail_from``: every request from that one on (1: the first) does.
    ``gate``: the first requests of that many conversations wait for each
    other (episodes that do not run side by side never get past it). ``answer``: the text a
    Chat Completions conversation that matches no episode gets, at once. ``served``: per
    conversation, the recorded episode it turned out to be and the (input, output) tokens of
    each response."""

    episodes: list[Recorded]
    api: str = "openai"
    fail: int = 0
    fail_from: int | None = None
    gate: int = 0
    answer: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0
    gate_broken: bool = False
    served: dict[str, tuple[Recorded, list[tuple[int, int]]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._guard = threading.Lock()
        self._conversations = itertools.count(1)
        self._gate = threading.Barrier(self.gate) if self.gate else None
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply = model.reply(self.path, headers, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("retry-after-ms", "1")  # the SDKs' backoff, shortened
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        with self._guard:
            self.requests.append({"path": path, "headers": headers, "body": body})
            late = self.fail_from is not None and len(self.requests) >= self.fail_from
            if late or self.fail < 0 or len(self.requests) <= self.fail:
                self.failures += 1
                return 500, {"error": {"type": "server_error", "message": "scripted failure"}}
        read, write = FORMATS[self.api]
        prompt, results, first = read(body)
        turn = len(results)
        match = next(
            (
                (n, e)
                for n, e in enumerate(self.episodes)
                if e.statement == prompt
                and len(e.calls) > turn
                and [c[2] for c in e.calls[:turn]] == results
            ),
            None,
        )
        if match is None and self.answer is not None:
            return 200, _chat_answer(self.answer)
        if match is None:
            return 400, {"error": {"type": "invalid_request_error", "message": "no such episode"}}
        n, episode = match
        name, arguments, _ = episode.calls[turn]
        tokens = (1000 + 100 * turn + 10 * n, 7 + turn + n)
        with self._guard:
            conversation = first.partition("_")[0] if first else f"c{next(self._conversations)}"
            self.served.setdefault(conversation, (episode, []))
            self.served[conversation] = (episode, [*self.served[conversation][1], tokens])
            wait = first is None and self._gate is not None and int(conversation[1:]) <= self.gate
        if wait:
            assert self._gate is not None
            try:
                self._gate.wait(timeout=120)  # a guard against waiting for ever, not a budget
            except threading.BrokenBarrierError:
                self.gate_broken = True
        return 200, write(f"{conversation}_{turn + 1}", name, arguments, tokens)

    def tokens(self) -> dict[tuple[str, int], dict[str, int]]:
        """The tokens served per (task, seed): each conversation's sums."""
        return {
            (episode.task, episode.seed): {
                "input_tokens": sum(t[0] for t in served),
                "output_tokens": sum(t[1] for t in served),
                "unreported": 0,
            }
            for episode, served in self.served.values()
        }

    def __enter__(self) -> ReplayModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- running the command ------------------------------------------------------------------------


@dataclass(frozen=True)
class Eval:
    status: int
    rows: dict[str, dict[str, Any]]  # "<task> <agent>" -> its JSON object
    records: list[dict[str, Any]]  # the export, every task's
    out: str
    err: str


def run_eval(
    tmp: Path, model: ReplayModel, *options: str, tasks: tuple[str, ...] = (TASK,)
) -> Eval:
    """``labtools eval --agent expert --model <api>:replay --json --export`` on ``tasks``."""
    base = model.url if model.api in ("anthropic", "gemini") else f"{model.url}/v1"
    argv = ["eval", *(a for t in tasks for a in ("--task", t)), "--seeds", str(SEEDS)]
    argv += ["--agent", "expert", "--model", f"{model.api}:replay", "--base-url", base]
    argv += ["--json", "--export", str(tmp), *options]
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for key in KEYS:  # none: a --base-url endpoint gets the placeholder
            patch.delenv(key, raising=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    rows = {f"{row['task']} {row['agent']}": row for row in lines}
    records = [r for t in tasks for r in read_jsonl(tmp / f"{t}.jsonl")]
    return Eval(status, rows, records, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def expert() -> list[Recorded]:
    return [e for task in TASKS for e in record(task, range(SEEDS))]


@pytest.fixture(scope="module")
def serial(
    expert: list[Recorded], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Eval, ReplayModel]:
    """One run of the Chat Completions path on two tasks, one episode at a time."""
    with ReplayModel(expert) as model:
        tmp = tmp_path_factory.mktemp("serial")
        result = run_eval(tmp, model, "--concurrency", "1", tasks=TASKS)
    return result, model


def _strip(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without their random episode ids."""
    return [{k: v for k, v in r.items() if k != "episode_id"} for r in records]


REWARD = ("total", "raw", "normalized", "validity", "efficiency", "components", "success")
MODEL = f"{TASK} openai:replay"


def _model_records(result: Eval, label: str = "openai:replay") -> dict[tuple[str, int], Any]:
    return {(r["task"], r["seed"]): r for r in result.records if r["agent"] == label}


def test_the_model_rows_reward_is_its_calls_run_in_process(serial, expert) -> None:
    result, model = serial
    assert result.status == 0, result.err
    records = _model_records(result)
    assert sorted(records) == sorted((e.task, e.seed) for e in expert)
    for episode in expert:
        got = records[(episode.task, episode.seed)]
        want = replay_in_process(episode)
        assert {k: got["reward" if k == "total" else k] for k in REWARD} == want
        assert got["error"] is None and got["stopped"] == "ended"
        assert got["turns"] == len(episode.calls)  # one call a turn, none after the submission
        calls = [m["tool_calls"][0]["function"] for m in got["messages"] if "tool_calls" in m]
        assert [(c["name"], c["arguments"]) for c in calls] == [c[:2] for c in episode.calls]
    for task in TASKS:
        row, scripted = result.rows[f"{task} openai:replay"], result.rows[f"{task} expert"]
        mine = [records[(task, seed)] for seed in range(SEEDS)]
        assert row["seeds"] == SEEDS and row["k"] == 3 and row["errors"] == 0
        assert row["mean_reward"] == statistics.fmean(r["reward"] for r in mine)
        assert row["mean_raw"] == statistics.fmean(r["raw"] for r in mine)
        # the expert's calls score as the expert does, row for row
        for key in ("mean_reward", "mean_normalized", "mean_raw", "pass_k", "mean_cost"):
            assert row[key] == scripted[key], key
    assert {r["headers"]["authorization"] for r in model.requests} == {"Bearer none"}


def test_the_token_counts_are_the_sums_the_endpoint_served(serial) -> None:
    result, model = serial
    served = model.tokens()
    records = _model_records(result)
    assert set(served) == set(records)
    for key, record in records.items():
        assert record["tokens"] == served[key]
    assert sum(len(tokens) for _, tokens in model.served.values()) == len(model.requests)
    for task in TASKS:
        mean = result.rows[f"{task} openai:replay"]["mean_tokens"]
        for name in ("input_tokens", "output_tokens"):
            assert mean[name] == statistics.fmean(served[(task, s)][name] for s in range(SEEDS))
        assert mean["unreported"] == 0


def test_episodes_side_by_side_give_the_same_rows(serial, expert, tmp_path) -> None:
    # the first three conversations wait for each other at the endpoint: they ran at once
    with ReplayModel(expert, gate=3) as model:
        side_by_side = run_eval(tmp_path, model, "--concurrency", "3", tasks=TASKS)
    assert side_by_side.status == 0, side_by_side.err
    assert not model.gate_broken
    assert side_by_side.out == serial[0].out
    assert _strip(side_by_side.records) == _strip(serial[0].records)


def test_a_failed_request_is_retried(serial, expert, tmp_path) -> None:
    with ReplayModel(expert, fail=1) as model:
        retried = run_eval(tmp_path, model, "--concurrency", "1")
    assert retried.status == 0, retried.err
    assert model.failures == 1 and len(model.requests) == 1 + sum(
        len(e.calls) for e in expert if e.task == TASK
    )
    assert model.requests[1]["headers"]["x-stainless-retry-count"] == "1"  # the SDK's retry
    assert model.requests[1]["body"] == model.requests[0]["body"]
    assert retried.rows == {k: v for k, v in serial[0].rows.items() if k.startswith(f"{TASK} ")}


def test_a_model_that_always_fails_is_an_error_row_and_exit_status_1(expert, tmp_path) -> None:
    with ReplayModel(expert, fail=-1) as model:
        failed = run_eval(tmp_path, model, "--max-retries", "1", "--concurrency", "2")
    assert failed.status == 1
    assert len(model.requests) == 2 * SEEDS  # each episode: its request and one retry
    row = failed.rows[MODEL]
    assert row["errors"] == SEEDS and row["seeds"] == SEEDS
    assert row["mean_reward"] == 0.0 and row["pass_k"] == 0.0
    assert row["mean_tokens"] == {"input_tokens": 0, "output_tokens": 0, "unreported": 0}
    assert failed.rows[f"{TASK} expert"]["mean_reward"] > 0.5  # the scripted row, unharmed
    records = _model_records(failed)
    assert len(records) == SEEDS
    for record in records.values():
        assert record["error"].startswith("InternalServerError")
        assert record["reward"] == 0.0 and not record["terminated"]
    assert f"{SEEDS} of {SEEDS} episodes failed" in failed.err
    assert "exit status 1" in failed.err


def test_an_episode_failing_midway_keeps_its_tokens_and_turns(expert, tmp_path) -> None:
    with ReplayModel(expert, fail_from=3) as model:  # seed 0's third request on
        failed = run_eval(tmp_path, model, "--max-retries", "0", "--concurrency", "1")
    assert failed.status == 1
    first = _model_records(failed)[(TASK, 0)]
    assert first["turns"] == 2 and first["error"].startswith("InternalServerError")
    assert first["tokens"] == model.tokens()[(TASK, 0)]
    assert first["tokens"]["input_tokens"] == 1000 + 1100  # what the two answers reported
    assert len(first["messages"]) == 2 + 2 * 2  # system, statement; two calls and results


@pytest.mark.parametrize(
    ("api", "sdk", "path"),
    [
        ("openai-responses", "openai", "/v1/responses"),
        ("anthropic", "anthropic", "/v1/messages"),
        ("gemini", "google.genai", "/models/replay:generateContent"),  # after the API version
    ],
)
def test_every_provider_through_its_own_sdk(api, sdk, path, expert, tmp_path) -> None:
    pytest.importorskip(sdk)
    mine = [e for e in expert if e.task == TASK]
    with ReplayModel(mine, api=api) as model:
        result = run_eval(tmp_path, model)
    assert result.status == 0, result.err
    assert all(r["path"].endswith(path) for r in model.requests)
    served = model.tokens()
    records = _model_records(result, f"{api}:replay")
    for episode in mine:
        got = records[(TASK, episode.seed)]
        assert {k: got["reward" if k == "total" else k] for k in REWARD} == replay_in_process(
            episode
        )
        assert got["tokens"] == served[(TASK, episode.seed)]
    row = result.rows[f"{TASK} {api}:replay"]
    assert row["mean_reward"] == result.rows[f"{TASK} expert"]["mean_reward"]


def test_the_model_plays_a_family_levels_instances(tmp_path) -> None:
    from labtools.session.pool import level_episodes
    from labtools.session.registry import load_family
    from labtools.session.splits import split_instances

    instances = [str(i) for i in split_instances(load_family("quantify"), "validation")]
    level = [i for i in instances if i.startswith("quantify/1/")]
    statements = []
    for episode in level_episodes(level, ["model"], range(2), DEV_SECRET):
        with Session(episode.task, secret=DEV_SECRET) as session:
            statements.append(session.reset(episode.seed)["task"])
    with ReplayModel([], answer="I will not.") as model:
        base = f"{model.url}/v1"
        argv = ["eval", "--family", "quantify", "--level", "1", "--seeds", "2"]
        argv += ["--agent", "expert", "--model", "openai:m", "--base-url", base, "--json"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(argv) == 0
    rows = {row["agent"]: row for row in map(json.loads, out.getvalue().splitlines())}
    row = rows["openai:m"]
    assert row["task"] == "quantify/1" and row["seeds"] == 2 and row["mean_reward"] == 0.0
    assert row["mean_tokens"] == {"input_tokens": 100, "output_tokens": 5, "unreported": 0}
    prompts = [_chat(r["body"])[0] for r in model.requests]
    assert sorted(prompts) == sorted(statements)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "nope:x"], "unknown provider 'nope'"),
        (["--model", "openai"], "is not PROVIDER:NAME"),
        (["--model", "openai:gpt"], "set OPENAI_API_KEY"),
        (["--model", "gemini:x"], "set GEMINI_API_KEY or GOOGLE_API_KEY"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --model"),
        (["--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--calibrate"], "--model"),
        (["--model", "openai:x", "--concurrency", "0"], "--concurrency must be 1 or more"),
    ],
)
def test_bad_model_options_exit_2(options, message, capsys, monkeypatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    assert main(["eval", "--task", TASK, "--seeds", "1", *options]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
def test_the_retries_are_the_sdks_own(provider, monkeypatch) -> None:
    from labtools.session.models import PLACEHOLDER_KEY, Model

    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    client = Model.parse(f"{provider}:m", base_url="http://127.0.0.1:9", max_retries=7).client()
    assert client.max_retries == 7 and client.api_key == PLACEHOLDER_KEY
