"""Evaluating an agent on a task over many seeds: mean reward, pass^k, cost."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from labtools.errors import ToolError
from labtools.session.agents import AGENTS, SHORTCUTS
from labtools.session.reward import Reward, pass_hat_k
from labtools.session.session import Session
from labtools.session.task import Task

__all__ = [
    "CALIBRATION_SECRET",
    "DEV_SECRET",
    "TABLE_AGENTS",
    "EvalReport",
    "calibrate",
    "evaluate",
    "evaluate_agents",
    "implements",
    "play",
    "run_episode",
    "summarize",
]

#: the secrets scripted agents are scored under, so that anchors and ``labtools eval`` are
#: reproducible: :data:`CALIBRATION_SECRET` for the anchors, :data:`DEV_SECRET` for the public
#: ``validation`` split and every figure the docs quote (its value predates its name, so that
#: they stay reproducible). Both are public: anyone can study their worlds, so neither supports
#: a held-out claim; the test splits' secret is the evaluator's (:mod:`labtools.session.splits`)
CALIBRATION_SECRET = "labtools calibration"
DEV_SECRET = "labtools evaluation"
#: the agents ``labtools eval`` tabulates per task when no agent is named
TABLE_AGENTS = (
    "expert",
    "naive",
    "random",
    "prior",
    "inversion",
    "no_controls",
    "trivial",
    "wrong_verdict",
)


@dataclass(frozen=True)
class EvalReport:
    """An agent's episodes on a task, summarised; a model's report (``labtools eval
    --model``) also has ``mean_tokens`` (per episode, the API's counts) and ``errors`` (its
    episodes an API failure ended, scored as they stood)."""

    task: str
    agent: str
    seeds: int
    mean_reward: float
    pass_k: float | None  # None: fewer seeds than k (pass^k needs k trials)
    k: int
    mean_normalized: float
    mean_raw: float
    mean_cost: dict[str, float]
    mean_tokens: dict[str, float] | None = None
    errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_episode(session: Session, agent: str, seed: int) -> Reward:
    """One episode of ``agent`` on ``seed``; a protocol that stops on a refused call simply
    ends its episode there (unsubmitted episodes score 0)."""
    play(session, agent, seed)
    return session.score()


def play(session: Session, agent: str, seed: int) -> dict[str, Any]:
    """Reset ``session`` to ``seed`` and let ``agent`` work; returns the reset's observation."""
    observation = session.reset(seed)
    with contextlib.suppress(ToolError):
        AGENTS[agent](session, seed)
    return observation


def evaluate(
    task: str,
    agent: str,
    seeds: Iterable[int],
    k: int = 3,
    session: Session | None = None,
    *,
    secret: str = DEV_SECRET,
) -> EvalReport:
    """Run ``agent`` (one of :data:`AGENTS`) on ``task`` once per seed, the truth drawn with
    ``secret`` (unless a ``session`` is given)."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(AGENTS)}")
    session = session or Session(task, secret=secret)
    rewards, costs = [], []
    for seed in seeds:
        rewards.append(run_episode(session, agent, seed))
        costs.append(session.usage.as_dict())
    return summarize(session.task.id, agent, rewards, costs, k)


def summarize(
    task: str, agent: str, rewards: list[Reward], costs: list[dict[str, float]], k: int = 3
) -> EvalReport:
    """The report of ``agent``'s episodes on ``task``: their rewards and usage, seed by seed;
    ``pass_k`` is ``None`` when there are fewer episodes than ``k``."""
    if not rewards:
        raise ValueError(f"no episodes of {agent} on {task} to summarize")
    successes = sum(r.success for r in rewards)
    return EvalReport(
        task=task,
        agent=agent,
        seeds=len(rewards),
        mean_reward=statistics.fmean(r.total for r in rewards),
        pass_k=pass_hat_k(successes, len(rewards), k) if len(rewards) >= k else None,
        k=k,
        mean_normalized=statistics.fmean(r.normalized * r.validity for r in rewards),
        mean_raw=statistics.fmean(r.raw for r in rewards),
        mean_cost={key: statistics.fmean(c[key] for c in costs) for key in costs[0]},
    )


def implements(task: Task, agent: str) -> bool:
    """Whether ``task`` can run ``agent``: every task has the expert, naive and random
    agents; the shortcuts (:data:`~labtools.session.agents.SHORTCUTS`) only where its class
    defines them."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(AGENTS)}")
    if agent in SHORTCUTS:
        return getattr(type(task), agent, None) not in (None, getattr(Task, agent, None))
    return True


def evaluate_agents(
    task: str,
    seeds: Iterable[int],
    agents: Iterable[str] = TABLE_AGENTS,
    k: int = 3,
    *,
    secret: str = DEV_SECRET,
) -> dict[str, EvalReport | None]:
    """:func:`evaluate` of each of ``agents`` on ``task`` over the same seeds, on one session;
    ``None`` for an agent the task does not implement (:func:`implements`)."""
    seeds = list(seeds)
    with Session(task, secret=secret) as session:
        return {
            agent: evaluate(task, agent, seeds, k=k, session=session)
            if implements(session.task, agent)
            else None
            for agent in agents
        }


def calibrate(task: str, seeds: Iterable[int] = range(1000, 1050)) -> dict[str, float]:
    """Mean raw scores of the naive and expert protocols: a task's anchors (under
    :data:`CALIBRATION_SECRET`)."""
    session = Session(task, secret=CALIBRATION_SECRET)
    seeds = list(seeds)
    return {
        agent: statistics.fmean(run_episode(session, agent, s).raw for s in seeds)
        for agent in ("naive", "expert")
    }
