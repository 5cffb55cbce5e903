"""The demo's figures: the plate as a heatmap with its readings outside the reader's accurate
range flagged, the standard curve with its error bars, the unknown's interval and the
residuals, and the cuvette spectrum.

Each ``*_figure`` function draws a matplotlib figure and returns it (tests read what it draws);
the function of the plain name saves it as a PNG and closes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from labtools.demo.protocol import REPLICATE_ROWS, Outcome
from labtools.instruments.plate_reader import ACCURATE_OD
from labtools.instruments.plate_reader_values import plate_flags

ROWS, COLUMNS = "ABCDEFGH", range(1, 13)
#: how the plate marks a reading above the accurate range, one below it, and a well with none
HIGH, LOW, UNREAD = "#d62728", "#7f7f7f", "over range"
_FLAG_STYLE: dict[str, dict[str, Any]] = {
    "high": {"edgecolor": HIGH},
    "low": {"edgecolor": LOW, "linestyle": "--"},
    "unread": {"edgecolor": HIGH, "hatch": "///"},
}
#: a two-sided 95 % interval of a normal, in standard deviations
Z95 = 1.959964


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure: Any, path: Path) -> Path:
    figure.savefig(path)
    _pyplot().close(figure)
    return path


def plate_figure(
    values: dict[str, float],
    wavelength_nm: float,
    title: str,
    unread: tuple[str, ...] = (),
    accurate: tuple[float, float] = ACCURATE_OD,
) -> Any:
    """A 96-well plate of OD values, each well labelled with its reading; wells above the
    reader's accurate range outlined in red, below it in dashed grey, wells with no number
    hatched and labelled."""
    plt = _pyplot()
    from matplotlib.patches import Rectangle

    grid = np.array([[values.get(f"{r}{c}", np.nan) for c in COLUMNS] for r in ROWS])
    top = max(float(np.nanmax(grid)) if np.isfinite(grid).any() else 0.0, 0.1)
    figure, ax = plt.subplots(figsize=(9.5, 5.8), dpi=120)
    image = ax.imshow(grid, cmap="YlOrBr", vmin=0, vmax=top)
    ax.set_xticks(range(12), [str(c) for c in COLUMNS])
    ax.set_yticks(range(8), list(ROWS))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    flags = plate_flags(values, unread, accurate)
    for i, r in enumerate(ROWS):
        for j, c in enumerate(COLUMNS):
            well = f"{r}{c}"
            flag = flags.get(well)
            value = values.get(well)
            if value is not None:
                shade = "white" if value > 0.6 * top else "black"
                label = f"{value:.2f}" + ("▲" if flag == "high" else "")
                ax.text(j, i, label, ha="center", va="center", fontsize=7, color=shade)
            if flag is None:
                continue
            corner = (j - 0.46, i - 0.46)
            ax.add_patch(
                Rectangle(
                    corner,
                    0.92,
                    0.92,
                    fill=False,
                    lw=2.4,
                    gid=f"flag:{flag}:{well}",
                    **_FLAG_STYLE[flag],
                )
            )
            if flag == "unread":
                ax.text(j, i, "OR", ha="center", va="center", fontsize=7, color=HIGH)
    low, high = accurate
    figure.colorbar(image, ax=ax, label=f"absorbance at {wavelength_nm:g} nm (OD)")
    ax.set_title(title)
    ax.text(
        0.0,
        -0.14,
        f"accurate range {low:.1f}–{high:.1f} OD: red outline and ▲ above it, dashed grey "
        f"below it; OR: {UNREAD} (no number)",
        transform=ax.transAxes,
        fontsize=8,
        va="top",
    )
    figure.tight_layout()
    return figure


def plate_heatmap(
    values: dict[str, float],
    wavelength_nm: float,
    path: Path,
    title: str,
    unread: tuple[str, ...] = (),
) -> Path:
    """:func:`plate_figure`, saved to ``path``."""
    return _save(plate_figure(values, wavelength_nm, title, unread), path)


def _levels(outcome: Outcome) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each standard level's nominal nmol, its wells' mean and SD (OD, blank-corrected) and
    how many wells it has."""
    by_level: dict[float, list[float]] = {}
    for well, nmol in outcome.standards.items():
        by_level.setdefault(nmol, []).append(outcome.plate_reading[well] - outcome.blank)
    levels = sorted(by_level)
    reads = [np.asarray(by_level[n]) for n in levels]
    sds = [float(r.std(ddof=1)) if r.size > 1 else 0.0 for r in reads]
    return (
        np.asarray(levels),
        np.asarray([r.mean() for r in reads]),
        np.asarray(sds),
        np.asarray([r.size for r in reads]),
    )


