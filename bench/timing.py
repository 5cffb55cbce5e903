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


def row(label: str, value: float, unit: str = "µs", note: str = "") -> str:
    return f"  {label:<58} {value:>10.1f} {unit:<4} {note}"
