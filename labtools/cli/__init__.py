"""The ``labtools`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from labtools.cli import catalog, demo, episodes, serve

#: subcommand modules; each has ``register(subparsers)`` setting ``func`` on its parser
COMMANDS = (catalog, demo, serve, episodes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="labtools",
        description="Unit-checked tools for laboratory instruments, real or virtual.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
