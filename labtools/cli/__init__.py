"""The ``labtools`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint

from labtools.cli import catalog, demo, episodes, preflight, records, serve, view
from labtools.cli.logs import LEVELS, log_to_stderr
from labtools.config import ConfigError

#: subcommand modules; each has ``register(subparsers)`` setting ``func`` on its parser
COMMANDS = (catalog, demo, serve, preflight, episodes, records, view)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; a lab configuration that cannot be used is one line on stderr
    (``labtools: <file>: [table] key: ...``) and exit status 2, whichever command read it; a
    reader that closes the pipe early ends the command quietly with :data:`SIGPIPE_STATUS`."""
    parser = argparse.ArgumentParser(
        prog="labtools",
        description="Unit-checked tools for laboratory instruments, real or virtual.",
    )
    parser.add_argument(
        "--log-level",
        choices=list(LEVELS),
        help="log to stderr; 'io' shows what goes over the wire (firmware strings, OBP frames)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # modules in turn until one has the command (registering ``eval`` imports the sessions,
    # a plug-in the simulators: ``labtools serve``, which a host spawns, needs neither)
    command = _command(sys.argv[1:] if argv is None else argv)
    for module in COMMANDS:
        module.register(sub)
        if command in sub.choices:
            break
    else:  # a plug-in's command, or none (the help lists them all)
        for register in _plugin_commands(command):
            register(sub)
    args = parser.parse_args(argv)
    if args.log_level:
        log_to_stderr(args.log_level)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, so that a closed pipe is seen before the interpreter exits
        return status
    except ConfigError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (``labtools tools | head``): stop quietly
        _silence_stdout()
        return SIGPIPE_STATUS


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first word after the options), if any."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _plugin_commands(name: str | None = None) -> list[Callable[[argparse._SubParsersAction], None]]:
    """The ``register`` functions of the ``labtools.commands`` entry points (the simulators'
    ``profile``, ``calibrate``, ...): plug-ins add subcommands without the core importing them.
    ``name``: only the plug-in of that command, if one has it (importing a plug-in can take
    most of a second: ``labtools serve`` imports none)."""
    from importlib.metadata import entry_points

    found = []
    entries = sorted(entry_points(group=COMMAND_GROUP), key=_name)
    if any(entry.name == name for entry in entries):
        entries = [entry for entry in entries if entry.name == name]
    for entry in entries:
        try:
            found.append(entry.load())
        except Exception as exc:  # a broken plug-in loses its command, not the others
            print(
                f"labtools: command {entry.name!r} ({entry.value}) not loaded: {exc}",
                file=sys.stderr,
            )
    return found


def _name(entry: EntryPoint) -> str:
    return entry.name


#: the entry-point group of subcommands from plug-ins
COMMAND_GROUP = "labtools.commands"

#: the exit status of a command ended by a closed pipe, as a shell reports SIGPIPE (128 + 13)
SIGPIPE_STATUS = 141


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of what is still
    buffered does not fail again (the recipe of Python's ``signal`` documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
