"""The demo: a closed-loop dye quantification on the virtual lab, through tool calls only."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from labtools.demo.protocol import DyeQuantification, Outcome, Transcript
from labtools.lab import Lab
from labtools.units import qty

__all__ = ["run_demo"]


def run_demo(seed: int = 0, out: Path = Path("out/demo"), as_json: bool = False) -> int:
    """Run the experiment on ``Lab.virtual(seed)``; write the journal and plots to ``out``."""
    from labtools.demo import plots

    out.mkdir(parents=True, exist_ok=True)
    journal = out / "journal.jsonl"
    started = time.perf_counter()
    echo = (lambda line: None) if as_json else print
    with Lab.virtual(seed=seed, journal=journal) as lab:
        transcript = Transcript(lab, echo)
        protocol = DyeQuantification(lab, call=transcript)
        outcome = protocol.run()
        truth_um = _truth_micromolar(lab, protocol.unknown, outcome.dye)
        calls = transcript.calls
    paths = [
        plots.plate_heatmap(
            outcome.plate_reading,
            outcome.wavelength_nm,
            out / "plate.png",
            "plate_1: standards (rows A–C), unknown (rows D–F), blanks (col 8)",
            outcome.unread,
        ),
        plots.standard_curve(outcome, out / "standard_curve.png", truth_um),
    ]
    if outcome.spectrum is not None:
        paths.append(
            plots.spectrum_plot(
                outcome.spectrum,
                out / "spectrum.png",
                f"unknown in the cuvette, diluted 13× (seed {seed})",
            )
        )
    elapsed = time.perf_counter() - started
    if as_json:
        print(json.dumps(_summary(outcome, truth_um, journal, paths)))
        return 0
    _report(outcome, truth_um, calls, elapsed, journal, paths)
    return 0


def _truth_micromolar(lab: Lab, well: str, species: str) -> float:
    """The unknown's real concentration: simulator truth, read here only to print beside."""
    world = lab.shared["world"]
    return world.contents(well).concentration(species) * 1e6


def _summary(outcome: Outcome, truth_um: float, journal: Path, paths: list[Path]) -> dict[str, Any]:
    return {
        "estimate": qty(outcome.estimate_um, "micromolar", decimals=3),
        "uncertainty": qty(outcome.sd_um, "micromolar", decimals=3),
        "truth": qty(truth_um, "micromolar", decimals=3),
        "journal": str(journal),
        "plots": [str(p) for p in paths],
    }


def _report(
    outcome: Outcome, truth_um: float, calls: int, elapsed: float, journal: Path, paths: list[Path]
) -> None:
    error = outcome.estimate_um - truth_um
    z = error / outcome.sd_um if outcome.sd_um > 0 else float("inf")
    write = sys.stdout.write
    write("\n")
    write(
        f"dye: {outcome.dye}; absorbance peak from the top standard's spectrum: "
        f"{outcome.wavelength_nm:g} nm\n"
    )
    write(
        f"standard curve: slope {outcome.curve.slope * 1000:.2f} mOD/nmol, intercept "
        f"{outcome.curve.intercept:+.4f} OD, R² {outcome.curve.r_squared:.5f} "
        f"({outcome.curve.points} wells)\n"
    )
    write(f"unknown read neat, {outcome.sample_ul:g} µL per well\n")
    write(
        f"estimate (standard curve):   {outcome.estimate_um:8.2f} ± {outcome.sd_um:.2f} µM (1 sd)\n"
    )
    shares = ", ".join(f"{k} {v * 100:.1f} %" for k, v in outcome.budget.items())
    write(f"  uncertainty budget (relative, 1 sd): {shares}\n")
    if outcome.spectrometer_estimate_um is not None:
        write(
            f"cross-check (spectrometer, ε from the literature): "
            f"{outcome.spectrometer_estimate_um:8.2f} µM\n"
        )
    write(
        f"hidden truth:                {truth_um:8.2f} µM   (error {error:+.2f} µM, {z:+.1f} sd)\n"
    )
    write(f"{calls} tool calls in {elapsed:.1f} s; journal {journal}\n")
    write("plots: " + ", ".join(str(p) for p in paths) + "\n")
