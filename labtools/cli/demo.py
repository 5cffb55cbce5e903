"""``labtools demo``: the closed-loop experiment on the virtual lab."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the dye-quantification experiment on the virtual lab")
    demo.add_argument("--seed", type=int, default=0, help="seed of the hidden truth (default 0)")
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("out/demo"),
        help="folder for the journal and plots (default out/demo)",
    )
    demo.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from labtools.demo import run_demo

    return run_demo(seed=args.seed, out=args.out, as_json=args.json)
