"""Episodes at scale: scripted episodes scheduled over workers that each keep their sessions.

An :class:`Episode` is ``(task, agent, seed, secret)``; running it gives an
:class:`EpisodeResult` equal to the one-process run of the same episode (the episode id aside:
it is random). A worker (:class:`Worker`) keeps one :class:`~labtools.session.Session` per task
and secret, rewound between episodes and never rebuilt while episodes of that task keep coming.
Backends run workers: :class:`LocalBackend` in this process, :class:`ProcessBackend` in a pool
of processes, :class:`RayBackend` in Ray actors (on one machine, or a cluster with
``address="auto"``), scheduled by Ray's :class:`ray.util.ActorPool`. Results come back in the
order the episodes were given.

    with EpisodePool("ray", workers=4) as pool:
        reports = pool.evaluate("dye_quantification", ["expert", "naive"], range(50))
"""

from __future__ import annotations

import importlib
import logging
import math
import multiprocessing
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol, TypeVar

from labtools.errors import MissingExtra, install_hint
from labtools.session.agents import AGENTS
from labtools.session.evaluate import (
    DEV_SECRET,
    TABLE_AGENTS,
    EvalReport,
    implements,
    play,
    summarize,
)
from labtools.session.registry import load_task
from labtools.session.reward import Reward
from labtools.session.session import Session
from labtools.session.splits import played

T = TypeVar("T")
log = logging.getLogger(__name__)

__all__ = [
    "BACKENDS",
    "RAY_INSTALL_HINT",
    "Backend",
    "BackendUnavailable",
    "Episode",
    "EpisodePool",
    "EpisodeResult",
    "LocalBackend",
    "ProcessBackend",
    "RayBackend",
    "TaskEvaluation",
    "Worker",
    "episodes",
    "import_ray",
    "level_episodes",
    "make_backend",
    "reports",
]

BACKENDS = ("local", "ray")
RAY_INSTALL_HINT = install_hint("ray")
#: a local Ray instance's object store: results are small (the default is ~30 % of RAM)
RAY_OBJECT_STORE = 100 * 1024**2


class BackendUnavailable(MissingExtra):
    """A backend's package is not installed; ``hint`` says what to install."""


@dataclass(frozen=True)
class Episode:
    """One scripted episode: ``agent`` (one of :data:`~labtools.session.agents.AGENTS`) on
    ``task`` at ``seed``, the truth drawn with ``secret``."""

    task: str
    agent: str
    seed: int
    secret: str = DEV_SECRET


@dataclass(frozen=True)
class EpisodeResult:
    """An episode's reward and usage; ``task`` is the task's id (``episode.task`` may be a
    ``module:Class`` reference). ``episode_id`` and ``trajectory`` (a
    :mod:`~labtools.session.trajectory` record, when asked for) are left out of equality:
    the episode id is random. A model's episode (:mod:`labtools.session.models`) has
    ``tokens`` (the API's counts, summed over its turns) and ``error`` (what ended it early:
    an API failure after the SDK's retries); a scripted one has neither."""

    episode: Episode
    task: str
    reward: Reward
    usage: dict[str, float]
    terminated: bool
    truncated: bool
    episode_id: str = field(default="", compare=False)
    trajectory: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    tokens: dict[str, int] | None = None
    error: str | None = None


class Worker:
    """Runs episodes on sessions it keeps: one per (task, secret), at most ``keep`` at once
    (the least recently used is closed), each rewound between episodes."""

    def __init__(self, keep: int = 1) -> None:
        if keep < 1:
            raise ValueError(f"a worker keeps at least one session, not {keep}")
        self.keep = keep
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()
        #: sessions built so far (a worker on one task builds one)
        self.built = 0

    def session(self, task: str, secret: str) -> Session:
        key = (task, secret)
        if key in self._sessions:
            self._sessions.move_to_end(key)
            return self._sessions[key]
        while len(self._sessions) >= self.keep:
            self._sessions.popitem(last=False)[1].close()
        self._sessions[key] = session = Session(task, secret=secret)
        self.built += 1
        return session

    def run(self, episode: Episode, trajectories: bool = False) -> EpisodeResult:
        """One episode, as :func:`labtools.session.evaluate.run_episode` runs it."""
        session = self.session(episode.task, episode.secret)
        observation = play(session, episode.agent, episode.seed)
        reward = session.score()
        record = None
        if trajectories:
            from labtools.session.trajectory import from_session

            record = from_session(session, observation["task"])
            record["agent"] = episode.agent
        return EpisodeResult(
            episode=episode,
            task=session.task.id,
            reward=reward,
            usage=session.usage.as_dict(),
            terminated=session.terminated,
            truncated=session.truncated,
            episode_id=session.episode_id or "",
            trajectory=record,
        )

    def run_many(
        self, episodes: Sequence[Episode], trajectories: bool = False
    ) -> list[EpisodeResult]:
        """:meth:`run` on each of ``episodes``, in order: one round trip for many episodes."""
        return [self.run(episode, trajectories) for episode in episodes]

    def sessions_built(self) -> int:
        """Sessions built so far: one per task for a worker whose episodes come task by task."""
        return self.built

    def close(self) -> None:
        while self._sessions:
            self._sessions.popitem()[1].close()


