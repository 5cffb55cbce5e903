"""``labtools eval`` and ``labtools replay``: grounded-reward episodes from the command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labtools.cli import models
from labtools.cli.progress_bars import episodes_bar, printing

if TYPE_CHECKING:
    from concurrent.futures import Future

    from labtools.session.evaluate import EvalReport
    from labtools.session.models import ModelRunner
    from labtools.session.pool import EpisodeResult, TaskEvaluation


def register(sub: argparse._SubParsersAction) -> None:
    from labtools.session.evaluate import TABLE_AGENTS
    from labtools.session.splits import SPLITS, TEST_SECRET_ENV

    evaluate = sub.add_parser(
        "eval", help="run scripted agents (and a model: --model) on tasks over many seeds"
    )
    evaluate.add_argument(
        "--task", action="append", help="task id (repeatable; default: every task)"
    )
    evaluate.add_argument(
        "--agent",
        default=None,
        choices=TABLE_AGENTS,
        help=f"one scripted agent (default: a table of {', '.join(TABLE_AGENTS)} per task; a "
        "task implements some of them)",
    )
    evaluate.add_argument(
        "--secret",
        default=None,
        help="the secret the truth is drawn with (default: labtools' public dev secret)",
    )
    evaluate.add_argument("--seeds", type=int, default=50, help="seeds 0…N-1 (default 50)")
    evaluate.add_argument("--first-seed", type=int, default=0)
    evaluate.add_argument("--k", type=int, default=3, help="k of pass^k (default 3)")
    evaluate.add_argument("--json", action="store_true", help="one JSON object per task")
    evaluate.add_argument(
        "--list", action="store_true", help="list the tasks and the families, and exit"
    )
    evaluate.add_argument(
        "--family",
        action="append",
        help="a task family (repeatable): evaluate it level by level over its instances",
    )
    evaluate.add_argument(
        "--level", action="append", type=int, help="a family's level, 1-5 (repeatable)"
    )
    evaluate.add_argument(
        "--split",
        choices=SPLITS,
        default=None,
        help="the family instances and secret: train (a fresh secret), validation (the public "
        "dev secret, the default), test-id and test-ood (the evaluator's secret: "
        f"--secret-file or ${TEST_SECRET_ENV})",
    )
    evaluate.add_argument(
        "--secret-file", default=None, metavar="FILE", help="a test split's secret, in a file"
    )
    evaluate.add_argument(
        "--save-anchors",
        action="store_true",
        help="with --calibrate --family: write the levels' anchors into the package's table",
    )
    evaluate.add_argument(
        "--calibrate",
        action="store_true",
        help="measure each task's anchors (mean raw score of its naive and "
        "expert protocols) on seeds 1000-1049",
    )
    evaluate.add_argument(
        "--workers",
        type=int,
        default=1,
        help="episodes run side by side, each worker keeping its sessions (default 1: this "
        "process)",
    )
    evaluate.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="where workers run: local (this process, or processes for --workers > 1) or "
        "ray (Ray actors; needs the ray extra)",
    )
    evaluate.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="the Ray cluster to join ('auto': the one on this node; default: start a local "
        "Ray with --workers CPUs)",
    )
    evaluate.add_argument(
        "--export",
        default=None,
        metavar="DIR",
        help="write every episode as a chat-with-tool-calls record, one JSONL file per task",
    )
    models.add_options(evaluate)
    evaluate.set_defaults(func=_eval)

    replay = sub.add_parser("replay", help="re-run an episode journal and diff the results")
    replay.add_argument("journal", help="an episode's JSONL journal")
    replay.add_argument(
        "--secret", required=True, help="the secret of the session that recorded it"
    )
    replay.set_defaults(func=_replay)


def _eval(args: argparse.Namespace) -> int:
    if args.list:
        _list()
        return 0
    with contextlib.ExitStack() as stack:
        try:
            runner = models.open_runner(args)
        except (ValueError, ImportError) as exc:  # a bad option, no API key, no SDK
            print(f"labtools eval: {exc}", file=sys.stderr)
            return 2
        if runner is not None:
            stack.enter_context(runner)
        if args.family or args.split or args.level:
            return _eval_families(args, runner)
        return _eval_tasks(args, runner)


def _eval_tasks(args: argparse.Namespace, runner: ModelRunner | None) -> int:
    """Tasks: one table (or JSON object, or line per agent) per task."""
    from labtools.session.evaluate import CALIBRATION_SECRET, DEV_SECRET, TABLE_AGENTS
    from labtools.session.registry import task_ids

    tasks = args.task or task_ids()
    unknown = [t for t in tasks if ":" not in t and t not in task_ids()]  # or module:Class
    if unknown:
        print(f"labtools eval: unknown task {', '.join(unknown)}; see --list", file=sys.stderr)
        return 2
    for option, value in (("--workers", args.workers), ("--seeds", args.seeds), ("--k", args.k)):
        if value < 1:
            print(f"labtools eval: {option} must be 1 or more, not {value}", file=sys.stderr)
            return 2
    agents: tuple[str, ...]
    if args.calibrate:
        seeds, agents = range(1000, 1050), ("naive", "expert")
        secret = CALIBRATION_SECRET
    else:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        agents = TABLE_AGENTS if args.agent is None else (args.agent,)
        secret = args.secret if args.secret is not None else DEV_SECRET
    from labtools.session.pool import BackendUnavailable, EpisodePool

    options = {"address": args.ray_address} if args.backend == "ray" else {}
    if args.backend == "ray" and args.ray_address is None:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private instance on this machine
    try:
        pool = EpisodePool(args.backend, args.workers, **options)
    except BackendUnavailable as exc:
        print(f"labtools eval: {exc}", file=sys.stderr)
        return 2
    failed = 0
    with pool, episodes_bar("episodes") as progress:
        pool.progress = progress
        trajectories = args.export is not None
        if runner is not None:  # first: the model's episodes run beside the scripted ones
            from labtools.session.pool import episodes

            label = runner.model.label
            model_work = [
                runner.submit(episodes(t, [label], seeds, secret), trajectories=trajectories)
                for t in tasks
            ]
        evaluations = pool.evaluate_tasks(
            tasks, agents, seeds, args.k, secret=secret, trajectories=trajectories
        )
        for n, (task, evaluation) in enumerate(zip(tasks, evaluations, strict=True)):
            if runner is not None:
                evaluation, count = _with_model(evaluation, model_work[n], args.k)
                failed += count
            if args.export is not None:  # first: the episodes are written whatever follows
                _export(Path(args.export), evaluation.task, evaluation.results)
            if args.calibrate:
                anchors = {a: r.mean_raw for a, r in evaluation.reports.items() if r is not None}
                with printing():
                    print(json.dumps({"task": task, "seeds": "1000-1049", **anchors}))
            else:
                _print(evaluation.task, evaluation.reports, seeds, args)
            sys.stdout.flush()
    if not args.calibrate and args.k > len(seeds):
        print(
            f"labtools eval: pass^{args.k} not reported: it needs at least {args.k} seeds, "
            f"and {len(seeds)} ran (--k {len(seeds)} or less reports it)",
            file=sys.stderr,
        )
    return _model_status(failed)


def _with_model(
    evaluation: TaskEvaluation, futures: list[Future[EpisodeResult]], k: int
) -> tuple[TaskEvaluation, int]:
    """``evaluation`` with the model's row, once its episodes are done; and its failures."""
    from labtools.session.models import with_model

    done = [f.result() for f in futures]
    return with_model(evaluation, done, k), models.report_failures(evaluation.task, done)


