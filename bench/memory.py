"""A long-lived lab's memory: resident set size over 100k tool calls, beside the first 1k.

A lab without a journal file keeps only its most recent events (``labtools.journal.KEEP``), so
its RSS is flat once that many calls are in. The anchor is the same run with a journal that
keeps every event in memory (what an unbounded journal costs). Calls: a mix of deck views,
spectra and refusals, none of which uses up the deck.
"""

from __future__ import annotations

import gc
import os
from typing import Any

from bench.timing import few, restore_sigint, row
from labtools import Lab
from labtools.journal import Journal

CALLS = 100_000
MARKS = (1_000, 10_000, 50_000, CALLS)
MIX: tuple[tuple[str, dict[str, Any]], ...] = (
    ("lh_get_deck", {}),
    ("spec_acquire_spectrum", {"scans": 1}),
    (
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "plate_1:Z99", "volume": {"value": 5, "unit": "L"}}]},
    ),
    ("reader_read_absorbance", {"plate": "plate_1", "wavelength": {"value": 450}, "wells": []}),
)


def rss_mb() -> float:
    """Current resident set size (MB), from /proc."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def run(journal: Journal | None, marks: tuple[int, ...]) -> dict[int, float]:
    """RSS (MB) after each of ``marks`` calls."""
    seen: dict[int, float] = {}
    with Lab.virtual(seed=0, journal=journal) as lab:
        lab.call("spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}})
        for i in range(1, marks[-1] + 1):
            name, args = MIX[i % len(MIX)]
            lab.call(name, args)
            if i in marks:
                gc.collect()
                seen[i] = rss_mb()
    return seen


def main() -> None:
    restore_sigint()
    marks = few(MARKS, (100, 1_000))
    first, last = marks[0], marks[-1]
    bounded = run(None, marks)
    everything = run(Journal(keep=last + 10), marks)
    for label, seen in (("bounded journal", bounded), ("anchor: every event kept", everything)):
        shown = ", ".join(f"{n:,} {mb:.0f} MB" for n, mb in seen.items())
        print(row(f"RSS after {first:,} calls, {label}", seen[first], "MB", f"({shown})"))
        print(
            row(f"RSS growth {first:,} → {last:,} calls, {label}", seen[last] - seen[first], "MB")
        )


if __name__ == "__main__":
    main()