class Backend(Protocol):
    """Runs episodes on its workers; yields results in the order of ``episodes``."""

    workers: int

    def imap(
        self, episodes: Sequence[Episode], trajectories: bool = False
    ) -> Iterator[EpisodeResult]: ...

    def close(self) -> None: ...


class LocalBackend:
    """One worker in this process: episodes one after another (today's ``labtools eval``)."""

    workers = 1

    def __init__(self, keep: int = 1) -> None:
        self._worker = Worker(keep)

    def imap(
        self, episodes: Sequence[Episode], trajectories: bool = False
    ) -> Iterator[EpisodeResult]:
        for episode in episodes:
            yield self._worker.run(episode, trajectories)

    def close(self) -> None:
        self._worker.close()


_PROCESS_WORKER: Worker | None = None


def _process_init(keep: int) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = Worker(keep)


def _process_run(episode: Episode, trajectories: bool) -> EpisodeResult:
    assert _PROCESS_WORKER is not None, "the process pool's initializer did not run"
    return _PROCESS_WORKER.run(episode, trajectories)


class ProcessBackend:
    """``workers`` processes on this machine (``multiprocessing``, started with ``context``:
    ``"spawn"`` by default, which never forks a process that has threads), one worker each."""

    def __init__(self, workers: int, *, keep: int = 1, context: str = "spawn") -> None:
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, not {workers}")
        self.workers = workers
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context(context),
            initializer=_process_init,
            initargs=(keep,),
        )

    def imap(
        self, episodes: Sequence[Episode], trajectories: bool = False
    ) -> Iterator[EpisodeResult]:
        return self._executor.map(_process_run, episodes, repeat(trajectories))

    def close(self) -> None:
        self._executor.shutdown(cancel_futures=True)