def _model_status(failed: int) -> int:
    if not failed:
        return 0
    print(
        f"labtools eval: {failed} model episode(s) failed after the SDK's retries (exit "
        f"status {models.FAILED_EPISODES})",
        file=sys.stderr,
    )
    return models.FAILED_EPISODES


def _print(task: str, reports: dict[str, EvalReport | None], seeds: range, args: Any) -> None:
    """The table of every agent (no ``--agent``), or one line (or object) per agent; above
    the progress bar."""
    with printing():
        if args.agent is None:
            _table(task, reports, seeds, args.k, args.json)
            return
        for agent in reports:
            _one_agent(task, agent, reports, args.json)


def _list() -> None:
    """The tasks, then the families with their instance counts and the splits'."""
    from labtools.session.registry import family_ids, load_family, task_class, task_ids

    families = {family_id: load_family(family_id) for family_id in family_ids()}
    member_of = {task: f.id for f in families.values() for task in f.members}
    for task_id in task_ids():
        member = f" (a member of {member_of[task_id]})" if task_id in member_of else ""
        print(f"{task_id:<22} {task_class(task_id).title}{member}")
    total = 0
    for family_id, family in families.items():
        structures = family.structures()
        held = sum(family.held_out(s) for s in structures)
        count = family.count()
        total += count
        print(
            f"{family_id + '/…':<22} {family.title}: {count} instances ({len(family.levels)} "
            f"levels × {len(structures)} structures; {held} structures held out for test-ood)"
        )
    print(
        f"{len(task_ids())} tasks, {len(family_ids())} families of {total} instances "
        "(<family>/<level>/<structure>)"
    )


