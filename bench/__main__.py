"""Run every benchmark in turn: ``python -m bench`` (``make bench``)."""

from __future__ import annotations

import importlib

MODULES = (
    "core",
    "liquid_handler",
    "shadow",
    "plate_reader",
    "spectrometer",
    "mcp",
    "experts",
    "rewind",
    "sessions",
    "pool",
    "memory",
)

for name in MODULES:
    print(f"\n=== bench.{name} ===", flush=True)
    importlib.import_module(f"bench.{name}").main()
