"""The ``cuvette`` family's expert: an integration time chosen on the band, a dark and a water
reference, a survey at a fixed dilution, then the standard at three levels and the sample in
three fillings, each diluted to put the band near :data:`TARGET_OD`.

1. **Integration time**: the cuvette filled with water, one raw spectrum at a short time; the
   brightest pixel within :data:`BAND_NM` of the analyte's peak scaled to :data:`FILL_FRACTION`
   of the detector's net range (pixels far from the band may saturate: they are masked and
   never used), at most :data:`MAX_MS`. A dark and the water reference at that time.
2. **Survey**: the sample 1 in :data:`SURVEY_FOLD` in the cuvette, its band's signal (below)
   against the standard's expected one gives the sample's strength.
3. **Calibration**: the standard at :data:`LEVELS` of the sample's expected analyte in the
   cuvette, then the sample diluted to :data:`TARGET_OD`, three times. Each filling empties the
   cuvette first; what it leaves behind (:data:`DEAD_UL`) is carried in the nominal
   composition of the next, so that the standard and sample in each filling are known exactly.
4. **Signal**: the compact absorbance spectrum's bins within :data:`BAND_NM` of the peak,
   summed (10 nm bins averaged by the instrument; the same bins for every measurement). A
   straight line through the standards' signals and the reference's zero is the calibration;
   each sample filling's analyte is read off it and the standard's share taken out.
5. Uncertainty: the line's and the fillings' scatter (:meth:`~labtools.demo.analysis.
   StandardCurve.invert`), the standard's label (1 %) and the pipetting (:data:`PIPETTING_SD`),
   in quadrature.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.demo.analysis import StandardCurve
from labtools.demo.labels import label_micromolar
from labtools.simulators.families.cuvette_parts import CUVETTE
from labtools.simulators.families.protocol import MIN_UL, TIP_RACKS
from labtools.simulators.tasks.scripting import Call, batch, nm

__all__ = ["cuvette"]

#: each filling's volume (µL): the beam is covered from 700 µL [A: room for the meniscus]
FILL_UL = 1000.0
#: what the cuvette keeps when emptied (µL): below the tip's reach [the deck's dead volume]
DEAD_UL = 20.0
#: bins (nm) either side of the library's peak summed into the signal [A: a band's top]
BAND_NM = 20.0
#: the integration time puts the band's brightest reference pixel here of the net range [A:
#: under the ~85 % the tool advises]
FILL_FRACTION = 0.75
PROBE_MS, MAX_MS = 20.0, 1000.0
#: scans averaged per acquisition [A: read noise down by √10]
SCANS = 10
#: the survey's dilution [A: a hundredfold range of samples reads 0.02-2.5 OD]
SURVEY_FOLD = 40.0
#: the sample and the standard's middle level in the cuvette at this OD [A: mid-range, where
#: stray light is negligible and the transmitted light well above the read noise]
TARGET_OD = 0.7
LEVELS = (0.5, 1.0, 1.5)
REPLICATES = 3
LABEL_SD = 0.01
#: the pipetting's systematic share of a result (1 sd, relative) [A: as quantify's]
PIPETTING_SD = 0.005


class _Cuvette:
    """The cuvette's nominal contents: µL, the standard's µM and the neat sample's share."""

    def __init__(self) -> None:
        self.volume, self.standard_um, self.sample_share = 0.0, 0.0, 0.0

    def fill(
        self,
        call: Call,
        moves: list[tuple[str, float]],
        *,
        water: str,
        waste: str,
        standard: str,
        sample: str,
        std_um: float,
    ) -> None:
        """Empty the cuvette (but its dead volume) and fill it with ``moves``."""
        if self.volume > DEAD_UL:
            take = self.volume - DEAD_UL
            out = [(CUVETTE, waste, take)]
            call("lh_transfer", **batch(out, "new", tip_rack=_rack(take), channels=[0]))
            self.volume = DEAD_UL
        by_rack: dict[str, list[tuple[str, str, float]]] = {}
        for source, volume in moves:
            by_rack.setdefault(_rack(volume), []).append((source, CUVETTE, volume))
        for rack, group in by_rack.items():
            call("lh_transfer", **batch(group, "new", tip_rack=rack, channels=[0]))
        old = self.volume
        total = old + sum(v for _, v in moves)
        added = dict.fromkeys((standard, sample, water), 0.0)
        for source, volume in moves:
            added[source] += volume
        self.standard_um = (old * self.standard_um + added[standard] * std_um) / total
        self.sample_share = (old * self.sample_share + added[sample]) / total
        self.volume = total


def _rack(volume: float) -> str:
    """The smallest tip rack whose tips hold ``volume`` µL."""
    return next(r for top, r in TIP_RACKS if volume <= top)