def _eval_families(args: argparse.Namespace, runner: ModelRunner | None) -> int:
    """Families level by level: one table (or JSON object) per level; with ``--calibrate``
    each level's anchors on the training split's structures."""
    from labtools.session import Anchors
    from labtools.session.evaluate import CALIBRATION_SECRET, TABLE_AGENTS
    from labtools.session.family import LEVELS
    from labtools.session.pool import BackendUnavailable, EpisodePool, level_episodes
    from labtools.session.registry import UnknownTask, family_ids, load_family
    from labtools.session.splits import MissingSecret, split_instances, split_secret

    families = args.family or family_ids()
    try:
        loaded = [load_family(f) for f in families]
    except UnknownTask as exc:
        print(f"labtools eval: {exc}", file=sys.stderr)
        return 2
    split = "train" if args.calibrate else args.split or "validation"
    try:
        secret = (
            CALIBRATION_SECRET
            if args.calibrate
            else args.secret or split_secret(split, secret_file=args.secret_file)
        )
    except (MissingSecret, OSError) as exc:
        print(f"labtools eval: {exc}", file=sys.stderr)
        return 2
    seeds = (
        range(1000, 1050)
        if args.calibrate
        else range(args.first_seed, args.first_seed + args.seeds)
    )
    agents = (
        ("naive", "expert")
        if args.calibrate
        else (TABLE_AGENTS if args.agent is None else (args.agent,))
    )
    try:
        pool = EpisodePool(args.backend, args.workers)
    except BackendUnavailable as exc:
        print(f"labtools eval: {exc}", file=sys.stderr)
        return 2
    failed = 0
    with pool, episodes_bar("episodes") as progress:
        pool.progress = progress
        for family in loaded:
            instances = split_instances(family, split)
            measured = {}
            for level in args.level or family.levels:
                if level not in LEVELS or level not in family.levels:
                    print(f"labtools eval: {family.id} has no level {level}", file=sys.stderr)
                    return 2
                mine = [str(i) for i in instances if i.level == level]
                label = f"{family.id}/{level}"
                if runner is not None:  # beside the scripted episodes, on the same instances
                    work = level_episodes(mine, [runner.model.label], seeds, secret)
                    model_work = runner.submit(work)
                evaluation = pool.evaluate_level(
                    mine, agents, seeds, args.k, label=label, secret=secret
                )
                if runner is not None:
                    evaluation, count = _with_model(evaluation, model_work, args.k)
                    failed += count
                if args.calibrate:
                    raw = {a: r.mean_raw for a, r in evaluation.reports.items() if r is not None}
                    with printing():
                        print(
                            json.dumps(
                                {"family": family.id, "level": level, "seeds": "1000-1049", **raw}
                            )
                        )
                    measured[level] = raw
                else:
                    _print(label, evaluation.reports, seeds, args)
                sys.stdout.flush()
            if args.calibrate and args.save_anchors:
                where = family.record_anchors(
                    {
                        level: Anchors(raw["naive"], raw["expert"], seeds="1000-1049")
                        for level, raw in measured.items()
                    }
                )
                print(f"anchors of {family.id} written to {where}", file=sys.stderr)
    return _model_status(failed)


def _pass_k(report: EvalReport, width: int = 0) -> str:
    """pass^k to three decimals, or ``n/a`` where fewer seeds ran than k."""
    return f"{'n/a' if report.pass_k is None else f'{report.pass_k:.3f}':>{width}}"


def _export(directory: Path, task: str, results: list[Any]) -> None:
    """``DIR/<task>.jsonl``: one training record per episode."""
    from labtools.session.trajectory import write_jsonl

    write_jsonl(directory / f"{task}.jsonl", (r.trajectory for r in results))


