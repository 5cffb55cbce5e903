"""``labtools preflight``: a whole plan run on the lab's shadow twin before anything moves."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from labtools.cli.common import add_lab_options

DESCRIPTION = """\
Run PLAN on the lab's shadow twin (the same deck and labware, the declared volumes and
labels, the physics backends) and report what it would do, before anything moves: each
refused call (its number, tool and error), the tips used, the reagent used per source, the
predicted readings and the virtual time it takes. Nothing is sent to any instrument.

PLAN is a journal (.jsonl, as `labtools serve --journal` and Lab(journal=...) write it: every
call in it is made again, in order) or a Python protocol (.py) defining run(lab), called with
the twin: use its tools as on the real lab, lab.lh.transfer(...) (stops at the first refusal)
or lab.call(name, arguments) (returns each result).

Exit status: 0 if nothing was refused, 1 if something was (or the protocol failed), 2 if the
lab or the plan cannot be used."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "preflight",
        help="run a plan (a journal or a Python protocol) on the lab's shadow twin and report "
        "refusals, tips, reagent, predicted readings and duration",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_lab_options(parser)
    parser.add_argument("plan", type=Path, help="a journal (.jsonl) or a protocol (.py)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(func=_preflight)


def _preflight(args: argparse.Namespace) -> int:
    from labtools.cli.common import open_lab
    from labtools.shadow_plan import PlanError, load_plan, preflight

    try:
        plan = load_plan(args.plan)
    except (PlanError, OSError) as exc:
        print(f"labtools preflight: {exc}", file=sys.stderr)
        return 2
    lab = open_lab(args, shadow=True, connect=False)  # the real instruments never connect
    try:
        assert lab.shadow is not None
        report = preflight(lab.shadow.twin, plan, str(args.plan))
    finally:
        lab.close()
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.text())
    return 0 if report.ok else 1