def cuvette(
    call: Call,
    *,
    standard: str,
    sample: str,
    water: str,
    waste: str,
    peak_nm: float,
    epsilon: float,
) -> tuple[float, float]:
    """The sample's analyte (µM) and its standard uncertainty, through ``call`` only
    (``peak_nm`` and ``epsilon``: the library's, to plan dilutions; the result rests on the
    standard alone)."""
    deck = call("lh_get_deck")
    std_um = label_micromolar(deck["labels"][standard])
    cell = _Cuvette()

    def fill(moves: list[tuple[str, float]]) -> None:
        cell.fill(
            call,
            [(s, round(v, 1)) for s, v in moves if v > 0],
            water=water,
            waste=waste,
            standard=standard,
            sample=sample,
            std_um=std_um,
        )

    def measure() -> np.ndarray:
        result = call("spec_measure_absorbance", scans=SCANS)
        grid = np.asarray(result["wavelengths"], dtype=float)
        values = np.array([np.nan if v is None else float(v) for v in result["absorbance"]])
        return values[np.abs(grid - peak_nm) <= BAND_NM]

    # 1. the integration time on the band, a dark, the water reference
    fill([(water, FILL_UL)])
    call("spec_set_integration_time", time={"value": PROBE_MS, "unit": "millisecond"})
    probe = call("spec_acquire_spectrum", scans=1)
    window = call(
        "spec_get_data", data=probe["data"], start=nm(peak_nm - BAND_NM), stop=nm(peak_nm + BAND_NM)
    )
    counts = max(float(v) for v in window["values"] if v is not None)
    ms = PROBE_MS * FILL_FRACTION * float(probe["full_scale"]) / max(counts, 1.0)
    ms = float(min(max(round(ms), 1.0), MAX_MS))
    call("spec_set_integration_time", time={"value": ms, "unit": "millisecond"})
    call("spec_acquire_dark", scans=SCANS)
    call("spec_acquire_reference", scans=SCANS)

    # 2. survey: the sample 1 in SURVEY_FOLD, against the standard's expected signal
    survey_ul = FILL_UL / SURVEY_FOLD
    fill([(water, FILL_UL - survey_ul), (sample, survey_ul)])
    readings: list[tuple[np.ndarray, float, float]] = []  # signal bins, standard µM, share
    readings.append((measure(), cell.standard_um, cell.sample_share))
    survey = readings[0][0]
    # the standard's middle level at TARGET_OD (the library's ε over 1 cm)
    target_std_ul = FILL_UL * TARGET_OD / (epsilon * 1e-6 * std_um)

    # 3. the standard's levels: the first level measured is known, so the survey's strength
    # is read against it
    for multiple in LEVELS:
        take = max(target_std_ul * multiple, MIN_UL)
        fill([(water, FILL_UL - take), (standard, take)])
        readings.append((measure(), cell.standard_um, cell.sample_share))
    # the survey's analyte in µM against the standards' (peak bins, a first straight line)
    bins = _common(readings)
    std_signal = [(float(np.sum(r[0][bins])), r[1]) for r in readings[1:]]
    slope = sum(s * c for s, c in std_signal) / sum(c * c for _, c in std_signal)
    survey_um = float(np.sum(survey[bins])) / slope - readings[0][1]
    neat_um = max(survey_um / max(readings[0][2], 1e-9), 1e-9)
    # the sample diluted to the standards' middle level
    middle_um = target_std_ul * std_um / FILL_UL
    sample_ul = min(FILL_UL, max(FILL_UL * middle_um / neat_um, MIN_UL))
    for _ in range(REPLICATES):
        fill([(water, FILL_UL - sample_ul), (sample, sample_ul)])
        readings.append((measure(), cell.standard_um, cell.sample_share))

    # 4-5. the calibration line (the reference's zero and the standards) and the sample off it
    bins = _common(readings[1:])
    signal = [float(np.sum(r[0][bins])) for r in readings]
    standards = readings[1 : 1 + len(LEVELS)]
    curve, _ = StandardCurve.fit_robust(
        [0.0, *(r[1] for r in standards)], [0.0, *signal[1 : 1 + len(LEVELS)]]
    )
    samples = list(range(1 + len(LEVELS), len(readings)))
    # each filling's response less its standard's share (the dead volume's), per neat share
    share = float(np.mean([readings[i][2] for i in samples]))
    adjusted = [
        (signal[i] - curve.slope * readings[i][1]) * share / readings[i][2] for i in samples
    ]
    in_cell, sd_cell = curve.invert(adjusted)
    estimate = in_cell / share
    relative = math.sqrt((sd_cell / max(abs(in_cell), 1e-12)) ** 2 + LABEL_SD**2 + PIPETTING_SD**2)
    return estimate, abs(estimate) * relative


def _common(readings: list[tuple[np.ndarray, float, float]]) -> np.ndarray:
    """The band's bins every reading has a value in (all of them if none)."""
    finite = np.all([np.isfinite(r[0]) for r in readings], axis=0)
    return finite if finite.any() else np.ones_like(finite)
