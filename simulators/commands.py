"""The simulators' ``labtools`` subcommands (the ``labtools.commands`` entry points):
``labtools profile show``, ``labtools profile draw`` and ``labtools calibrate`` (with
``--budget N`` and ``--next``: real runs one at a time, chosen by expected information).

Importing this module imports nothing but argparse: the command line loads it for every
command, and the physics only when one of these runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register_profile(sub: argparse._SubParsersAction) -> None:
    profile = sub.add_parser(
        "profile", help="show or draw instrument profiles (the twin's physics)"
    )
    actions = profile.add_subparsers(dest="profile_command", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="print a lab's profile (TOML, or --json)")
    source = show.add_mutually_exclusive_group()
    source.add_argument(
        "--lab", help="'virtual' or a lab config TOML file: the profile of its simulated world"
    )
    source.add_argument("--profile", help="a profile file, or 'published' (the default)")
    show.add_argument("--json", action="store_true", help="one JSON object instead of TOML")
    show.set_defaults(func=_show)
    draw = actions.add_parser(
        "draw", help="a plausible instrument set: every per-unit prior drawn with a seed"
    )
    draw.add_argument("--seed", type=int, required=True, help="the seed to draw with")
    draw.add_argument("--profile", help="the profile whose priors are drawn (default published)")
    draw.add_argument("--out", type=Path, help="write the TOML here instead of printing it")
    draw.set_defaults(func=_draw)


def _profile_of(args: argparse.Namespace) -> Any:
    from labtools.simulators.published import load_profile

    if not args.lab:
        return load_profile(args.profile)
    from labtools.config import packaged
    from labtools.lab import VIRTUAL_LAB, Lab

    lab = Lab.load(packaged(VIRTUAL_LAB) if args.lab == "virtual" else args.lab)
    try:
        worlds = [v for v in lab.shared.values() if hasattr(v, "profile") and hasattr(v, "hidden")]
    finally:
        lab.close()
    if not worlds:
        print(f"labtools: {args.lab} simulates nothing: it has no profile", file=sys.stderr)
        return None
    return worlds[0].profile


def _show(args: argparse.Namespace) -> int:
    profile = _profile_of(args)
    if profile is None:
        return 1
    print(json.dumps(profile.to_json(), indent=2) if args.json else profile.to_toml(), end="\n")
    return 0


def _draw(args: argparse.Namespace) -> int:
    from labtools.simulators.published import load_profile
    from labtools.simulators.stand_in import drawn_profile

    base = load_profile(args.profile)
    text = drawn_profile(args.seed, base).to_toml(base=base if base.path is None else None)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text, "utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def register_calibrate(sub: argparse._SubParsersAction) -> None:
    calibrate = sub.add_parser(
        "calibrate",
        help="run the calibration protocol on a lab and fit its instruments' profile",
        description="Runs the calibration protocol (labtools.simulators.calibration) through the "
        "lab's tools, fits every parameter it identifies by maximum likelihood, and writes "
        "them with their 95 %% intervals as a profile laid over the published one.",
    )
    add_lab_arguments(calibrate)
    calibrate.add_argument("--out", type=Path, help="write the fitted profile (TOML) here")
    calibrate.add_argument(
        "--json", action="store_true", help="print parameters, intervals and runs as JSON"
    )
    plan = calibrate.add_argument_group(
        "real runs one at a time (labtools.simulators.calibration.schedule)"
    )
    plan.add_argument(
        "--budget",
        type=int,
        metavar="N",
        help="make N real runs, each on a fresh day of the lab (virtual: seed, seed + 1, ...; "
        "a lab file is opened again for each, so on real instruments make one a day with "
        "--budget 1 --records FILE, the deck fresh), each chosen by its expected information "
        "about --task's parameters, and pool them with the earlier --records",
    )
    plan.add_argument(
        "--next",
        action="store_true",
        help="print the next run to make (JSON: each candidate's expected information gain) "
        "given --records, making none",
    )
    plan.add_argument(
        "--task",
        action="append",
        metavar="TASK",
        help="the task whose parameters matter (again for several; default every task)",
    )
    plan.add_argument(
        "--policy",
        choices=("reward", "parameters", "fixed"),
        default="reward",
        help="how runs are chosen: by expected information about the task's reward "
        "(default), about its parameters one by one, or the fixed protocol's order",
    )
    plan.add_argument(
        "--records",
        type=Path,
        help="a JSON list of the runs made so far (read if it exists; --budget adds its runs)",
    )
    calibrate.set_defaults(func=_calibrate)


def add_lab_arguments(parser: argparse.ArgumentParser) -> None:
    """``--lab``, ``--seed`` and ``--profile``: the lab a command runs its protocol on."""
    parser.add_argument(
        "--lab", default="virtual", help="'virtual' (default) or a lab config TOML file"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the virtual lab")
    parser.add_argument(
        "--profile",
        help="with --lab virtual: build the lab from this profile (a stand-in for a real lab "
        "whose parameters the command never sees)",
    )


def open_lab(args: argparse.Namespace) -> Any:
    """The lab :func:`add_lab_arguments` named, or ``None`` after saying on stderr why not."""
    from labtools.lab import Lab
    from labtools.simulators.profile import ProfileError
    from labtools.simulators.published import load_profile

    if args.profile and args.lab != "virtual":
        print(
            "labtools: --profile builds a virtual lab; give it with --lab virtual", file=sys.stderr
        )
        return None
    if args.lab != "virtual":
        return Lab.load(args.lab)
    try:
        hidden = load_profile(args.profile)
    except ProfileError as error:
        print(f"labtools: {error}", file=sys.stderr)
        return None
    return Lab.virtual(args.seed, profile=hidden)


def _calibrate(args: argparse.Namespace) -> int:
    from labtools.simulators.calibration import calibrate

    if args.next or args.budget is not None:
        return _planned(args)
    lab = open_lab(args)
    if lab is None:
        return 2
    from labtools.cli.progress_bars import calls_bar

    with lab, calls_bar(lab, "calibrating"):
        result = calibrate(lab)
    _write_profile(args, result)
    if args.json or args.out is None:
        print(json.dumps(result, indent=2))
    return 0


def _write_profile(args: argparse.Namespace, result: dict[str, Any]) -> None:
    from labtools.simulators.calibration.fitted import fitted_profile
    from labtools.simulators.published import published

    if args.out is not None:
        origin = f"labtools calibrate --lab {args.lab}" + (
            f" --seed {args.seed}" if args.lab == "virtual" else ""
        )
        args.out.write_text(
            fitted_profile(result, origin=origin).to_toml(base=published()), "utf-8"
        )
        print(f"wrote {args.out}", file=sys.stderr)


def _planned(args: argparse.Namespace) -> int:
    """``--next`` and ``--budget``: real runs one at a time, chosen by expected information."""
    from labtools.session.registry import task_ids
    from labtools.simulators.calibration.real_runs import available_kinds, fit_run
    from labtools.simulators.calibration.schedule import calibrate_budget, next_run, task_weights
    from labtools.simulators.published import published

    if args.budget is not None and args.budget < 1:
        print("labtools: --budget must be at least 1", file=sys.stderr)
        return 2
    unknown = sorted(set(args.task or ()) - set(task_ids()))
    if unknown:
        known = ", ".join(task_ids())
        print(f"labtools: unknown task {unknown[0]!r}; tasks: {known}", file=sys.stderr)
        return 2
    try:
        earlier = _records(args.records)
        fits = [fit_run(record) for record in earlier]
    except (OSError, ValueError, KeyError, TypeError) as error:
        why = f"a record lacks {error}" if isinstance(error, KeyError) else str(error)
        print(f"labtools: --records {args.records}: {why}", file=sys.stderr)
        return 2
    lab = open_lab(args)
    if lab is None:
        return 2
    with lab:
        kinds = available_kinds(lab)
    if args.next:
        weights = task_weights(args.task, kinds)
        criterion = "reward" if args.policy == "fixed" else args.policy
        answer = next_run(fits, weights, kinds, published(), criterion)
        answer.update(task=args.task or "every task", made=[f["kind"] for f in fits])
        print(json.dumps(answer, indent=2))
        return 0

    def open_day(k: int) -> Any:
        day = argparse.Namespace(**{**vars(args), "seed": args.seed + k})
        return open_lab(day)

    done = calibrate_budget(
        open_day,
        args.budget,
        kinds,
        task=args.task,
        policy=args.policy,
        fits=fits,
        keep_records=True,
    )
    result = {**done["result"], "schedule": done["schedule"]}
    if args.records is not None:
        args.records.write_text(json.dumps([*earlier, *done["records"]]), "utf-8")
        print(f"wrote {args.records}", file=sys.stderr)
    _write_profile(args, result)
    if args.json or args.out is None:
        print(json.dumps(result, indent=2))
    return 0


def _records(path: Path | None) -> list[dict[str, Any]]:
    """The runs made so far: ``path``'s JSON list of run records (none where it is not there)."""
    if path is None or not path.exists():
        return []
    records = json.loads(path.read_text("utf-8"))
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and isinstance(r.get("run"), str) for r in records
    ):
        raise ValueError('not a JSON list of run records (objects with a "run")')
    return records
