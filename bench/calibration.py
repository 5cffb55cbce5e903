"""A full calibration of the virtual lab (``labtools calibrate``: the reader run, the gravimetric
volume checks of every channel and tip type, the spectrometer's darks, and every fit), timed
beside its anchor in the same run: building the virtual lab it calibrates (``Lab.virtual``).

Printed per seed: wall time, tool calls, the lab's virtual time; then the median and its ratio to
the lab's build (goal: a full calibration in under a minute). Run: ``python -m bench
calibration``.
"""

from __future__ import annotations

import statistics
import time

from bench.timing import few
from labtools.lab import Lab
from labtools.simulators.calibration import calibrate

#: stand-in seeds no test uses
SEEDS = (4_100, 4_101, 4_102)
GOAL_S = 60.0


def _build_s(seed: int) -> float:
    start = time.perf_counter()
    Lab.virtual(seed).close()
    return time.perf_counter() - start


def main() -> None:
    seeds = few(SEEDS, SEEDS[:1])
    builds, runs = [], []
    for seed in seeds:
        builds.append(_build_s(seed))
        start = time.perf_counter()
        with Lab.virtual(seed) as lab:
            result = calibrate(lab)
        runs.append(time.perf_counter() - start)
        calls = sum(r["calls"] for r in result["runs"].values())
        virtual_min = sum(r["virtual_s"] for r in result["runs"].values()) / 60.0
        print(
            f"  seed {seed}: {runs[-1]:5.1f} s, {calls} tool calls, {virtual_min:.0f} virtual min, "
            f"{len(result['parameters'])} parameters"
        )
    median, build = statistics.median(runs), statistics.median(builds)
    verdict = "under" if median < GOAL_S else "OVER"
    print(
        f"  median {median:.1f} s ({verdict} the {GOAL_S:.0f} s goal) = {median / build:.0f}x "
        f"building the virtual lab ({build * 1000:.0f} ms)"
    )
