"""``labtools fidelity``: the same calibration protocol on a lab and its twin, compared (the
``labtools.commands`` entry point ``fidelity``).

Importing this module imports nothing but argparse: the physics loads only when it runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from labtools.simulators.commands import add_lab_arguments, open_lab


def register_fidelity(sub: argparse._SubParsersAction) -> None:
    fidelity = sub.add_parser(
        "fidelity",
        help="how closely a twin profile reproduces a lab: coverage, z-scores, reward gaps",
        description="Runs the calibration protocol through the lab's tools and on replicates of "
        "the twin's predictive lab (its fitted values drawn from their 95 %% intervals), and "
        "reports the coverage of the lab's readings by the twin's 50/90/95 %% intervals and a "
        "two-sample test per reading group, z-scores of the fitted parameters, and per task "
        "the expert's reward on the lab's profile minus on the twin's (virtual labs only).",
    )
    add_lab_arguments(fidelity)
    fidelity.add_argument(
        "--twin", required=True, help="the twin's profile: a TOML file or 'published'"
    )
    fidelity.add_argument(
        "--task",
        action="append",
        dest="tasks",
        metavar="T",
        help="a task for the reward gap (repeat for more; default every built-in task)",
    )
    fidelity.add_argument(
        "--no-tasks", action="store_true", help="no reward gap (only the readings)"
    )
    fidelity.add_argument(
        "--replicates", type=int, default=20, help="twin replicates K (default 20, at least 2)"
    )
    fidelity.add_argument(
        "--pipetting",
        choices=("auto", "gravimetric", "photometric"),
        default="auto",
        help="the volume check's method on both (auto: gravimetric where the lab has a balance)",
    )
    fidelity.add_argument("--json", action="store_true", help="print the whole report as JSON")
    fidelity.add_argument("--plot", type=Path, help="write the figure here (PNG by its suffix)")
    fidelity.set_defaults(func=_fidelity)


def _fidelity(args: argparse.Namespace) -> int:
    from labtools.errors import ToolError
    from labtools.simulators.fidelity import fidelity
    from labtools.simulators.fidelity.plot import plot
    from labtools.simulators.profile import ProfileError
    from labtools.simulators.published import load_profile

    if args.tasks and args.no_tasks:
        print("labtools: --task and --no-tasks together", file=sys.stderr)
        return 2
    try:
        twin = load_profile(args.twin)
    except ProfileError as error:
        print(f"labtools: {error}", file=sys.stderr)
        return 2
    lab = open_lab(args)
    if lab is None:
        return 2
    try:
        with lab:
            report = fidelity(
                lab,
                twin,
                replicates=args.replicates,
                tasks=() if args.no_tasks else args.tasks,
                pipetting=args.pipetting,
            )
    except ToolError as error:
        print(
            f"labtools: {error.message}" + (f" ({error.hint})" if error.hint else ""),
            file=sys.stderr,
        )
        return 2
    if args.plot is not None:
        print(f"wrote {plot(report, args.plot)}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_table(report))
    return 0


def _table(report: dict) -> str:
    lines = [
        f"twin {report['twin']!r} against {report['lab']!r}, {report['replicates']} replicates"
    ]
    lines.append(
        f"{'group':18s} {'readings':>8s} {'50 %':>6s} {'90 %':>6s} {'95 %':>6s} {'AD p_mc':>8s}"
    )
    for name, group in {**report["groups"], "overall": report["overall"]}.items():
        if not group.get("coverage"):
            continue
        c = group["coverage"]
        lines.append(
            f"{name:18s} {group['readings']:8d} {c['50']:6.3f} {c['90']:6.3f} {c['95']:6.3f} "
            f"{group['test']['p_mc']:8.3f}"
        )
    summary = report["parameters"]["summary"]
    if summary.get("parameters"):
        z_mean, z_sd = summary.get("z_mean", math.nan), summary.get("z_sd") or math.nan
        lines.append(
            f"parameters against {report['parameters']['against']}: {summary['parameters']}, "
            f"z mean {z_mean:.2f} sd {z_sd:.2f}"
        )
    for task, gap in report["rewards"].get("tasks", {}).items():
        lines.append(
            f"reward gap {task:20s} twin {gap['gap_twin']:+.4f}  default {gap['gap_default']:+.4f}"
        )
    if "skipped" in report["rewards"]:
        lines.append(f"reward gap: {report['rewards']['skipped']}")
    return "\n".join(lines)
