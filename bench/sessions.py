"""Grounded-reward sessions: expert episodes per minute per core, a new session beside a rewind,
and a live session's memory.

Goals: ≥ 5,000 expert episodes per minute per core on dye quantification and ≥ 1,000 on every
task; a new session (to its first observation) ≤ 20 ms and ≤ 3× a rewind, when a closed
session's lab is on the shelf (:mod:`labtools.session.shelf`), and also shown when every
session builds its lab; ≤ 5 MB per live session. One process, one core; episodes rewind one
lab (reset + protocol + score).
"""

from __future__ import annotations

import gc
import time
import tracemalloc

from bench.timing import few, restore_sigint, row
from labtools.session import Session
from labtools.session.evaluate import run_episode
from labtools.session.registry import task_ids
from labtools.session.shelf import SHELF


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


def _median_new_session_ms(task: str, *, shelved: bool, rounds: int = 30) -> float:
    """A new session of ``task`` to its first observation; ``shelved``: the last session's lab
    waits on the shelf, else the shelf is emptied first (every session builds its lab)."""
    Session(task).close()  # build the deck template and caches first
    times = []
    for seed in range(few(rounds, 2)):
        if not shelved:
            SHELF.clear()
        start = time.perf_counter()
        session = Session(task)
        session.reset(seed)
        times.append(time.perf_counter() - start)
        session.close()
    SHELF.clear()
    times.sort()
    return times[len(times) // 2] * 1e3


def _memory_per_session_mb(task: str, count: int = 5) -> float:
    Session(task).close()  # build the shared deck template and caches first
    SHELF.clear()  # and build every session's own lab
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
        goal = 5000 if task == "dye_quantification" else 1000
        verdict = "meets" if rate >= goal else "misses"
        note = f"reset {reset:.2f} ms; goal ≥ {goal:,}: {verdict}"
        print(row(f"{task}", rate, "/min", note=note))
    task = "dye_quantification"
    with Session(task) as session:
        session.reset(0)
        rewind = _median_reset_ms(session)
    print(row(f"{task}: rewind (a session's reset)", rewind, "ms"))
    for shelved, how in ((True, "its lab from the shelf"), (False, "its lab built")):
        new = _median_new_session_ms(task, shelved=shelved)
        goal = f"{new / rewind:.1f}× the rewind" + ("; goal ≤ 20 ms, ≤ 3×" if shelved else "")
        print(row(f"{task}: new session to first observation, {how}", new, "ms", note=goal))
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