def _one_agent(task: str, agent: str, reports: dict[str, EvalReport | None], as_json: bool) -> None:
    """One line (or one JSON object) for ``agent`` on ``task``."""
    report = reports[agent]
    if report is None:
        if as_json:
            print(json.dumps({"task": task, "agent": agent, "implemented": False}))
        else:
            print(f"{task:<22} {agent:<7} not implemented by the task")
        return
    if as_json:
        out = report.as_dict()
        keys = (
            "task",
            "agent",
            "seeds",
            "mean_reward",
            "mean_normalized",
            "mean_raw",
            "k",
            "pass_k",
            "mean_cost",
            *(_MODEL_KEYS if report.mean_tokens is not None else ()),
        )
        print(json.dumps({key: out[key] for key in keys}))
        return
    cost = ", ".join(f"{k} {v:g}" for k, v in report.mean_cost.items())
    tokens = ""
    if report.mean_tokens is not None:
        tokens = (
            f"  tokens: in {report.mean_tokens['input_tokens']:g}, out "
            f"{report.mean_tokens['output_tokens']:g}  errors {report.errors}"
        )
    print(
        f"{report.task:<22} {report.agent:<11} seeds {report.seeds:<4} "
        f"mean reward {report.mean_reward:.3f} (normalised "
        f"{report.mean_normalized:.3f})  pass^{report.k} {_pass_k(report)}  "
        f"mean raw {report.mean_raw:.3f}  cost: {cost}{tokens}"
    )


#: what a model's report adds to the scripted agents' (``--model``): per episode, the API's
#: token counts; the episodes an error ended
_MODEL_KEYS = ("mean_tokens", "errors")


def _table(
    task_id: str, reports: dict[str, EvalReport | None], seeds: range, k: int, as_json: bool
) -> None:
    """Every table agent on a task: a small table, or one JSON object with an entry per
    agent (``null`` for a shortcut the task does not implement)."""
    keys = ("mean_normalized", "pass_k", "mean_reward", "mean_raw", "mean_cost")
    if as_json:
        agents = {
            name: None
            if r is None
            else {
                key: r.as_dict()[key]
                for key in keys + (_MODEL_KEYS if r.mean_tokens is not None else ())
            }
            for name, r in reports.items()
        }
        print(json.dumps({"task": task_id, "seeds": len(seeds), "k": k, "agents": agents}))
        return
    # a model's row (--model) widens the agent column and adds its tokens and errors
    tokens = any(r is not None and r.mean_tokens is not None for r in reports.values())
    width = max(11, *(len(name) for name in reports)) if tokens else 11
    extra = f" {'in tok':>9} {'out tok':>8} {'errors':>6}" if tokens else ""
    print(f"{task_id}: seeds {seeds.start}-{seeds.stop - 1}")
    print(
        f"  {'agent':<{width}} {'normalised':>10} {f'pass^{k}':>7} {'reward':>7} {'raw':>6} "
        f"{'calls':>6}{extra}"
    )
    for name, r in reports.items():
        if r is None:
            print(f"  {name:<{width}} {'not implemented by the task':>40}")
            continue
        extra = ""
        if tokens:
            t = r.mean_tokens
            extra = (
                f" {'-':>9} {'-':>8} {'-':>6}"
                if t is None
                else f" {t['input_tokens']:>9.0f} {t['output_tokens']:>8.0f} {r.errors:>6}"
            )
        print(
            f"  {name:<{width}} {r.mean_normalized:>10.3f} {_pass_k(r, 7)} {r.mean_reward:>7.3f} "
            f"{r.mean_raw:>6.3f} {r.mean_cost.get('calls', 0.0):>6.1f}{extra}"
        )


def _replay(args: argparse.Namespace) -> int:
    from labtools.session.replay import replay

    try:
        report = replay(args.journal, secret=args.secret)
    except (OSError, ValueError) as exc:  # no such file, not a journal, another secret
        print(f"labtools replay: {exc}", file=sys.stderr)
        return 2
    if report.identical:
        print(f"identical: {report.task} seed {report.seed}, {report.calls} calls and the reward")
        return 0
    print(f"{len(report.differences)} difference(s) replaying {report.task} seed {report.seed}:")
    for line in report.differences:
        print(f"  {line}")
    return 1
