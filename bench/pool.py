"""Episodes over Ray actors: expert episodes per minute with 1 and 2 actors beside one process,
Ray's overhead per episode, and each actor's memory.

The same episodes (dye quantification, expert, one secret) in one process and on a local Ray
instance, rounds of each interleaved and the best kept; every worker is warmed first (its
session built), so the rates are steady-state. On 2 cores, 2 actors are the most that run at
once. Memory is each actor process's resident set (``VmRSS``: Python, numpy,
PyLabRobot, Ray's worker runtime and the live session).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.timing import few, restore_sigint, row
from labtools.session.pool import Episode, EpisodePool, RayBackend

TASK = "dye_quantification"
SECRET = "bench-pool"
EPISODES = 100
ROUNDS = 3


def _work(first: int, count: int) -> list[Episode]:
    return [Episode(TASK, "expert", seed, SECRET) for seed in range(first, first + count)]


def _per_minute(pool: EpisodePool, first: int, episodes: int) -> float:
    start = time.perf_counter()
    pool.run(_work(first, episodes))
    return episodes / (time.perf_counter() - start) * 60.0


def _rss_mb(_worker: object) -> float:
    """This process's resident set, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    restore_sigint()
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    start = time.perf_counter()
    # three one-CPU actors (one backend of 1, one of 2); only one backend runs at a time
    ray.init(
        num_cpus=3,
        object_store_memory=100 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
    )
    started = time.perf_counter() - start
    backends = {1: RayBackend(1), 2: RayBackend(2)}
    pools = {
        "one process": EpisodePool(),
        **{f"{n} actor": EpisodePool(b) for n, b in backends.items()},
    }
    episodes, rounds = few(EPISODES, 4), few(ROUNDS, 1)
    try:
        for pool in pools.values():
            pool.run(_work(10_000, 4))  # warm: every worker builds its session
        best = dict.fromkeys(pools, 0.0)
        for round_ in range(rounds):  # interleaved: a busy spell hits every configuration
            for name, pool in pools.items():
                best[name] = max(best[name], _per_minute(pool, round_ * episodes, episodes))
        memory = {n: max(b.each(_rss_mb)) for n, b in backends.items()}
    finally:
        for pool in pools.values():
            pool.close()
        ray.shutdown()
    single = best["one process"]
    print(f"{TASK} expert episodes per minute: best of {rounds} interleaved rounds of {episodes}")
    print(row("one process (no Ray)", single, "/min"))
    for n in backends:
        rate = best[f"{n} actor"]
        label = f"Ray, {n} actor{'s' if n > 1 else ''}"
        print(row(label, rate, "/min", note=f"{rate / single:.2f}× one process"))
    print(
        row(
            "Ray's overhead per episode (1 actor − one process)",
            60e3 / best["1 actor"] - 60e3 / single,
            "ms",
        )
    )
    print(
        row(
            "per core with 2 actors",
            best["2 actor"] / 2,
            "/min",
            note=f"{best['2 actor'] / 2 / single:.2f}× one process",
        )
    )
    print(row("memory per actor", max(memory.values()), "MB", note="VmRSS, largest"))
    print(row("ray.init(num_cpus=3)", started, "s"))


if __name__ == "__main__":
    main()
