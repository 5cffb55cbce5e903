"""The fidelity report as a figure: coverage per reading group, and the reward gaps per task."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["plot"]


def plot(report: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``report`` (:func:`~labtools.simulators.fidelity.fidelity`'s) as a PNG or any
    format matplotlib names by ``path``'s suffix; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    groups = {**report["groups"], "overall": report["overall"]}
    names = [g for g, v in groups.items() if v.get("coverage")]
    rewards = report.get("rewards", {}).get("tasks", {})
    figure, axes = plt.subplots(1, 2 if rewards else 1, figsize=(12 if rewards else 7, 4.5))
    coverage_axis = axes[0] if rewards else axes
    width = 0.26
    for i, level in enumerate(("50", "90", "95")):
        xs = [j + (i - 1) * width for j in range(len(names))]
        coverage_axis.bar(
            xs, [groups[g]["coverage"][level] for g in names], width, label=f"{level} %"
        )
        coverage_axis.hlines(
            int(level) / 100, -0.5, len(names) - 0.5, colors=f"C{i}", linestyles="dashed"
        )
    coverage_axis.set_xticks(range(len(names)), names, rotation=25, ha="right")
    coverage_axis.set_ylim(0, 1.25)
    coverage_axis.set_ylabel("coverage of the lab's readings")
    coverage_axis.set_title(f"twin {report['twin']!r}, {report['replicates']} replicates")
    coverage_axis.legend(title="interval (nominal dashed)", loc="upper center", ncols=3)
    if rewards:
        tasks = list(rewards)
        ys = range(len(tasks))
        axes[1].barh(
            [y + 0.2 for y in ys], [rewards[t]["gap_twin"] for t in tasks], 0.4, label="twin"
        )
        axes[1].barh(
            [y - 0.2 for y in ys], [rewards[t]["gap_default"] for t in tasks], 0.4, label="default"
        )
        axes[1].axvline(0.0, color="black", linewidth=0.8)
        axes[1].set_yticks(list(ys), tasks)
        axes[1].set_xlabel("expert reward: lab − profile (mean over seeds)")
        axes[1].set_title("reward gap")
        axes[1].legend()
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out
