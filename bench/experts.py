"""What each task's expert protocol costs an agent: calls, characters, virtual hours, reward.

Per task, over evaluation seeds 0–49 (disjoint from the anchors' calibration seeds): tool calls
per episode; characters the model would read and write — the tool definitions once (the MCP
``tools/list`` entries, as JSON) plus every call's arguments and result (compact JSON); virtual
hours on the lab's clock; the reward normalised on the task's anchors (mean, and the worst
seed); and the raw score. Beside each, the same figures for the one-channel, one-well protocols
the experts replaced (:data:`BEFORE`, measured with this module at commit 0488b78 on seeds
1000–1049, under that commit's scoring: raw scores compare only while the scoring is the same;
normalised ones, each on its own anchors, always). Goal: every expert ≤ 25 calls with reward
≥ 0.9 normalised.

Run: ``python -m bench.experts`` (``--json`` for one object per task).
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass
from typing import Any

from bench.timing import few
from labtools.progress import ProgressCallback
from labtools.result import ToolResult
from labtools.session import Session
from labtools.session.evaluate import DEV_SECRET, run_episode
from labtools.session.registry import task_ids

SEEDS = range(50)  # evaluation seeds, under the public dev secret
MAX_CALLS = 25
MIN_NORMALISED = 0.9


@dataclass(frozen=True)
class Cost:
    calls: float
    definitions: int  # characters of the tool definitions
    exchanged: float  # characters of arguments and results per episode
    hours: float
    raw: float  # the task's own score, 0–1, before normalisation
    normalised: float
    worst: float  # the lowest normalised reward of a seed


#: the experts at commit 0488b78 (one channel, one well per call), measured with :func:`cost`
BEFORE: dict[str, Cost] = {
    "colour_matching": Cost(53.00, 31573, 16524.1, 0.1089, 0.7977, 1.0000, 0.5744),
    "dye_quantification": Cost(15.00, 32790, 9798.4, 0.0317, 0.8590, 1.0000, 0.8055),
    "enzyme_inhibition": Cost(368.92, 32829, 108046.6, 1.1226, 0.9730, 1.0000, 0.8774),
    "enzyme_kinetics": Cost(239.76, 32125, 73167.8, 0.7105, 0.9817, 1.0000, 0.9092),
    "indicator_pka": Cost(54.00, 31732, 30168.0, 0.0960, 0.9057, 1.0000, 0.7643),
    "standard_curve": Cost(157.82, 32220, 42001.3, 0.4720, 0.8168, 1.0001, 0.7939),
}


def json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON (what a model reads)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


def count_exchanges(session: Session) -> list[int]:
    """From now on, count the characters of every call's arguments and result (compact JSON)
    made through ``session``: the one-item list returned holds the running total."""
    exchanged = [0]
    acall = session.acall_tool

    async def counted(
        name: str, arguments: object, *, progress: ProgressCallback | None = None
    ) -> ToolResult:
        result = await acall(name, arguments, progress=progress)
        exchanged[0] += json_chars(arguments) + json_chars(result.to_dict())
        return result

    session.acall_tool = counted  # type: ignore[method-assign]
    return exchanged


def cost(task: str, seeds: range) -> Cost:
    """The expert's mean cost per episode over ``seeds``."""
    session = Session(task, secret=DEV_SECRET)
    exchanged = count_exchanges(session)
    calls, chars, hours, raws, rewards = [], [], [], [], []
    for seed in seeds:
        exchanged[0] = 0
        reward = run_episode(session, "expert", seed)
        calls.append(session.usage.calls)
        chars.append(exchanged[0])
        hours.append(session.usage.hours)
        raws.append(reward.raw)
        rewards.append(reward.normalized)
    definitions = json_chars(session.tools("mcp"))
    session.close()
    return Cost(
        calls=statistics.mean(calls),
        definitions=definitions,
        exchanged=statistics.mean(chars),
        hours=statistics.mean(hours),
        raw=statistics.mean(raws),
        normalised=statistics.mean(rewards),
        worst=min(rewards),
    )


def main() -> None:
    seeds = SEEDS[: few(len(SEEDS), 2)]
    costs = {task: cost(task, seeds) for task in task_ids()}
    if "--json" in sys.argv[1:]:
        for task, now in costs.items():
            print(json.dumps({"task": task, **asdict(now)}))
        return
    print(
        f"expert protocols, mean per episode over evaluation seeds {seeds.start}–{seeds.stop - 1}"
        f" (before → now); goal ≤ {MAX_CALLS} calls, reward ≥ {MIN_NORMALISED} normalised"
    )
    header = ("task", "calls", "definitions", "args+results", "total chars", "hours")
    print("  {:<19} {:>13} {:>11} {:>17} {:>17} {:>12}  normalised (worst)  raw".format(*header))
    for task, now in costs.items():
        was = BEFORE.get(task)
        print(
            f"  {task:<19} {_pair(was, now, 'calls', '.0f'):>13}"
            f" {now.definitions:>11,}"
            f" {_pair(was, now, 'exchanged', ',.0f'):>17}"
            f" {_pair(was, now, 'total', ',.0f'):>17}"
            f" {_pair(was, now, 'hours', '.2f'):>12}"
            f"  {_pair(was, now, 'normalised', '.2f')} ({now.worst:.2f})"
            f"  {_pair(was, now, 'raw', '.3f')}"
        )


def _pair(was: Cost | None, now: Cost, field: str, spec: str) -> str:
    """``before → now`` of one figure (``total``: definitions + exchanged characters)."""

    def of(cost: Cost) -> float:
        return cost.definitions + cost.exchanged if field == "total" else getattr(cost, field)

    return f"{'?' if was is None else format(of(was), spec)} → {format(of(now), spec)}"


if __name__ == "__main__":
    main()
