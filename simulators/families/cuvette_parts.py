"""The ``cuvette`` family's parts: its levels and its process rubric, read from the journal's
spectrometer calls (the shared replay, :mod:`labtools.session.process`, pairs only the plate
reader's readings with what a well held).

The rubric replays the liquid handler's transfers on a nominal bench (each container's
contents by primary source, as :func:`~labtools.session.process.analyse` does) and pairs every
``spec_measure_absorbance`` with what the cuvette nominally held then, and with the dark and
the water reference kept at that moment's integration time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from labtools.session import Budget
from labtools.session.process import Component, Episode, Rubric, _Bench, _pipette, _verb

__all__ = ["CUVETTE", "LEVEL", "CuvetteLevel", "Measurement", "measurements", "rubric"]

CUVETTE = "cuvette"
#: the process's share of the outcome, as quantify's [A]
PROCESS_WEIGHT = 0.6
#: a measurement counts as bracketed inside this absorbance range [A: the spectrometer's
#: useful range in a 1 cm cuvette, below where stray light and photon starvation bend it]
BRACKET_RANGE = (0.05, 2.0)
#: the cuvette's beam is covered from 700 µL (:class:`~labtools.simulators.spectrometer.
#: cuvette.Cuvette`): a reference or a measurement of less reads partly through air
MIN_FILL_UL = 700.0
#: a source whose share of a measurement is below this fraction of its largest share in any
#: measurement of the episode is a trace, not a content [A: emptying the cuvette leaves 20 µL,
#: 2 % of a 1 mL filling, to the next]
TRACE = 0.05
#: fillings whose sample shares agree within this (relative) are replicates [A: the dead
#: volume's carry-over moves a share by up to 2 %]
REPLICATE_TOLERANCE = 0.05


@dataclass(frozen=True)
class CuvetteLevel:
    """One level's physics and budget."""

    number: int
    #: the sample's optical density neat at the analyte's peak over 1 cm (library ε):
    #: log-uniform within
    od: tuple[float, float]
    #: the spectrometer's noise: its dark noise times this, its S:N at full signal divided by it
    noise: float
    budget: Budget


#: [A] level 1's sample reads near the top of the cuvette's range neat; each level after it
#: lies further over it (a dilution of 1 in 2 to 1 in 150 at level 5), with a noisier detector
#: and fewer calls
LEVEL = {
    1: CuvetteLevel(1, (0.8, 2.5), 1.0, Budget(calls=120, tips=60, reagent_ul=14_000, wells=8)),
    2: CuvetteLevel(2, (1.5, 6.0), 1.0, Budget(calls=100, tips=56, reagent_ul=14_000, wells=8)),
    3: CuvetteLevel(3, (4.0, 15.0), 1.5, Budget(calls=80, tips=52, reagent_ul=14_000, wells=8)),
    4: CuvetteLevel(4, (8.0, 40.0), 2.0, Budget(calls=70, tips=48, reagent_ul=14_000, wells=8)),
    5: CuvetteLevel(5, (20.0, 100.0), 3.0, Budget(calls=60, tips=44, reagent_ul=14_000, wells=8)),
}


@dataclass(frozen=True)
class Measurement:
    """One absorbance spectrum of the cuvette, with what it nominally held then."""

    seq: int
    contents: Mapping[str, float]  # µL of each primary source
    fill: int  # the seq of the cuvette's last change: measurements of one filling share it
    dark: bool  # a dark kept at the measurement's integration time
    reference: Mapping[str, float] | None  # the kept reference's contents (same time)
    peak: float | None  # the absorbance at the analyte's peak (the compact bin nearest it)

    def share(self, source: str) -> float:
        total = sum(self.contents.values())
        return self.contents.get(source, 0.0) / total if total > 0 else 0.0

    def holds(self, source: str) -> bool:
        return self.contents.get(source, 0.0) > 0.0

    def only(self, sources: tuple[str, ...]) -> bool:
        return bool(self.contents) and all(s in sources for s in self.contents)


