"""Small timing helpers shared by the benchmarks, and the quick mode's switch."""

from __future__ import annotations

import gc
import signal
import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_quick = False


def set_quick(on: bool = True) -> None:
    """Quick mode (``python -m bench --quick``): a few rounds of each measurement, so that every
    module runs through in seconds; its figures show only that the benchmark still works."""
    global _quick
    _quick = on


def few(full: T, quick: T) -> T:
    """A count of rounds, repeats or calls, or a duration (s): ``full``, or ``quick`` in quick
    mode."""
    return quick if _quick else full


def restore_sigint() -> None:
    """Benchmarks started in the background inherit an ignored SIGINT, which makes asyncio
    measurably cheaper than in a terminal; put the default handler back."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def median_us(
    fn: Callable[[], object], *, repeat: int = 7, number: int = 200, warmup: int = 20
) -> float:
    """Median over ``repeat`` rounds of the mean time of ``number`` calls, in µs (in quick mode:
    two rounds of at most 5 calls, after one warm-up call)."""
    repeat, number, warmup = few(repeat, 2), few(number, min(number, 5)), few(warmup, 1)
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
    functions interleaved so that a busy spell on a shared machine hits them alike (in quick
    mode: two rounds of at most 5 calls each)."""
    rounds, number = few(rounds, 2), few(number, min(number, 5))
    for fn in fns.values():
        for _ in range(few(20, 1)):
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
