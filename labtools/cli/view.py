"""``labtools view``: the live view of a lab in the browser, while a plan runs on it."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from labtools.cli.common import add_lab_options

DESCRIPTION = """\
Build the lab and serve its live view on loopback: the deck (labware on their sites, tips
present and used, the plate in the reader), every well in the colour of what it holds with its
believed volume, the call log with each refusal's code and hint, and the virtual clock. The page
is one self-contained file: it loads nothing from anywhere but this server.

With --run PLAN, the plan runs on the lab once the view is up: a journal (.jsonl: every call
in it is made again, in order) or a Python protocol (.py) defining run(lab). --pace waits after
each call, so a person can follow. The view stays up until Ctrl-C (or --exit, for scripts).

With --replay FILE, the page steps through a recorded run instead (buttons, a slider, the
arrow keys): step k shows the lab after its first k calls. FILE is a journal (.jsonl), a run
bundle (the folder `labtools export` wrote), an episode's journal or an eval export
(`labtools eval --export`: --episode N picks its N-th record). A journal's calls are made again
on a fresh simulated lab built from its own lab record (its first call names its lab file and
overrides), or on the lab --lab and --seed name if it has none; an episode's on a new session
of its task and seed, under --secret (default: the evaluation's default secret). Every step is
kept, so stepping back shows exactly what was shown before. Two --replay (each with its own
--episode, in the same order) show two runs side by side, stepped together: an expert and an
agent on one seed, say."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "view",
        help="serve the lab's live view (deck, well colours, calls, clock) on loopback",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_lab_options(parser)
    parser.add_argument("--port", type=int, default=8770, help="port (default 8770; 0: any)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--run", type=Path, default=None, metavar="PLAN", help="plan to run")
    parser.add_argument(
        "--replay",
        type=Path,
        action="append",
        metavar="FILE",
        help="step through a journal, run bundle, episode or eval export (twice: side by side)",
    )
    parser.add_argument(
        "--episode",
        type=int,
        action="append",
        metavar="N",
        help="an eval export's N-th record (default 1; one per --replay)",
    )
    parser.add_argument("--secret", default=None, help="the secret an episode was recorded under")
    parser.add_argument(
        "--pace", type=float, default=0.0, metavar="S", help="seconds to wait after each call"
    )
    parser.add_argument(
        "--exit", action="store_true", help="stop once the plan has run instead of serving on"
    )
    parser.set_defaults(func=_view)


def _view(args: argparse.Namespace) -> int:
    from labtools.cli.common import open_lab
    from labtools.server.run import is_loopback
    from labtools.shadow_plan import PlanError, load_plan
    from labtools.view import open_view

    if not is_loopback(args.host):
        print("labtools view: the view serves loopback addresses only", file=sys.stderr)
        return 2
    if args.pace < 0:
        print("labtools view: --pace must be 0 or more seconds", file=sys.stderr)
        return 2
    if args.replay is None and (args.episode or args.secret is not None):
        print("labtools view: --episode and --secret go with --replay", file=sys.stderr)
        return 2
    if args.replay is not None:
        if args.run is not None:
            print("labtools view: --run and --replay: give one", file=sys.stderr)
            return 2
        return _replay(args)
    try:
        plan = load_plan(args.run) if args.run is not None else None
    except (PlanError, OSError) as exc:
        print(f"labtools view: {exc}", file=sys.stderr)
        return 2
    lab = open_lab(args)
    if args.pace:
        lab.watch(lambda event: time.sleep(args.pace))
    server = open_view(lab, host=args.host, port=args.port)
    print(f"labtools view: {server.url}", flush=True)
    status = 0
    try:
        if plan is not None:
            try:
                plan(lab)
            except Exception as exc:  # the protocol's own failure: said, the view stays up
                print(f"labtools view: the plan stopped: {exc}", file=sys.stderr)
                status = 1
        if not args.exit:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        lab.close()
    return status


def _replay(args: argparse.Namespace) -> int:
    """Serve the page stepping through ``--replay``'s run (or two, side by side)."""
    from labtools.cli.common import open_lab
    from labtools.view import ReplayError, open_replay, replay_journal

    files, episodes = args.replay, args.episode or []
    if len(files) > 2 or len(episodes) > len(files):
        print("labtools view: --replay at most twice, --episode once per --replay", file=sys.stderr)
        return 2
    episodes = [*episodes, *[1] * (len(files) - len(episodes))]
    try:
        replays = [
            replay_journal(path, lambda: open_lab(args), secret=args.secret, episode=episode)
            for path, episode in zip(files, episodes, strict=True)
        ]
    except (ReplayError, OSError, ValueError) as exc:
        print(f"labtools view: {exc}", file=sys.stderr)
        return 2
    server = open_replay(replays, host=args.host, port=args.port)
    counts = " and ".join(f"{r.source}: {r.n} calls" for r in replays)
    print(f"labtools view: {server.url} ({counts})", flush=True)
    for replay in replays:
        if replay.diverged:
            steps = ", ".join(map(str, replay.diverged[:10]))
            print(
                f"labtools view: {replay.source}: {len(replay.diverged)} call(s) gave another "
                f"result than recorded (steps {steps}{', …' if len(replay.diverged) > 10 else ''})",
                file=sys.stderr,
            )
    try:
        if not args.exit:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
