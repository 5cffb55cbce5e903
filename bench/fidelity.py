"""Twin fidelity over stand-in real labs: issue 19's "Done when" figures, measured.

Per stand-in lab ``i`` of :data:`LABS`: its instruments drawn from the published profile with
seed ``HIDDEN_SEED + i`` (:func:`labtools.simulators.stand_in.drawn_profile`, which the
calibration never sees); calibrated on ``Lab.virtual(CALIBRATION_SEED + i, profile=hidden)``
(:func:`labtools.simulators.calibration.calibrate`, the twin its `fitted_profile`); then the
same instruments with fresh noise, plates and samples, ``Lab.virtual(HELD_OUT_SEED + i, ...)``,
held against :data:`REPLICATES` replicates of the calibrated twin's predictive lab and of the
published profile's (:func:`labtools.simulators.fidelity.fidelity`). Printed:

- the share of fitted parameters' 95 % intervals that hold the hidden value (goal ≥ 90 %),
  pooled over labs, and by instrument;
- held-out readings' predictive coverage per reading group, mean over labs, calibrated twin
  and published twin side by side (goal: 95 % within ±3 %);
- per task, the expert's reward gap (stand-in − twin and stand-in − published, the mean of
  each lab's mean over :data:`REWARD_SEEDS`; goal ≤ 0.03 for the calibrated twin).

Then one JSON object (the summary). Run: ``python -m bench.fidelity`` (about 25 minutes on one
core; ``python -m bench --quick fidelity``: two labs, five replicates, two tasks); ``--first I
--labs N --save FILE`` runs a share of the labs (two processes side by side), ``--merge FILE
...`` summarises the shares.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.timing import few
from labtools.lab import Lab
from labtools.session.registry import task_ids
from labtools.simulators.calibration import calibrate
from labtools.simulators.calibration.fitted import fitted_profile
from labtools.simulators.fidelity import fidelity
from labtools.simulators.published import published
from labtools.simulators.stand_in import drawn_profile

#: stand-in labs; their seeds: disjoint from every seed the tests use (tests/test_fidelity*.py)
LABS = 20
HIDDEN_SEED = 7_000
CALIBRATION_SEED = 8_000
HELD_OUT_SEED = 9_000
REPLICATES = 12
REWARD_SEEDS = (0, 1, 2)
COVERAGE_GOAL, COVERAGE_TOLERANCE = 0.95, 0.03
INSIDE_GOAL = 0.90
GAP_GOAL = 0.03


def one_lab(i: int, replicates: int, tasks: list[str], reward_seeds: tuple[int, ...]) -> dict:
    hidden = drawn_profile(HIDDEN_SEED + i)
    with Lab.virtual(CALIBRATION_SEED + i, profile=hidden) as lab:
        result = calibrate(lab)
    twin = fitted_profile(result, origin=f"bench.fidelity lab {i}")
    with Lab.virtual(HELD_OUT_SEED + i, profile=hidden) as lab:
        calibrated = fidelity(
            lab, twin, replicates=replicates, tasks=tasks, reward_seeds=reward_seeds
        )
    with Lab.virtual(HELD_OUT_SEED + i, profile=hidden) as lab:
        default = fidelity(lab, published(), replicates=replicates, tasks=())
    return {"calibrated": calibrated, "published": default}


def _instrument(key: str) -> str:
    return key.split(".")[0]


def summarise(labs: list[dict]) -> dict[str, Any]:
    inside: dict[str, list[bool]] = {}
    for lab in labs:
        for key, z in lab["calibrated"]["parameters"]["z"].items():
            inside.setdefault(_instrument(key), []).append(z["inside"])
    pooled = [x for values in inside.values() for x in values]
    groups = [*labs[0]["calibrated"]["groups"], "overall"]

    def coverage(twin: str, group: str, level: str) -> float:
        cells = [
            (lab[twin]["overall"] if group == "overall" else lab[twin]["groups"][group])
            for lab in labs
        ]
        return statistics.fmean(c["coverage"][level] for c in cells)

    cover = {
        twin: {g: {lv: coverage(twin, g, lv) for lv in ("50", "90", "95")} for g in groups}
        for twin in ("calibrated", "published")
    }
    rewards: dict[str, dict[str, float]] = {}
    for task in labs[0]["calibrated"]["rewards"].get("tasks", {}):
        twin_gaps = [lab["calibrated"]["rewards"]["tasks"][task]["gap_twin"] for lab in labs]
        default_gaps = [lab["calibrated"]["rewards"]["tasks"][task]["gap_default"] for lab in labs]
        rewards[task] = {
            "gap_twin_mean": statistics.fmean(twin_gaps),
            "gap_twin_mean_abs": statistics.fmean(abs(g) for g in twin_gaps),
            "gap_twin_max_abs": max(abs(g) for g in twin_gaps),
            "gap_default_mean": statistics.fmean(default_gaps),
            "gap_default_mean_abs": statistics.fmean(abs(g) for g in default_gaps),
            "gap_default_max_abs": max(abs(g) for g in default_gaps),
        }
    z = [z["z"] for lab in labs for z in lab["calibrated"]["parameters"]["z"].values()]
    finite = [v for v in z if abs(v) != float("inf")]
    return {
        "labs": len(labs),
        "seeds": {
            "hidden": HIDDEN_SEED,
            "calibration": CALIBRATION_SEED,
            "held_out": HELD_OUT_SEED,
        },
        "replicates": labs[0]["calibrated"]["replicates"],
        "parameters": {
            "intervals": len(pooled),
            "inside_ci95": statistics.fmean(pooled),
            "by_instrument": {k: statistics.fmean(v) for k, v in sorted(inside.items())},
            "worst_lab": min(
                lab["calibrated"]["parameters"]["summary"]["inside_ci95"] for lab in labs
            ),
            "z_mean": statistics.fmean(finite),
            "z_sd": statistics.stdev(finite) if len(finite) > 1 else None,
        },
        "coverage": cover,
        "coverage_95_spread": {
            twin: {
                g: [
                    min(
                        (lab[twin]["overall"] if g == "overall" else lab[twin]["groups"][g])[
                            "coverage"
                        ]["95"]
                        for lab in labs
                    ),
                    max(
                        (lab[twin]["overall"] if g == "overall" else lab[twin]["groups"][g])[
                            "coverage"
                        ]["95"]
                        for lab in labs
                    ),
                ]
                for g in groups
            }
            for twin in ("calibrated", "published")
        },
        "rewards": rewards,
    }


def main(argv: list[str] | None = None) -> None:
    options = _options(argv)
    if options.merge:
        labs = [lab for path in options.merge for lab in json.loads(Path(path).read_text())]
        return report(labs)
    labs_n = few(options.labs, 2)
    replicates = few(options.replicates, 5)
    tasks = task_ids()[: few(len(task_ids()), 2)]
    reward_seeds = REWARD_SEEDS[: few(len(REWARD_SEEDS), 1)]
    first = options.first
    print(
        f"{labs_n} stand-in labs (hidden seeds {HIDDEN_SEED + first}…"
        f"{HIDDEN_SEED + first + labs_n - 1}), {replicates} twin replicates, reward seeds "
        f"{list(reward_seeds)}",
        flush=True,
    )
    labs = []
    for i in range(first, first + labs_n):
        start = time.perf_counter()
        labs.append(one_lab(i, replicates, tasks, reward_seeds))
        s = labs[-1]["calibrated"]
        print(
            f"  lab {i:2d}: inside ci95 {s['parameters']['summary']['inside_ci95']:.3f}, "
            f"overall 95 % coverage {s['overall']['coverage']['95']:.3f} "
            f"(published {labs[-1]['published']['overall']['coverage']['95']:.3f}), "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )
        if options.save:
            Path(options.save).write_text(json.dumps(labs))
    report(labs)


def _options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity")
    parser.add_argument("--first", type=int, default=0, help="the first stand-in lab's index")
    parser.add_argument("--labs", type=int, default=LABS, help=f"how many (default {LABS})")
    parser.add_argument("--replicates", type=int, default=REPLICATES)
    parser.add_argument("--save", help="write each lab's two reports here (JSON), as it goes")
    parser.add_argument("--merge", nargs="+", help="summarise saved files instead of running")
    return parser.parse_args([] if argv is None and __name__ != "__main__" else argv)


def report(labs: list[dict]) -> None:
    summary = summarise(labs)
    p = summary["parameters"]
    print(
        f"\nfitted parameters' 95 % intervals holding the hidden value: {p['inside_ci95']:.3f} of "
        f"{p['intervals']} (goal ≥ {INSIDE_GOAL}); worst lab {p['worst_lab']:.3f}; "
        + ", ".join(f"{k} {v:.3f}" for k, v in p["by_instrument"].items())
    )
    print(f"  z: mean {p['z_mean']:+.3f}, sd {p['z_sd']:.3f}")
    goal = f"goal 95 % ± {COVERAGE_TOLERANCE * 100:.0f}"
    print(f"\nheld-out predictive coverage, mean over labs ({goal}):")
    print(f"  {'group':18s} {'calibrated 50/90/95':>24s}   {'published 50/90/95':>24s}")
    for group, cal in summary["coverage"]["calibrated"].items():
        pub = summary["coverage"]["published"][group]
        print(
            f"  {group:18s} {cal['50']:7.3f} {cal['90']:7.3f} {cal['95']:7.3f}   "
            f"{pub['50']:7.3f} {pub['90']:7.3f} {pub['95']:7.3f}"
        )
    print(f"\nreward gap, stand-in − profile (goal |gap| ≤ {GAP_GOAL} with the calibrated twin):")
    columns = ("twin mean", "mean |.|", "max |.|", "default mean", "mean |.|", "max |.|")
    print("  {:20s} {:>10s} {:>9s} {:>8s}   {:>12s} {:>9s} {:>8s}".format("task", *columns))
    for task, r in summary["rewards"].items():
        print(
            f"  {task:20s} {r['gap_twin_mean']:+10.4f} {r['gap_twin_mean_abs']:9.4f} "
            f"{r['gap_twin_max_abs']:8.4f}   {r['gap_default_mean']:+12.4f} "
            f"{r['gap_default_mean_abs']:9.4f} {r['gap_default_max_abs']:8.4f}"
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
