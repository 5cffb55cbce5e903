"""The demo's figures: the plate as a heatmap, the standard curve, the cuvette spectrum."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from labtools.demo.analysis import StandardCurve


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plate_heatmap(values: dict[str, float], wavelength_nm: float, path: Path, title: str) -> Path:
    """A 96-well plate of OD values, each well labelled with its reading."""
    plt = _pyplot()
    rows, cols = "ABCDEFGH", range(1, 13)
    grid = np.array([[values.get(f"{r}{c}", np.nan) for c in cols] for r in rows])
    fig, ax = plt.subplots(figsize=(9.5, 5.4), dpi=120)
    image = ax.imshow(grid, cmap="YlOrBr", vmin=0, vmax=max(np.nanmax(grid), 0.1))
    ax.set_xticks(range(12), [str(c) for c in cols])
    ax.set_yticks(range(8), list(rows))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            value = values.get(f"{r}{c}")
            if value is not None:
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > 0.6 * np.nanmax(grid) else "black",
                )
    fig.colorbar(image, ax=ax, label=f"absorbance at {wavelength_nm:g} nm (OD)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def standard_curve(
    curve: StandardCurve,
    amounts: list[float],
    absorbances: list[float],
    unknown_od: list[float],
    unknown_nmol: float,
    wavelength_nm: float,
    path: Path,
) -> Path:
    """The standards' blank-corrected OD against their dye per well (nmol), the fitted line,
    and the unknown's wells at the amount read off it."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=120)
    ax.plot(amounts, absorbances, "o", label="standards (blank-corrected)")
    x = np.linspace(0, max(amounts) * 1.05, 50)
    ax.plot(
        x,
        curve.intercept + curve.slope * x,
        "-",
        label=f"fit: slope {curve.slope * 1000:.1f} mOD/nmol, R² {curve.r_squared:.4f}",
    )
    ax.plot(
        [unknown_nmol] * len(unknown_od), unknown_od, "s", label="unknown, as read in the plate"
    )
    ax.set_xlabel("tartrazine in the well (nmol)")
    ax.set_ylabel(f"absorbance at {wavelength_nm:g} nm (OD)")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def spectrum_plot(spectrum: dict[str, Any], path: Path, title: str) -> Path:
    """The cuvette absorbance spectrum; gaps where pixels saturated or had no light."""
    plt = _pyplot()
    full = spectrum["full"]
    nm = np.asarray(full["wavelengths_nm"])
    absorbance = np.array([np.nan if a is None else a for a in full["absorbance"]])
    keep = (nm >= 350) & (nm <= 750)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
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
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
