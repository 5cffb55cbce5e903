"""verifiers' overhead per labtools rollout, beside verifiers' own bare rollout.

Rollouts run through verifiers 0.4 itself (``run_eval``, as ``vf-eval`` does): the ``null``
harness (its chat program, run by uv) in the subprocess runtime, one rollout at a time, and a
scripted model (the tests' stand-in endpoint, ``tests/scripted_endpoint.py``) that makes the
expert's calls on dye quantification, recorded in process on the same seed and secret, one
per turn. The anchor is ``bench.verifiers_bare``: the same harness, model and number of
calls, against a shared tool server with one tool that counts calls in the rollout's state
and echoes its text. Measured in one run, the two interleaved: in each round an eval of one
rollout and one of several, of each.

- **rollout**: a trace's wall time from its start to the end of its scoring (verifiers' own
  timing on the trace), median and range over the rollouts after each eval's first (the
  first also meets the eval's fresh servers);
- **overhead per rollout** = median labtools rollout − median bare rollout: what labtools
  adds to a rollout (goal ≤ 0.5 s). Most of a rollout is the chat program's start, whose
  time varies by a second or more on a busy machine, so two figures beside it: the same from
  each rollout's first model request on, and the CPU time per rollout of every process the
  eval ran (this process, the tool server, the chat programs: the eval of several rollouts
  less the eval of one, per added rollout), which a busy machine changes less;
- beside them the same episode in process (a shelved ``Session``: reset, the calls, score)
  and each rollout's boot and set-up spans (tool servers, the harness's preparation).

Needs verifiers (Python 3.11 here; it pins mcp 2.0.0). Run: ``python -m bench.verifiers``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.timing import few, restore_sigint, row
from labtools.session import Session

TASK = "dye_quantification"
SEED = 3
SECRET = "bench-verifiers"
GOAL_S = 0.5
ROOT = Path(__file__).resolve().parents[1]


def _rollouts(
    taskset: dict[str, Any],
    calls: list[tuple[str, Any]],
    rollouts: int,
    out: Path,
    reward: float | None = None,
) -> list[tuple[float, float, float]]:
    """``rollouts`` rollouts of the taskset's one row, one at a time, each checked to earn
    ``reward`` (when given); the spans of each after the first (:func:`_spans`)."""
    from scripted_endpoint import ChatAgent
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    class Timed(ChatAgent):
        """Notes when each request came (epoch s, as verifiers' timing)."""

        def __init__(self, calls: list[tuple[str, Any]]) -> None:
            super().__init__(calls)
            self.times: list[float] = []

        def reply(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
            self.times.append(time.time())
            return super().reply(body)

    with Timed(calls) as model:
        config = EvalConfig(
            env={
                "taskset": taskset,
                "agent": {
                    "harness": {"id": "null"},
                    "max_turns": len(calls) + 3,
                    "runtime": {"type": "subprocess"},
                },
            },
            select={"limit": 1},
            num_rollouts=rollouts,
            max_concurrent=1,
            rich=None,
            push=False,
            output_dir=out,
            run={"dir": f"run-{time.monotonic_ns()}"},
            model="scripted",
            client={
                "type": "eval",
                "base_url": f"{model.url}/v1",
                "api_key_var": "SCRIPTED_MODEL_KEY",
            },
        )
        episodes = asyncio.run(run_eval(config))
    traces = [trace for episode in episodes for trace in episode.traces]
    if len(traces) != rollouts or not all(trace.ok for trace in traces):
        raise RuntimeError(f"a rollout failed: {[trace.errors for trace in traces]}")
    if reward is not None and {t.rewards["session_reward"].score for t in traces} != {reward}:
        raise RuntimeError(f"rewards {[t.rewards for t in traces]}, in process {reward}")
    traces.sort(key=lambda trace: trace.timing.start)
    return [_spans(trace, model.times) for trace in traces[1:]]


def _spans(trace: Any, requests: list[float]) -> tuple[float, float, float]:
    """A trace's wall time, its boot-and-set-up span, and its time from its first model
    request to the end of its scoring (s)."""
    timing = trace.timing
    first = min(t for t in requests if timing.agent.start <= t <= timing.agent.end)
    return (
        timing.scoring.end - timing.start,
        timing.setup.end - timing.start,
        timing.scoring.end - first,
    )


def _in_process_s(calls: list[tuple[str, Any]], rounds: int) -> float:
    """The median of the same episode in process: a shelved session, reset, calls, score."""
    times = []
    for _ in range(rounds + 1):
        start = time.perf_counter()
        with Session(TASK, secret=SECRET) as session:
            session.reset(SEED)
            for name, arguments in calls:
                session.call_tool(name, arguments)
            session.score()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])  # the first builds the lab


