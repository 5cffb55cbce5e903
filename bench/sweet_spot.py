"""The sweet spot: twin fidelity against the number of real calibration runs, fixed protocol
against the scheduler (issue 19 item 7).

Per stand-in lab ``i`` (instruments drawn with seed ``HIDDEN_SEED + i``, which neither the
calibration nor the scheduler sees) and target task: real runs (:mod:`labtools.simulators.
calibration.real_runs`), the ``k``-th on its own day ``Lab.virtual(DAY_SEED + 100 i + k,
profile=hidden)``, chosen

- ``fixed``: in the fixed protocol's order (gravimetric 10, 50, 300, 1000 µL, reader,
  spectrometer, cycling), the same for every task;
- ``reward`` and ``parameters``: by the scheduler (:func:`labtools.simulators.calibration.
  schedule.next_run`) for the task, with each of its two criteria.

After N = 1, 2, 4, 8, 16 runs the runs are pooled (:mod:`labtools.simulators.calibration.pool`)
into a twin (``fitted_profile``), and measured:

- ``inside``: the share of the task's parameters (weight > 0, fitted, the hidden value known)
  whose pooled 95 % interval holds the hidden value;
- ``error``: the task's parameter error, ``√(Σ_p w_p ((twin_p − hidden_p) / prior sd_p)²)``, the
  twin's value the pooled fit's or, unfitted, the published prior's mean (1 for a twin no
  better than the prior, about), and its two parts: ``error_bias`` (every key but a channel's
  precision) and ``error_spread`` (a channel's ``a`` and ``c``);
- ``coverage``: held-out readings' 95 % predictive coverage (:func:`labtools.simulators.
  fidelity.fidelity` on the day ``HELD_OUT_SEED + i``, every reading of the whole protocol);
- ``gap``: the task's expert reward, stand-in − twin (mean over :data:`REWARD_SEEDS`), and
  ``gap_default`` with the published profile.

Printed as a table of means over labs (and ``|gap|``), then one JSON object. Run:
``python -m bench.sweet_spot`` (about 4 minutes a lab on one core, 2 tasks and 3
policies; ``--first I --labs N --save FILE`` a share, ``--merge FILE ... [--plot PNG]`` the
summary, joined by lab, of shares run with different ``--arms``), ``python -m bench --quick
sweet_spot`` (one lab, one task, N = 1, 2, no ``parameters`` policy).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.timing import few
from labtools.lab import Lab
from labtools.simulators.calibration.fitted import fitted_profile
from labtools.simulators.calibration.pool import pool_fits
from labtools.simulators.calibration.real_runs import RUN_KINDS, fit_run, fixed_sequence, make_run
from labtools.simulators.calibration.schedule import (
    CRITERIA,
    next_run,
    prior_spread,
    task_weights,
)
from labtools.simulators.fidelity import fidelity
from labtools.simulators.fidelity.rewards import reward_gaps
from labtools.simulators.profile import Profile
from labtools.simulators.published import published
from labtools.simulators.stand_in import drawn_profile

#: stand-in labs' seeds: disjoint from the tests' and from bench.fidelity's 7000-9999
HIDDEN_SEED = 20_000
DAY_SEED = 21_000
HELD_OUT_SEED = 29_000
LABS = 4
BUDGETS = (1, 2, 4, 8, 16)
#: target tasks: one on the 300 µL tips, one on the 1000 µL tips [C: relevance, measured]
TASKS = ("dye_quantification", "enzyme_inhibition")
REWARD_SEEDS = (0, 1, 2)
REPLICATES = 8
#: the key segments of a channel's precision (its delivery sd's two terms), apart in ``error``
SPREAD_SEGMENTS = ("a", "c")
#: the policies compared: the fixed protocol and the scheduler's two criteria
ARMS = ("fixed", *CRITERIA)


def _runs(
    hidden: Profile, i: int, kinds: Sequence[str], weights: Mapping[str, float], n: int, arm: str
) -> list[dict[str, Any]]:
    """``n`` runs on lab ``i``'s days: the fixed order or the scheduler's (``arm``: a
    criterion of :data:`~labtools.simulators.calibration.schedule.CRITERIA`)."""
    prior = published()
    fits: list[dict[str, Any]] = []
    order = fixed_sequence(n, kinds)
    for k in range(n):
        chosen = None if arm == "fixed" else next_run(fits, weights, kinds, prior, arm)
        kind = order[k] if chosen is None else chosen["next"]
        with Lab.virtual(DAY_SEED + 100 * i + k, profile=hidden) as lab:
            fits.append(fit_run(make_run(lab, kind)))
    return fits


def _task_parameters(
    pooled: Mapping[str, Any], hidden: Profile, weights: Mapping[str, float]
) -> dict[str, Any]:
    prior = published()
    inside: list[bool] = []
    squares = {"bias": 0.0, "spread": 0.0}
    for key, w in weights.items():
        if w <= 0.0 or key not in hidden or not hidden[key].fixed:
            continue
        truth = float(hidden[key].value)  # type: ignore[arg-type]
        spread = prior_spread(prior[key].prior)
        fit = pooled.get(key)
        if fit is not None:
            value = float(fit["value"])
            inside.append(fit["ci95"][0] <= truth <= fit["ci95"][1])
        else:
            value = prior.expected(key)
        if spread > 0.0:
            part = "spread" if key.rsplit(".", 1)[-1] in SPREAD_SEGMENTS else "bias"
            squares[part] += w * ((value - truth) / spread) ** 2
    return {
        "inside": statistics.fmean(inside) if inside else None,
        "fitted": len(inside),
        "error": math.sqrt(squares["bias"] + squares["spread"]),
        "error_bias": math.sqrt(squares["bias"]),
        "error_spread": math.sqrt(squares["spread"]),
    }


def _measure(
    fits: list[dict[str, Any]],
    hidden: Profile,
    i: int,
    task: str,
    weights: Mapping[str, float],
    replicates: int,
    seeds: Sequence[int],
    coverage: dict[int, float] | None = None,
) -> dict[str, Any]:
    pooled = pool_fits(fits)
    twin = fitted_profile(pooled, origin=f"bench.sweet_spot lab {i}, {len(fits)} runs")
    gaps = reward_gaps(hidden, twin, [task], seeds)[task]
    out = {
        "n": len(fits),
        "kinds": [f["kind"] for f in fits],
        "failed": len(pooled["failed"]),
        **_task_parameters(pooled["parameters"], hidden, weights),
        "gap": gaps["gap_twin"],
        "gap_default": gaps["gap_default"],
    }
    if coverage is not None and len(fits) in coverage:
        out["coverage"] = coverage[len(fits)]
    elif replicates >= 2:
        with Lab.virtual(HELD_OUT_SEED + i, profile=hidden) as lab:
            report = fidelity(lab, twin, replicates=replicates, tasks=())
        out["coverage"] = report["overall"]["coverage"]["95"]
    return out


def one_lab(
    i: int,
    tasks: Sequence[str],
    budgets: Sequence[int],
    replicates: int,
    seeds: Sequence[int],
    arms: Sequence[str] = ARMS,
) -> dict[str, Any]:
    hidden = drawn_profile(HIDDEN_SEED + i)
    kinds = list(RUN_KINDS)
    top = max(budgets)
    fixed = _runs(hidden, i, kinds, {}, top, "fixed") if "fixed" in arms else []
    out: dict[str, Any] = {"lab": i, "tasks": {}}
    fixed_coverage: dict[int, float] = {}
    for task in tasks:
        weights = task_weights(task, kinds)
        rows: dict[str, list[dict[str, Any]]] = {}
        for arm in arms:
            runs = fixed if arm == "fixed" else _runs(hidden, i, kinds, weights, top, arm)
            shared = fixed_coverage if arm == "fixed" else None
            rows[arm] = []
            for n in budgets:
                row = _measure(runs[:n], hidden, i, task, weights, replicates, seeds, shared)
                if arm == "fixed":
                    fixed_coverage.setdefault(n, row.get("coverage", math.nan))
                rows[arm].append(row)
        out["tasks"][task] = rows
    return out


def merged(labs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved labs with their arms from several files joined by lab index (``eig``, the name
    the ``parameters`` criterion had in files written before there were two, read as that)."""
    by_lab: dict[int, dict[str, Any]] = {}
    for lab in labs:
        into = by_lab.setdefault(lab["lab"], {"lab": lab["lab"], "tasks": {}})
        for task, rows in lab["tasks"].items():
            for arm, values in rows.items():
                into["tasks"].setdefault(task, {})["parameters" if arm == "eig" else arm] = values
    return [by_lab[i] for i in sorted(by_lab)]


