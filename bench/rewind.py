"""Rewinding the virtual lab between episodes, beside building a new one.

``lab.checkpoint()`` once, then ``lab.rewind(pristine, seed=s)`` per episode. Goal: a rewind well
under 5 ms (building ``Lab.virtual(seed)`` costs ~0.1 s once the deck template exists). Rewinds
are timed right after an episode that dirtied everything (tips used and still mounted, three
plates moved, one into the reader, the spectrometer set up with dark and reference), and on a
lab that did nothing; the world's reset is also timed alone.

Run: ``python -m bench.rewind``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bench.timing import few, restore_sigint, row
from labtools import Lab
from labtools.demo.protocol import with_tip
from labtools.units import qty

_ul = partial(qty, unit="microliter")


EPISODE: list[tuple[str, dict[str, Any]]] = [
    ("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1]}),
    ("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [2]}),
    (
        "lh_transfer",
        with_tip(0, "reservoir:A2", "plate_1:A1", _ul(150)),
    ),
    ("lh_aspirate", {"items": [{"channel": 1, "well": "reservoir:A5", "volume": _ul(100)}]}),
    (
        "lh_transfer",
        with_tip(2, "reservoir:A1", "cuvette", _ul(1000)),
    ),
    ("spec_set_integration_time", {"time": {"value": 100, "unit": "millisecond"}}),
    ("spec_acquire_dark", {"scans": 1}),
    ("spec_acquire_reference", {"scans": 1}),
    ("lh_move_plate", {"plate": "plate_1", "destination": "reader"}),
    ("lh_move_plate", {"plate": "plate_2", "destination": "spare_carrier-0"}),
    ("lh_move_plate", {"plate": "plate_384", "destination": "plate_carrier-2"}),
    (
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": {"value": 430, "unit": "nanometer"}},
    ),
]


def _median_ms(
    fn: Callable[[], object], rounds: int, before: Callable[[], object] | None = None
) -> float:
    """Median of ``rounds`` timings of ``fn`` (``before`` runs untimed ahead of each)."""
    times = []
    for _ in range(few(rounds, 2)):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    restore_sigint()
    start = time.perf_counter()
    lab = Lab.virtual(0)
    first = (time.perf_counter() - start) * 1e3
    seeds = iter(range(1, 1_000_000))

    def episode() -> None:
        for tool, arguments in EPISODE:
            lab.call(tool, arguments)

    print("virtual lab: build vs checkpoint and rewind (median)")
    print(row("Lab.virtual(seed), first in the process (deck template)", first, "ms"))
    print(row("Lab.virtual(seed), later", _median_ms(lambda: Lab.virtual(1).close(), 5), "ms"))
    print(row("lab.checkpoint()", _median_ms(lab.checkpoint, 20), "ms"))
    pristine = lab.checkpoint()
    print(
        row(
            "lab.rewind(pristine, seed=s) after a dirtying episode",
            _median_ms(lambda: lab.rewind(pristine, seed=next(seeds)), 30, before=episode),
            "ms",
            note="goal ≪ 5",
        )
    )
    print(
        row(
            "lab.rewind(pristine, seed=s) after no calls",
            _median_ms(lambda: lab.rewind(pristine, seed=next(seeds)), 30),
            "ms",
        )
    )
    world = lab.shared["world"]
    print(
        row(
            "  of which world.reset(seed)",
            _median_ms(lambda: world.reset(next(seeds)), 30),
            "ms",
        )
    )
    lab.close()


if __name__ == "__main__":
    main()
