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


def open_lab(
    args: argparse.Namespace,
    journal: Journal | str | Path | None = None,
    *,
    shadow: bool = False,
    connect: bool = True,
) -> Lab:
    """The lab ``--lab`` names; ``shadow``: with its shadow twin (:mod:`labtools.shadow`);
    ``connect``: set the virtual lab up at once (a configured lab connects at its first call)."""
    from labtools.config import packaged
    from labtools.lab import VIRTUAL_LAB, Lab  # imported here: ``serve`` answers before

    if args.lab == "virtual":
        if connect:
            return Lab.virtual(seed=args.seed, journal=journal, shadow=shadow)
        return Lab.load(packaged(VIRTUAL_LAB), journal=journal, shadow=shadow, seed=args.seed)
    return Lab.load(args.lab, journal=journal, shadow=shadow)
