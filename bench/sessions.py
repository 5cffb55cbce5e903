"""Grounded-reward sessions: expert episodes per minute per core, and a live session's memory.

Goals: ≥ 2,000 expert episodes per minute per core on dye quantification; ≤ 5 MB per live
session. One process, one core; episodes rewind one lab (reset + protocol + score).
"""

from __future__ import annotations

import gc
import time
import tracemalloc

from bench.timing import few, restore_sigint, row
from labtools.session import Session
from labtools.session.evaluate import run_episode
from labtools.session.registry import task_ids


def _episodes_per_minute(task: str, seconds: float) -> tuple[float, float]:
    session = Session(task)
    run_episode(session, "expert", 0)  # warm: first reads build caches
    start = time.perf_counter()
    episodes = 0
    while time.perf_counter() - start < seconds:
        run_episode(session, "expert", 1 + episodes)
        episodes += 1
    elapsed = time.perf_counter() - start
    reset = _median_reset_ms(session)
    session.close()
    return episodes / elapsed * 60.0, reset


def _median_reset_ms(session: Session, rounds: int = 30) -> float:
    times = []
    for seed in range(few(rounds, 2)):
        start = time.perf_counter()
        session.reset(seed)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


def _memory_per_session_mb(task: str, count: int = 5) -> float:
    Session(task).close()  # build the shared deck template and caches first
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    sessions = []
    count = few(count, 2)
    for seed in range(count):
        session = Session(task)
        run_episode(session, "expert", seed)
        sessions.append(session)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    for session in sessions:
        session.close()
    return grown / count / 2**20


def main() -> None:
    restore_sigint()
    print("expert episodes per minute on one core (reset, protocol, score), and median reset")
    for task in task_ids():
        rate, reset = _episodes_per_minute(task, few(6.0, 0.3))
        note = " (goal ≥ 2,000)" if task == "dye_quantification" else ""
        print(row(f"{task}", rate, "/min", note=f"reset {reset:.2f} ms{note}"))
    memory = _memory_per_session_mb("dye_quantification")
    print(
        row(
            "memory of a live dye_quantification session (tracemalloc)",
            memory,
            "MB",
            note="goal ≤ 5",
        )
    )


if __name__ == "__main__":
    main()