def import_ray() -> Any:
    """The ``ray`` package; :class:`BackendUnavailable` with an install hint without it."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise BackendUnavailable(f"the Ray backend needs Ray ({exc})", extra="ray") from exc


#: the most episodes a Ray actor is sent in one round trip by default (a chunk's results come
#: back together: more would delay the first)
MOST_PER_TRIP = 16


class RayBackend:
    """``workers`` Ray actors, one :class:`Worker` each, scheduled by
    :class:`ray.util.ActorPool`.

    Joins the Ray instance this process already started, or the cluster at ``address``
    (``"auto"``: the one ``ray start`` runs on this node; ``"ray://host:10001"``: Ray Client),
    or else starts a local one with ``workers`` CPUs; ``init`` goes to :func:`ray.init`. Only a
    Ray instance it started does it shut down. Each actor takes ``num_cpus`` CPUs; every node
    needs labtools (and the tasks' packages) installed, or a ``runtime_env`` in ``init``.

    Episodes go to the actors in chunks (``chunk`` a round trip; by default a quarter of an
    even share, 1 to :data:`MOST_PER_TRIP`), so that Ray's cost per round trip, milliseconds
    against an episode's few, is paid once for many; results come in the episodes' order.
    """

    def __init__(
        self,
        workers: int,
        *,
        address: str | None = None,
        keep: int = 1,
        num_cpus: float = 1,
        chunk: int | None = None,
        **init: Any,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, not {workers}")
        if chunk is not None and chunk < 1:
            raise ValueError(f"a chunk holds 1 episode or more, not {chunk}")
        self.chunk = chunk
        ray = import_ray()
        actor_pool = importlib.import_module("ray.util").ActorPool
        self.workers = workers
        self._ray = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            if address is None:
                cores = os.cpu_count() or 1
                if workers * num_cpus > cores:
                    log.warning(
                        "%d Ray workers on %d cores: they take turns, so runs go no faster "
                        "than with %d",
                        workers,
                        cores,
                        max(1, int(cores // num_cpus)),
                    )
                init = {
                    "num_cpus": math.ceil(workers * num_cpus),
                    "include_dashboard": False,
                    "object_store_memory": RAY_OBJECT_STORE,
                    **init,
                }
            ray.init(address=address, **init)
        actor = ray.remote(num_cpus=num_cpus)(Worker)
        self._actors = [actor.remote(keep) for _ in range(workers)]
        self._pool = actor_pool(self._actors)

    def imap(
        self, episodes: Sequence[Episode], trajectories: bool = False
    ) -> Iterator[EpisodeResult]:
        size = self.chunk or min(MOST_PER_TRIP, max(1, len(episodes) // (4 * self.workers)))
        chunks = [episodes[i : i + size] for i in range(0, len(episodes), size)]
        for results in self._pool.map(
            lambda actor, some: actor.run_many.remote(some, trajectories), chunks
        ):
            yield from results

    def each(self, fn: Callable[[Worker], T]) -> list[T]:
        """``fn(worker)`` run in every actor, on its :class:`Worker`; the results in actor
        order (``fn`` must pickle: a module-level function)."""
        return list(self._ray.get([a.__ray_call__.remote(fn) for a in self._actors]))

    def built(self) -> list[int]:
        """Sessions each actor has built."""
        return self.each(Worker.sessions_built)

    def close(self) -> None:
        ray = self._ray
        if not ray.is_initialized():
            return
        ray.get([a.close.remote() for a in self._actors])
        for a in self._actors:
            ray.kill(a)
        self._actors = []
        if self._owns:
            ray.shutdown()


def make_backend(name: str = "local", workers: int = 1, **options: Any) -> Backend:
    """``"local"``: this process for one worker, else a :class:`ProcessBackend`; ``"ray"``: a
    :class:`RayBackend` (``options`` go to the backend)."""
    if name == "ray":
        return RayBackend(workers, **options)
    if name != "local":
        raise ValueError(f"unknown backend {name!r}; backends: {', '.join(BACKENDS)}")
    if workers == 1:
        return LocalBackend(**options)
    return ProcessBackend(workers, **options)


def episodes(
    task: str,
    agents: Iterable[str],
    seeds: Iterable[int],
    secret: str = DEV_SECRET,
) -> list[Episode]:
    """Every agent on every seed, agent by agent (the order :func:`reports` summarises)."""
    seeds = list(seeds)
    return [Episode(task, agent, seed, secret) for agent in agents for seed in seeds]


def level_episodes(
    instances: Sequence[str], agents: Iterable[str], seeds: Iterable[int], secret: str
) -> list[Episode]:
    """A family level's episodes: seed ``s`` plays :func:`~labtools.session.splits.played`
    ``(instances, s)``, ordered instance by instance (a worker keeps its session)."""
    seeds = list(seeds)
    return sorted(
        (
            Episode(played(instances, seed), agent, seed, secret)
            for agent in agents
            for seed in seeds
        ),
        key=lambda e: (e.task, e.agent, e.seed),
    )


def reports(results: Iterable[EpisodeResult], k: int = 3) -> dict[tuple[str, str], EvalReport]:
    """The :class:`~labtools.session.evaluate.EvalReport` of each (task, agent), from its
    results in the order given (as :func:`~labtools.session.evaluate.evaluate` makes it)."""
    groups: dict[tuple[str, str], list[EpisodeResult]] = {}
    for result in results:
        groups.setdefault((result.task, result.episode.agent), []).append(result)
    return {
        key: summarize(key[0], key[1], [r.reward for r in rs], [r.usage for r in rs], k)
        for key, rs in groups.items()
    }


@dataclass(frozen=True)
class TaskEvaluation:
    """One task's reports per agent (``None``: the task does not implement that agent) and
    its episodes' results."""

    task: str
    reports: dict[str, EvalReport | None]
    results: list[EpisodeResult]


class EpisodePool:
    """Episodes over a backend: ``EpisodePool("ray", workers=4, address="auto")``, or a
    :class:`Backend` of your own. Close it (or use ``with``) to stop the workers.

    ``progress`` is told ``(done, total)`` as each run of episodes starts (0) and as each of
    its results comes in order (a command line's bar)."""

    def __init__(
        self,
        backend: str | Backend = "local",
        workers: int = 1,
        *,
        progress: Callable[[int, int], None] | None = None,
        **options: Any,
    ):
        self.backend = (
            make_backend(backend, workers, **options) if isinstance(backend, str) else backend
        )
        self.progress = progress

    def imap(
        self, episodes: Iterable[Episode], *, trajectories: bool = False
    ) -> Iterator[EpisodeResult]:
        """Results in the order of ``episodes``, each as soon as it and those before it are
        done; ``trajectories``: with each episode's training record."""
        episodes = list(episodes)
        for episode in episodes:
            if episode.agent not in AGENTS:
                raise ValueError(f"unknown agent {episode.agent!r}; agents: {', '.join(AGENTS)}")
        results = self.backend.imap(episodes, trajectories)
        return results if self.progress is None else _told(results, len(episodes), self.progress)

    def run(
        self, episodes: Iterable[Episode], *, trajectories: bool = False
    ) -> list[EpisodeResult]:
        return list(self.imap(episodes, trajectories=trajectories))

    def evaluate_tasks(
        self,
        tasks: Iterable[str],
        agents: Iterable[str] = TABLE_AGENTS,
        seeds: Iterable[int] = range(50),
        k: int = 3,
        *,
        secret: str = DEV_SECRET,
        trajectories: bool = False,
    ) -> Iterator[TaskEvaluation]:
        """:func:`~labtools.session.evaluate.evaluate_agents` of every task, all episodes
        scheduled at once, each task yielded as soon as its episodes are done."""
        seeds, agents = list(seeds), list(agents)
        plan: list[tuple[str, list[str], int]] = []  # task, its agents, its episode count
        work: list[Episode] = []
        for task in tasks:
            instance = load_task(task)
            mine = [a for a in agents if implements(instance, a)]
            plan.append((task, mine, len(mine) * len(seeds)))
            work += episodes(task, mine, seeds, secret)
        results = self.imap(work, trajectories=trajectories)
        for task, mine, count in plan:
            done = [next(results) for _ in range(count)]
            by_agent = reports(done, k)
            task_id = done[0].task if done else load_task(task).id
            yield TaskEvaluation(
                task=task_id,
                reports={a: by_agent[(task_id, a)] if a in mine else None for a in agents},
                results=done,
            )

    def evaluate_level(
        self,
        instances: Sequence[str],
        agents: Iterable[str] = TABLE_AGENTS,
        seeds: Iterable[int] = range(50),
        k: int = 3,
        *,
        label: str,
        secret: str = DEV_SECRET,
        trajectories: bool = False,
    ) -> TaskEvaluation:
        """A family level's reports per agent under ``label``: seed ``s`` plays
        ``played(instances, s)``, so the level's structures share its seeds. Episodes
        run instance by instance (a worker keeps its session), the reports are the seeds'."""
        if not instances:
            raise ValueError(f"{label}: no instances to evaluate")
        seeds, agents = list(seeds), list(agents)
        probe = load_task(instances[0])
        mine = [a for a in agents if implements(probe, a)]
        done = self.run(level_episodes(instances, mine, seeds, secret), trajectories=trajectories)
        by_agent: dict[str, list[EpisodeResult]] = {}
        for result in done:
            by_agent.setdefault(result.episode.agent, []).append(result)
        return TaskEvaluation(
            task=label,
            reports={
                a: summarize(
                    label,
                    a,
                    [r.reward for r in by_agent[a]],
                    [r.usage for r in by_agent[a]],
                    k,
                )
                if a in mine
                else None
                for a in agents
            },
            results=done,
        )

    def evaluate(
        self,
        task: str,
        agents: Iterable[str] = TABLE_AGENTS,
        seeds: Iterable[int] = range(50),
        k: int = 3,
        *,
        secret: str = DEV_SECRET,
    ) -> dict[str, EvalReport | None]:
        """One task's reports per agent, equal to
        :func:`~labtools.session.evaluate.evaluate_agents` with the same arguments."""
        return next(self.evaluate_tasks([task], agents, seeds, k, secret=secret)).reports

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> EpisodePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _told(
    results: Iterator[EpisodeResult], total: int, progress: Callable[[int, int], None]
) -> Iterator[EpisodeResult]:
    """``results``, telling ``progress`` how many of ``total`` have come."""
    progress(0, total)
    for done, result in enumerate(results, 1):
        progress(done, total)
        yield result
