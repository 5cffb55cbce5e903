"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import gc
import signal
import statistics
import time
from collections.abc import Callable


def restore_sigint() -> None:
    """Benchmarks started in the background inherit an ignored SIGINT, which makes asyncio
    measurably cheaper than in a terminal; put the default handler back."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def median_us(
    fn: Callable[[], object], *, repeat: int = 7, number: int = 200, warmup: int = 20
) -> float:
    """Median over ``repeat`` rounds of the mean time of ``number`` calls, in µs."""
    for _ in range(warmup):
        fn()
    rounds = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            rounds.append((time.perf_counter() - start) / number * 1e6)
    finally:
        if gc_was:
            gc.enable()
    return statistics.median(rounds)


def interleaved_best_us(
    fns: dict[str, Callable[[], object]], *, rounds: int = 15, number: int = 300
) -> dict[str, float]:
    """Each function's best round (mean µs per call over ``number`` calls), the rounds of all
    functions interleaved so that a busy spell on a shared machine hits them alike."""
    for fn in fns.values():
        for _ in range(20):
            fn()
    best = dict.fromkeys(fns, float("inf"))
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in fns.items():
                start = time.perf_counter()
                for _ in range(number):
                    fn()
                best[name] = min(best[name], (time.perf_counter() - start) / number * 1e6)
    finally:
        if gc_was:
            gc.enable()
    return best


def row(label: str, value: float, unit: str = "µs", note: str = "") -> str:
    return f"  {label:<58} {value:>10.1f} {unit:<4} {note}"
