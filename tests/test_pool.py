"""Episodes over workers (in process, processes, Ray actors) equal the one-process run."""

from __future__ import annotations

import os
import re
import sys

import pytest

from labtools.session.evaluate import evaluate, evaluate_agents, run_episode
from labtools.session.pool import (
    RAY_INSTALL_HINT,
    BackendUnavailable,
    Episode,
    EpisodePool,
    RayBackend,
    episodes,
    reports,
)
from labtools.session.session import Session

TASK = "dye_quantification"
SECRET = "test-pool"
AGENTS = ("expert", "random")
SEEDS = range(4)


@pytest.fixture(scope="module")
def work() -> list[Episode]:
    return episodes(TASK, AGENTS, SEEDS, SECRET)


@pytest.fixture(scope="module")
def expected(work: list[Episode]) -> list[tuple[object, dict[str, float]]]:
    """The one-process run: every episode on one session, one after another."""
    with Session(TASK, secret=SECRET) as session:
        return [(run_episode(session, e.agent, e.seed), session.usage.as_dict()) for e in work]


def _check(results, work, expected) -> None:
    assert [r.episode for r in results] == work  # in the order given
    assert [(r.reward, r.usage) for r in results] == expected
    assert all(r.task == TASK and r.episode_id for r in results)
    assert len({r.episode_id for r in results}) == len(results)


def test_in_process_equals_evaluate(work, expected) -> None:
    with EpisodePool() as pool:
        results = pool.run(work)
        assert pool.backend._worker.built == 1  # one session, rewound
    _check(results, work, expected)
    by_agent = reports(results)
    for agent in AGENTS:
        assert by_agent[(TASK, agent)] == evaluate(TASK, agent, SEEDS, secret=SECRET)


def test_processes_equal_the_one_process_run(work, expected) -> None:
    with EpisodePool("local", workers=2) as pool:
        results = pool.run(work)
    _check(results, work, expected)


def test_unknown_agents_and_backends_are_refused() -> None:
    with EpisodePool() as pool, pytest.raises(ValueError, match="unknown agent"):
        pool.run([Episode(TASK, "oracle", 0)])
    with pytest.raises(ValueError, match="unknown backend"):
        EpisodePool("dask")


def test_without_ray_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(BackendUnavailable, match=re.escape(RAY_INSTALL_HINT)) as caught:
        EpisodePool("ray", workers=2)
    assert caught.value.hint == RAY_INSTALL_HINT and isinstance(caught.value, ImportError)


@pytest.fixture(scope="module")
def ray_instance():
    import ray  # a dev dependency: the test runs wherever make test does

    previous = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()
    if previous is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = previous


def test_ray_actors_equal_the_one_process_run(ray_instance, work, expected) -> None:
    backend = RayBackend(2)  # joins the running instance, and leaves it running
    with EpisodePool(backend) as pool:
        results = pool.run(work)
        assert backend.built() == [1, 1]  # each actor built one session and rewound it
        _check(results, work, expected)
        tabled = pool.evaluate(TASK, AGENTS, SEEDS, secret=SECRET)
        assert backend.built() == [1, 1]
    assert tabled == evaluate_agents(TASK, SEEDS, AGENTS, secret=SECRET)
    assert ray_instance.is_initialized()


def test_ray_actors_take_episodes_in_chunks_and_give_them_back_in_order(
    ray_instance, work, expected
) -> None:
    """Three episodes a round trip, the last chunk short: the same results, in order."""
    with pytest.raises(ValueError, match="1 episode or more"):
        RayBackend(2, chunk=0)
    backend = RayBackend(2, chunk=3)
    with EpisodePool(backend) as pool:
        _check(pool.run(work), work, expected)
        assert sum(backend.built()) == 2 and len(work) % 3


#: 50 seeds of two tasks, interleaved: each actor keeps a session per task (keep=2) whichever
#: episodes Ray gives it
WIDE_TASKS = ("dye_quantification", "dye_stability")
WIDE = [Episode(task, "expert", seed, SECRET) for seed in range(50) for task in WIDE_TASKS]


def test_ray_actors_equal_the_one_process_run_for_50_seeds_of_two_tasks(ray_instance) -> None:
    alone = {task: Session(task, secret=SECRET) for task in WIDE_TASKS}
    expected = []
    for e in WIDE:
        expected.append(
            (run_episode(alone[e.task], e.agent, e.seed), alone[e.task].usage.as_dict())
        )
    for session in alone.values():
        session.close()
    backend = RayBackend(2, keep=len(WIDE_TASKS))
    with EpisodePool(backend) as pool:
        results = pool.run(WIDE)
        built = backend.built()
    assert [r.episode for r in results] == WIDE
    assert [(r.reward, r.usage) for r in results] == expected
    assert [r.task for r in results] == [e.task for e in WIDE]
    # an actor builds a session for a task the first time it gets one, then only rewinds it
    assert len(built) == 2 and all(1 <= n <= len(WIDE_TASKS) for n in built)
    assert sum(r.reward.success for r in results) >= 90  # the experts did succeed


def test_more_local_workers_than_cores_is_warned(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A local Ray instance with more one-CPU workers than cores: said once, in the log."""
    from types import SimpleNamespace

    started: dict[str, object] = {}
    actor = SimpleNamespace(remote=lambda keep: object())
    fake = SimpleNamespace(
        is_initialized=lambda: False,
        init=lambda **options: started.update(options),
        remote=lambda **options: lambda cls: actor,
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.util", SimpleNamespace(ActorPool=lambda actors: None))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with caplog.at_level("WARNING", logger="labtools.session.pool"):
        RayBackend(8)
    assert "8 Ray workers on 2 cores" in caplog.text and started["num_cpus"] == 8
    caplog.clear()
    with caplog.at_level("WARNING", logger="labtools.session.pool"):
        RayBackend(2)
    assert caplog.text == ""