def standard_curve_figure(outcome: Outcome, truth_um: float | None = None) -> Any:
    """The standard curve and its residuals.

    Top: each standard well (blank-corrected OD against its nominal nmol), each level's mean
    with error bars of ±1 SD of its replicates, the fitted line with its 95 % confidence band,
    the wells left out as defects (hollow), readings outside the accurate range (red ×); the
    unknown's wells at the amount read off the curve, with a horizontal error bar of ±1 SD of
    the estimate (every source in the budget) and a band of its 95 % interval; the truth, where
    it is known. Bottom: each standard's residual from the line, with ±2 residual SDs."""
    plt = _pyplot()
    curve = outcome.curve
    per_ul = outcome.sample_ul / 1000.0  # µM → nmol in the unknown's wells
    figure, (ax, below) = plt.subplots(
        2, 1, figsize=(6.8, 6.4), dpi=120, sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    wells = list(outcome.standards)
    nmol = np.asarray([outcome.standards[w] for w in wells])
    od = np.asarray([outcome.plate_reading[w] - outcome.blank for w in wells])
    ax.plot(nmol, od, ".", color="0.55", ms=4, label=f"standard wells ({len(REPLICATE_ROWS)} rows)")
    levels, means, sds, counts = _levels(outcome)
    ax.errorbar(
        levels,
        means,
        yerr=sds,
        fmt="o",
        ms=5,
        capsize=3,
        color="C0",
        label=f"standards: mean ± 1 SD (n = {int(counts.max())})",
        gid="standards",
    )
    unknown = outcome.estimate_um * per_ul
    x = np.linspace(0, max(float(nmol.max()), unknown) * 1.05, 80)
    design = np.column_stack([np.ones_like(x), x])
    line = curve.intercept + curve.slope * x
    band = Z95 * np.sqrt(np.einsum("ij,jk,ik->i", design, curve.covariance, design))
    ax.plot(
        x,
        line,
        "-",
        color="C1",
        lw=1.2,
        label=f"fit: {curve.slope * 1000:.1f} mOD/nmol, R² {curve.r_squared:.4f}",
    )
    ax.fill_between(
        x,
        line - band,
        line + band,
        color="C1",
        alpha=0.25,
        lw=0,
        label="fit, 95 % confidence band",
        gid="fit band",
    )
    reads = np.asarray([outcome.plate_reading[w] - outcome.blank for w in outcome.unknown_wells])
    ax.errorbar(
        [unknown] * len(reads),
        reads,
        xerr=outcome.sd_um * per_ul,
        fmt="s",
        ms=5,
        capsize=4,
        color="C2",
        label=f"unknown: {outcome.estimate_um:.1f} ± {outcome.sd_um:.1f} µM (1 SD)",
        gid="unknown",
    )
    half = Z95 * outcome.sd_um * per_ul
    ax.axvspan(
        unknown - half,
        unknown + half,
        color="C2",
        alpha=0.12,
        lw=0,
        label="unknown, 95 % interval",
        gid="unknown interval",
    )
    if truth_um is not None:
        ax.axvline(
            truth_um * per_ul,
            ls="--",
            lw=1,
            color="k",
            label=f"hidden truth: {truth_um:.1f} µM",
            gid="truth",
        )
    out = [w for w in outcome.left_out if w in outcome.plate_reading]
    if out:
        ax.plot(
            [_nominal(outcome, w, unknown) for w in out],
            [outcome.plate_reading[w] - outcome.blank for w in out],
            "o",
            mfc="none",
            color="C3",
            label="left out (defect)",
            gid="left out",
        )
    flagged = [
        w
        for w in plate_flags(outcome.plate_reading, (), ACCURATE_OD)
        if w in outcome.standards or w in outcome.unknown_wells
    ]
    if flagged:
        low, high = ACCURATE_OD
        ax.plot(
            [_nominal(outcome, w, unknown) for w in flagged],
            [outcome.plate_reading[w] - outcome.blank for w in flagged],
            "x",
            color=HIGH,
            ms=9,
            mew=1.6,
            label=f"read outside {low:.1f}–{high:.1f} OD",
            gid="outside range",
        )
    ax.set_ylabel(f"absorbance at {outcome.wavelength_nm:g} nm (OD, blank-corrected)")
    ax.legend(loc="upper left", fontsize=7)
    ax.grid(alpha=0.3)
    residuals = od - (curve.intercept + curve.slope * nmol)
    below.plot(nmol, residuals * 1000, "o", ms=3.5, color="C0", gid="residuals")
    below.axhline(0, color="C1", lw=1)
    for sign in (-2, 2):
        below.axhline(sign * curve.residual_sd * 1000, ls=":", color="0.4", lw=1)
    below.set_ylabel("residual (mOD)")
    below.set_xlabel(f"{outcome.dye} in the well (nmol)")
    below.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def _nominal(outcome: Outcome, well: str, unknown_nmol: float) -> float:
    """Where a well sits on the curve's axis: a standard's nominal nmol, else the unknown's."""
    return outcome.standards.get(well, unknown_nmol)


def standard_curve(outcome: Outcome, path: Path, truth_um: float | None = None) -> Path:
    """:func:`standard_curve_figure`, saved to ``path``."""
    return _save(standard_curve_figure(outcome, truth_um), path)


def spectrum_plot(spectrum: dict[str, Any], path: Path, title: str) -> Path:
    """The cuvette absorbance spectrum; gaps where pixels saturated or had no light."""
    plt = _pyplot()
    full = spectrum["full"]
    nm = np.asarray(full["wavelengths_nm"])
    absorbance = np.array([np.nan if a is None else a for a in full["absorbance"]])
    keep = (nm >= 350) & (nm <= 750)
    figure, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    ax.plot(nm[keep], absorbance[keep], lw=1)
    if spectrum["peak_wavelength"] is not None:  # null: no band stands above the noise
        peak = spectrum["peak_wavelength"]["value"]
        ax.axvline(peak, ls="--", lw=0.8, color="gray")
        ax.annotate(
            f"peak {peak:.0f} nm",
            (peak, spectrum["peak_absorbance"]),
            textcoords="offset points",
            xytext=(8, -4),
            fontsize=8,
        )
    ax.set_xlabel("wavelength (nm)")
    ax.set_ylabel("absorbance (OD, 1 cm)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)