def measurements(episode: Episode, peak_nm: float) -> list[Measurement]:
    """Every successful ``spec_measure_absorbance`` of the episode, in order, each read at
    ``peak_nm``."""
    bench = _Bench()
    out: list[Measurement] = []
    time: Any = None
    dark: Any = None  # the integration time the kept dark was taken at
    reference: tuple[Any, Mapping[str, float]] | None = None
    for event in episode.calls:
        verb = _verb(event.get("tool"))
        arguments = event.get("arguments") or {}
        seq = int(event.get("seq", 0))
        data = event.get("data") or {}
        if verb in ("transfer", "aspirate", "dispense", "drop_tips"):
            _pipette(bench, verb, arguments, seq)
        elif verb == "set_integration_time":
            time = data.get("integration_time", {}).get("value")
        elif verb == "acquire_dark":
            dark = time
        elif verb == "acquire_reference":
            reference = (time, _held(bench))
        elif verb == "measure_absorbance":
            peak = _at(data, peak_nm)
            kept = reference[1] if reference is not None and reference[0] == time else None
            out.append(
                Measurement(
                    seq=seq,
                    contents=_held(bench),
                    fill=bench.changed.get(CUVETTE, -1),
                    dark=dark is not None and dark == time,
                    reference=kept,
                    peak=float(peak) if isinstance(peak, int | float) else None,
                )
            )
    return _without_traces(out)


def _without_traces(found: list[Measurement]) -> list[Measurement]:
    """``found`` with each source left out of a measurement where it is only a trace
    (:data:`TRACE`)."""
    largest: dict[str, float] = {}
    for m in found:
        for source in m.contents:
            largest[source] = max(largest.get(source, 0.0), m.share(source))
    return [
        replace(
            m,
            contents={s: v for s, v in m.contents.items() if m.share(s) >= TRACE * largest[s]},
        )
        for m in found
    ]


def _at(data: Mapping[str, Any], nm: float) -> float | None:
    """The compact absorbance spectrum's value in the bin nearest ``nm`` (None if masked)."""
    grid, values = data.get("wavelengths") or [], data.get("absorbance") or []
    if not grid or len(grid) != len(values):
        return None
    value = values[min(range(len(grid)), key=lambda i: abs(float(grid[i]) - nm))]
    return float(value) if isinstance(value, int | float) else None


def _held(bench: _Bench) -> dict[str, float]:
    return {k: v for k, v in bench.snapshot(CUVETTE).items() if v > 1e-9}


def rubric(*, standard: str, sample: str, water: str, peak_nm: float, levels: int = 3) -> Rubric:
    """The process rubric of a cuvette quantification of an analyte peaking at ``peak_nm``."""

    def measurements_(e: Episode) -> list[Measurement]:
        return measurements(e, peak_nm)

    def of_sample(e: Episode) -> list[Measurement]:
        return [m for m in measurements_(e) if m.holds(sample)]

    def blank(e: Episode) -> float:
        """Dark and water reference (the beam covered) behind the sample's measurements."""
        found = of_sample(e)
        if not found:
            return 0.0

        def blanked(m: Measurement) -> float:
            ref = m.reference
            water_ref = (
                ref is not None
                and bool(ref)
                and all(s == water for s in ref)
                and sum(ref.values()) >= MIN_FILL_UL
            )
            return 0.5 * m.dark + 0.5 * water_ref

        return min(blanked(m) for m in found)

    def alone(e: Episode) -> float:
        return float(any(m.holds(standard) and m.only((standard, water)) for m in measurements_(e)))

    def ladder(e: Episode) -> list[Measurement]:
        return [m for m in measurements_(e) if m.holds(standard) and not m.holds(sample)]

    def level_count(e: Episode) -> float:
        return min(1.0, len({f"{m.share(standard):.2g}" for m in ladder(e)}) / levels)

    def replicated(e: Episode) -> float:
        shares = {m.fill: m.share(sample) for m in of_sample(e)}  # one share per filling
        best = max(
            (
                sum(abs(other - share) <= REPLICATE_TOLERANCE * share for other in shares.values())
                for share in shares.values()
            ),
            default=0,
        )
        return min(1.0, max(0, best - 1) / 2)

    def bracketed(e: Episode) -> float:
        peaks = [m.peak for m in ladder(e) if m.peak is not None]
        if len(peaks) < 2:
            return 0.0
        low, high = max(BRACKET_RANGE[0], min(peaks)), min(BRACKET_RANGE[1], max(peaks))
        return float(any(m.peak is not None and low <= m.peak <= high for m in of_sample(e)))

    return Rubric(
        (
            Component(
                "blank",
                0.2,
                blank,
                "the sample measured against a dark and a water reference at its integration "
                "time (half each)",
            ),
            Component("reference", 0.2, alone, "the standard measured alone (in water)"),
            Component("levels", 0.2, level_count, f"standard levels measured, out of {levels}"),
            Component(
                "replicates",
                0.2,
                replicated,
                "the sample in three fillings of the cuvette at one dilution (two: half)",
            ),
            Component(
                "bracketed",
                0.2,
                bracketed,
                "a measurement of the sample between standards' measurements",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainty is scored by the outcome itself (CRPS, strictly proper).",
    )
