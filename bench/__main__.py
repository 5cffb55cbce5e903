"""Run the benchmarks in turn: ``python -m bench [--quick] [MODULE ...]`` (``make bench``).

``--quick`` runs a few rounds of each (``make bench-quick``, what CI runs): its figures are
printed, not to be read, and it shows that every benchmark still runs.
"""

from __future__ import annotations

import argparse
import importlib
import time

from bench.timing import set_quick

MODULES = (
    "core",
    "liquid_handler",
    "shadow",
    "plate_reader",
    "spectrometer",
    "mcp",
    "experts",
    "catalogue",
    "rewind",
    "sessions",
    "openenv",
    "verifiers",
    "pool",
    "memory",
    "calibration",
    "fidelity",
    "sweet_spot",
    "view",
)

parser = argparse.ArgumentParser(prog="python -m bench", description="Run the benchmarks in turn.")
parser.add_argument("--quick", action="store_true", help="a few rounds of each benchmark")
parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"of: {', '.join(MODULES)}")
options = parser.parse_args()
if unknown := sorted(set(options.modules) - set(MODULES)):
    parser.error(f"no benchmark named {', '.join(unknown)}; there are {', '.join(MODULES)}")
set_quick(options.quick)
if options.quick:
    print("quick mode: a few rounds of each benchmark (where a heading counts rounds or seeds,")
    print("it may give a full run's); the figures show that each runs, not what it measures")
for name in options.modules or MODULES:
    print(f"\n=== bench.{name} ===", flush=True)
    start = time.perf_counter()
    importlib.import_module(f"bench.{name}").main()
    print(f"  ({time.perf_counter() - start:.1f} s)", flush=True)