def summarise(labs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "labs": len(labs),
        "seeds": {"hidden": HIDDEN_SEED, "days": DAY_SEED, "held_out": HELD_OUT_SEED},
        "tasks": {},
    }
    for task in labs[0]["tasks"]:
        table: dict[str, list[dict[str, Any]]] = {}
        for arm in [a for a in ARMS if a in labs[0]["tasks"][task]]:
            table[arm] = []
            for j, row in enumerate(labs[0]["tasks"][task][arm]):
                cells = [lab["tasks"][task][arm][j] for lab in labs]

                def mean(name: str, cells: list[dict[str, Any]] = cells) -> float | None:
                    values = [c[name] for c in cells if c.get(name) is not None]
                    return statistics.fmean(values) if values else None

                table[arm].append(
                    {
                        "n": row["n"],
                        "inside": mean("inside"),
                        "error": mean("error"),
                        "error_bias": mean("error_bias"),
                        "error_spread": mean("error_spread"),
                        "coverage": mean("coverage"),
                        "gap_mean": mean("gap"),
                        "gap_mean_abs": statistics.fmean(abs(c["gap"]) for c in cells),
                        "gap_default_mean_abs": statistics.fmean(
                            abs(c["gap_default"]) for c in cells
                        ),
                        "failed_fits": sum(c["failed"] for c in cells),
                        "kinds_lab0": cells[0]["kinds"],
                    }
                )
        out["tasks"][task] = table
    return out