def _cpu_s() -> float:
    """CPU time (user and system, s) of this process and of its children it has waited for:
    the tool servers and chat programs of the evals that ended."""
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def _summary(values: list[float]) -> str:
    return f"median of {len(values)}, range {min(values):.2f}–{max(values):.2f} s"


def main() -> None:
    restore_sigint()
    if importlib.util.find_spec("verifiers") is None:
        print("  verifiers is not installed in this environment (it is on Python 3.11): not run")
        return
    environment, path = dict(os.environ), list(sys.path)
    try:
        _measure()
    finally:  # the benchmarks run after this one see the process as it was
        os.environ.clear()
        os.environ.update(environment)
        sys.path[:] = path


def _measure() -> None:
    sys.path.insert(0, str(ROOT / "tests"))  # the stand-in model and the expert's episode
    from episodes import expert_episode

    from bench import verifiers_bare

    sys.modules[verifiers_bare.BARE_ID] = verifiers_bare  # where verifiers' loader looks
    bin_dir = str(Path(sys.executable).parent)  # the harness runs uv from PATH
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )  # verifiers starts the bare tool server as `python -m bench.verifiers_bare`
    os.environ["SCRIPTED_MODEL_KEY"] = "not-a-key"

    played = expert_episode(TASK, SEED, SECRET)
    calls = played.calls
    echoes: list[tuple[str, Any]] = [("echo", {"text": name}) for name, _ in calls]
    rollouts, rounds = few(5, 2), few(3, 1)
    print(f"  {TASK}, seed {SEED}: the expert's {len(calls)} calls, one per turn;")
    print(f"  {rounds} round(s) of an eval of 1 and one of {rollouts} rollouts, one at a time")
    evals: dict[str, Callable[[int, Path], list[Any]]] = {
        "labtools": lambda n, out: _rollouts(
            {"id": "labtools_verifiers", "lab_tasks": [TASK], "seeds": [SEED]},
            calls,
            n,
            out,
            played.reward.total,
        ),
        "bare": lambda n, out: _rollouts(
            {"id": verifiers_bare.BARE_ID, "calls": len(calls)}, echoes, n, out
        ),
    }
    spans: dict[str, list[tuple[float, float, float]]] = {name: [] for name in evals}
    cpu: dict[str, list[float]] = {name: [] for name in evals}
    with tempfile.TemporaryDirectory(prefix="bench-verifiers-") as directory:
        for _ in range(rounds):
            for name, run in evals.items():
                used = []
                for n in (1, rollouts):
                    os.environ["LABTOOLS_SECRET"] = SECRET  # the taskset takes it out again
                    before = _cpu_s()
                    spans[name] += run(n, Path(directory))
                    used.append(_cpu_s() - before)
                cpu[name].append((used[1] - used[0]) / (rollouts - 1))
    in_process = _in_process_s(calls, few(20, 2))
    medians = {
        name: [statistics.median(s[i] for s in spans[name]) for i in range(3)] for name in spans
    }
    per_rollout_cpu = {name: statistics.median(cpu[name]) for name in cpu}
    for name in evals:
        total, setup, after = medians[name]
        print(row(f"{name} rollout", total, "s", _summary([s[0] for s in spans[name]])))
        print(row("  boot and set-up (tool servers, the harness's)", setup, "s"))
        print(row("  from its first model request", after, "s"))
        print(row("  CPU, every process of the eval", per_rollout_cpu[name], "s"))
    print(row("the same episode in process", in_process * 1e3, "ms"))
    labtools, bare = medians["labtools"], medians["bare"]
    overhead = labtools[0] - bare[0]
    print(row("overhead per rollout (labtools − bare)", overhead * 1e3, "ms", f"goal ≤ {GOAL_S} s"))
    print(row("  from the first model request on", (labtools[2] - bare[2]) * 1e3, "ms"))
    cpu_overhead = per_rollout_cpu["labtools"] - per_rollout_cpu["bare"]
    print(row("  CPU", cpu_overhead * 1e3, "ms"))
    print(
        row(
            "labtools rollout − the episode in process",
            labtools[0] - in_process,
            "s",
            "verifiers' own machinery included",
        )
    )


if __name__ == "__main__":
    main()
