"""Episodes over Ray actors: expert episodes per minute with 1 and 2 actors beside one process,
Ray's overhead per episode, and each actor's memory.

The same episodes (dye quantification, expert, one secret) in one process and on a local Ray
instance (``ray.init(num_cpus=2)``); every worker is warmed first (its session built), so the
rates are steady-state. Memory is each actor process's resident set (``VmRSS``: Python, numpy,
PyLabRobot, Ray's worker runtime and the live session).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.timing import restore_sigint, row
from labtools.session.pool import Episode, EpisodePool, RayBackend

TASK = "dye_quantification"
SECRET = "bench-pool"
EPISODES = 300


def _work(first: int, count: int) -> list[Episode]:
    return [Episode(TASK, "expert", seed, SECRET) for seed in range(first, first + count)]


def _per_minute(pool: EpisodePool, workers: int) -> float:
    pool.run(_work(10_000, 2 * workers))  # warm: each worker builds its session
    start = time.perf_counter()
    pool.run(_work(0, EPISODES))
    return EPISODES / (time.perf_counter() - start) * 60.0


def _rss_mb(_worker: object) -> float:
    """This process's resident set, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    restore_sigint()
    import ray

    with EpisodePool() as pool:
        single = _per_minute(pool, 1)
    print(f"{EPISODES} {TASK} expert episodes after a warm-up; one process, then Ray actors")
    print(row("one process (no Ray)", single, "/min"))

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    print(row("ray.init(num_cpus=2)", time.perf_counter() - start, "s"))
    try:
        rates: dict[int, float] = {}
        for workers in (1, 2):
            backend = RayBackend(workers)
            with EpisodePool(backend) as pool:
                rates[workers] = _per_minute(pool, workers)
                memory = backend.each(_rss_mb)
            print(
                row(
                    f"Ray, {workers} actor{'s' if workers > 1 else ''}",
                    rates[workers],
                    "/min",
                    note=f"{rates[workers] / single:.2f}× one process",
                )
            )
            print(row(f"  memory per actor ({workers})", max(memory), "MB", note="VmRSS, largest"))
        overhead = 60e3 / rates[1] - 60e3 / single
        print(row("Ray's overhead per episode (1 actor − one process)", overhead, "ms"))
        print(
            row(
                "per core with 2 actors",
                rates[2] / 2,
                "/min",
                note=f"{rates[2] / 2 / single:.2f}× one process",
            )
        )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