def _cells(row: dict[str, Any]) -> str:
    def number(name: str, digits: int = 3) -> str:
        value = row.get(name)
        return "     -" if value is None else f"{value:6.{digits}f}"

    return (
        f"{number('error_bias')} {number('error_spread')} {number('inside')} "
        f"{number('coverage')} {row['gap_mean_abs']:7.4f}"
    )


def report(labs: list[dict[str, Any]]) -> None:
    summary = summarise(labs)
    print(f"\nmeans over {summary['labs']} stand-in labs (coverage: held-out, 95 %)")
    for task, table in summary["tasks"].items():
        default = next(iter(table.values()))[0]["gap_default_mean_abs"]
        print(f"\n{task}: default profile's |gap| {default:.4f}")
        head = f"{'bias':>6s} {'spread':>6s} {'inside':>6s} {'cover':>6s} {'|gap|':>7s}"
        arms = list(table)
        print("  " + " " * 3 + "".join(f" | {arm:^35s}" for arm in arms))
        print(f"  {'N':>3s}" + f" | {head}" * len(arms))
        for j, row in enumerate(table[arms[0]]):
            print(f"  {row['n']:3d}" + "".join(f" | {_cells(table[a][j])}" for a in arms))
    print(json.dumps(summary))


def plot(summary: Mapping[str, Any], path: str) -> None:
    """The reward gap and the task's bias error against N, per task, both policies (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    tasks = list(summary["tasks"])
    figure, axes = plt.subplots(2, len(tasks), figsize=(5.5 * len(tasks), 7), squeeze=False)
    for j, task in enumerate(tasks):
        for arm, style in (("fixed", "o--"), ("parameters", "s:"), ("reward", "^-")):
            if arm not in summary["tasks"][task]:
                continue
            rows = summary["tasks"][task][arm]
            ns = [r["n"] for r in rows]
            axes[0][j].plot(ns, [r["gap_mean_abs"] for r in rows], style, label=arm)
            axes[1][j].plot(ns, [r["error_bias"] for r in rows], style, label=arm)
        default = next(iter(summary["tasks"][task].values()))[0]["gap_default_mean_abs"]
        axes[0][j].axhline(default, color="grey", linestyle=":", label="published profile")
        axes[0][j].set_title(task)
        axes[0][j].set_ylabel("|reward gap|, mean over labs")
        axes[1][j].set_ylabel("task's bias error (prior sds)")
        for axis in axes[:, j]:
            axis.set_xscale("log", base=2)
            axis.set_xlabel("real runs")
            axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    options = _options(argv)
    if options.merge:
        from pathlib import Path

        labs = merged([lab for p in options.merge for lab in json.loads(Path(p).read_text())])
        report(labs)
        if options.plot:
            plot(summarise(labs), options.plot)
        return
    labs_n = few(options.labs, 1)
    tasks = options.tasks[: few(len(options.tasks), 1)]
    budgets = few(BUDGETS, (1, 2))
    replicates = few(options.replicates, 2)
    seeds = REWARD_SEEDS[: few(len(REWARD_SEEDS), 1)]
    arms = few(options.arms, [a for a in options.arms if a != "parameters"] or options.arms)
    print(
        f"{labs_n} stand-in labs (hidden seeds {HIDDEN_SEED + options.first}…), tasks "
        f"{', '.join(tasks)}, N = {list(budgets)}, {replicates} twin replicates",
        flush=True,
    )
    labs = []
    for i in range(options.first, options.first + labs_n):
        start = time.perf_counter()
        labs.append(one_lab(i, tasks, budgets, replicates, seeds, arms))
        print(f"  lab {i}: {time.perf_counter() - start:.0f} s", flush=True)
        if options.save:
            from pathlib import Path

            Path(options.save).write_text(json.dumps(labs))
    report(labs)


def _options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.sweet_spot")
    parser.add_argument("--first", type=int, default=0, help="the first stand-in lab's index")
    parser.add_argument("--labs", type=int, default=LABS)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument(
        "--replicates",
        type=int,
        default=REPLICATES,
        help="twin replicates for the held-out coverage (0: none)",
    )
    parser.add_argument("--save", help="write each lab's rows here (JSON), as it goes")
    parser.add_argument("--merge", nargs="+", help="summarise saved files instead of running")
    parser.add_argument("--plot", help="with --merge: draw the curves into this PNG")
    return parser.parse_args([] if argv is None and __name__ != "__main__" else argv)


if __name__ == "__main__":
    main()
