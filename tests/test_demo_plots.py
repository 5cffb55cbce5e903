"""The demo's figures show what a scientist checks: each standard level's replicate scatter as
error bars, the unknown's estimate with its uncertainty and 95 % interval, the residuals, and
readings outside the reader's accurate range flagged on the plate and on the curve. Every
number is recomputed here from the plate's readings and compared with what was drawn."""

from __future__ import annotations

import numpy as np
import pytest

from labtools import Lab
from labtools.demo import plots
from labtools.demo.protocol import DyeQuantification, Outcome
from labtools.instruments.plate_reader import ACCURATE_OD

TRUTH_UM = 394.43


@pytest.fixture(scope="module")
def outcome() -> Outcome:
    with Lab.virtual(seed=0) as lab:
        return DyeQuantification(lab, echo=lambda line: None).run()


def _container(ax, gid: str):
    (found,) = [c for c in ax.containers if c.lines[0].get_gid() == gid]
    return found


def _halves(container, axis: int) -> np.ndarray:
    """Half the length of each error bar of ``container`` along ``axis`` (0: x, 1: y)."""
    segments = container.lines[2][0].get_segments()
    return np.array([abs(s[1][axis] - s[0][axis]) / 2 for s in segments])


def test_each_standard_level_has_error_bars_of_its_replicates_sd(outcome: Outcome) -> None:
    figure = plots.standard_curve_figure(outcome, TRUTH_UM)
    levels: dict[float, list[float]] = {}
    for well, nmol in outcome.standards.items():
        levels.setdefault(nmol, []).append(outcome.plate_reading[well] - outcome.blank)
    expected = [np.std(levels[n], ddof=1) for n in sorted(levels)]
    bars = _container(figure.axes[0], "standards")
    assert len(expected) == 7 and all(len(v) == 3 for v in levels.values())
    assert _halves(bars, 1) == pytest.approx(expected, rel=1e-9)
    assert bars.has_yerr and not bars.has_xerr


def test_the_unknown_carries_its_sd_and_its_95_percent_interval(outcome: Outcome) -> None:
    figure = plots.standard_curve_figure(outcome, TRUTH_UM)
    ax = figure.axes[0]
    per_ul = outcome.sample_ul / 1000.0
    unknown = _container(ax, "unknown")
    assert _halves(unknown, 0) == pytest.approx([outcome.sd_um * per_ul] * 3, rel=1e-9)
    assert unknown.get_label().startswith(f"unknown: {outcome.estimate_um:.1f} ± ")
    (band,) = [a for a in ax.patches if a.get_gid() == "unknown interval"]
    x0, width = band.get_x(), band.get_width()
    assert x0 + width / 2 == pytest.approx(outcome.estimate_um * per_ul, rel=1e-9)
    assert width / 2 == pytest.approx(1.959964 * outcome.sd_um * per_ul, rel=1e-6)
    (truth,) = [line for line in ax.lines if line.get_gid() == "truth"]
    assert truth.get_xdata()[0] == pytest.approx(TRUTH_UM * per_ul)
    assert x0 < TRUTH_UM * per_ul < x0 + width  # the demo's seed: truth within the interval


def test_residuals_are_each_standard_off_the_fitted_line(outcome: Outcome) -> None:
    figure = plots.standard_curve_figure(outcome)
    (points,) = [line for line in figure.axes[1].lines if line.get_gid() == "residuals"]
    curve = outcome.curve
    nmol = np.array(list(outcome.standards.values()))
    od = np.array([outcome.plate_reading[w] - outcome.blank for w in outcome.standards])
    assert points.get_ydata() == pytest.approx(
        (od - curve.intercept - curve.slope * nmol) * 1000, abs=1e-9
    )
    assert not [line for line in figure.axes[0].lines if line.get_gid() == "truth"]


def test_readings_outside_the_accurate_range_are_flagged_on_the_plate(outcome: Outcome) -> None:
    low, high = ACCURATE_OD
    values = outcome.plate_reading
    above = {w for w, v in values.items() if v > high}
    below = {w for w, v in values.items() if v < low}
    assert above == {"D1", "E1", "F1"}  # the unknown read neat first, at about 2.2 OD
    figure = plots.plate_figure(values, outcome.wavelength_nm, "plate", ("G5",))
    drawn = {p.get_gid() for p in figure.axes[0].patches if p.get_gid()}
    assert drawn == (
        {f"flag:high:{w}" for w in above} | {f"flag:low:{w}" for w in below} | {"flag:unread:G5"}
    )
    labels = {t.get_text() for t in figure.axes[0].texts}
    assert {f"{values[w]:.2f}▲" for w in above} <= labels and "OR" in labels


def test_standard_curve_marks_the_standards_read_outside_the_range(outcome: Outcome) -> None:
    figure = plots.standard_curve_figure(outcome)
    (marks,) = [line for line in figure.axes[0].lines if line.get_gid() == "outside range"]
    low, high = ACCURATE_OD
    outside = [w for w in outcome.standards if not low <= outcome.plate_reading[w] <= high]
    assert sorted(marks.get_xdata()) == sorted(outcome.standards[w] for w in outside)
    assert outside  # the lowest standards read below 0.1 OD


def test_the_demo_writes_its_figures(tmp_path) -> None:
    from labtools.demo import run_demo

    assert run_demo(seed=0, out=tmp_path, as_json=True) == 0
    for name in ("plate.png", "standard_curve.png", "spectrum.png"):
        assert (tmp_path / name).stat().st_size > 10_000
