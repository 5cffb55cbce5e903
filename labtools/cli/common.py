"""Options shared by subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from labtools.journal import Journal

if TYPE_CHECKING:
    from labtools.lab import Lab


def add_lab_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lab",
        default="virtual",
        help="'virtual' (the built-in virtual lab) or a lab config TOML file",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the virtual lab (default 0)")


def open_lab(args: argparse.Namespace, journal: Journal | str | Path | None = None) -> Lab:
    from labtools.lab import Lab  # imported when a lab is opened: ``serve`` answers before

    if args.lab == "virtual":
        return Lab.virtual(seed=args.seed, journal=journal)
    return Lab.load(args.lab, journal=journal)
