"""The plate reader's parameters: fixed constants and hidden per-seed truth, with sources.

Tags as in the physics reference: [V] confirmed in a named source, [L] literature value recalled,
[A] engineering assumption, [C] computed from other rows. Hidden values are drawn once per seed
from the world's ``truth/<key>`` streams, never from the reader's noise stream.
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from labtools.instruments.plate_reader import MONOCHROMATOR_ABSORBANCE

__all__ = [
    "PlateTruth",
    "ReaderConstants",
    "ReaderTruth",
    "draw_plate",
    "draw_reader",
    "reader_data",
]


@functools.cache
def reader_data() -> dict[str, Any]:
    """The parsed ``simulators/data/plate_reader.toml`` (shared; do not change it)."""
    text = resources.files("labtools.simulators").joinpath("data/plate_reader.toml")
    return tomllib.loads(text.read_text("utf-8"))


_ABS, _FLUO = reader_data()["absorbance"], reader_data()["fluorescence"]
_HEAT = reader_data()["incubation"]
_STRAY_LOW, _STRAY_HIGH = (float(x) for x in _ABS["stray_light"])
_OFFSET_LOW, _OFFSET_HIGH = (float(x) for x in _HEAT["sensor_offset_c"])


@dataclass(frozen=True)
class ReaderConstants:
    """Fixed model constants. Override per instance for a calibration profile."""

    #: optical density of an empty clear polystyrene plate: ≈0.04 OD, ~8 % reflected at the
    #: optical surfaces [V: PerkinElmer Victor3 notes, OpenWetWare; physics reference §4]
    plate_od: float = 0.040
    #: absorbance shot-noise scale: σ_A = (0.434 / snr0) · sqrt(10^A) [A, physics reference §4]
    snr0: float = 2000.0
    #: absorbance noise floor, 1 sd in OD [A; repeatability ~±0.5–1 % ±0.005 OD, physics §4 [L]]
    od_noise_floor: float = 0.001
    #: top of the reader's stated absorbance range (OD): a well reading above it is reported
    #: over-range (NaN, as PLR's BioTek backend parses a reader's starred values), never as a
    #: number [V: plate_reader.toml]
    od_range_max: float = float(_ABS["od_range_max"])
    #: readable wavelengths (nm) of the monochromator: labtools' typical UV-Vis reader, the
    #: default plate-reader limits (``MONOCHROMATOR_ABSORBANCE`` [A])
    wavelength_min_nm: float = MONOCHROMATOR_ABSORBANCE.low
    wavelength_max_nm: float = MONOCHROMATOR_ABSORBANCE.high
    #: fluorescence: RFU for 1 nM fluorescein (ε 76,900, Φ 0.93) read 490/515 nm in the
    #: calibration geometry below (``reference_column_mm``, ``reference_focus_mm``): it fixes
    #: the gain, RFU per (M⁻¹ cm⁻¹ · M · cm · Φ). [A], set so that with the background noise
    #: below the detection limit is ~15 pM, near the BioTek FLx800's 2.5 pg/mL (6.6 pM)
    #: fluorescein spec [V: FLx800 spec sheet]
    rfu_per_nm_fluorescein: float = 200.0
    #: fluorescence noise: σ² = floor² + (cv · F)² [A; reader CVs of 1–3 % are typical [L]]
    rfu_noise_floor: float = 1.0
    rfu_cv: float = 0.01
    #: PMT/ADC ceiling in RFU at the reader's fixed gain; above it a well reads as saturated [A]:
    #: reached by fluorescein from ~5 µM in 200 µL at the default focal height [C]
    rfu_ceiling: float = 1.0e6
    #: top-read collection along the well axis: a Lorentzian of this half-width (mm) about the
    #: focal point [A: plate_reader.toml]
    focal_half_width_mm: float = float(_FLUO["focal_half_width_mm"])
    #: the calibration geometry of ``rfu_per_nm_fluorescein``: 200 µL in PLR's
    #: ``cor_96_wellplate_360uL_Fb`` (column, mm) read with the focal point this far above the
    #: well's inner bottom (mm) [C: plate_reader.toml]
    reference_column_mm: float = float(_FLUO["reference_column_mm"])
    reference_focus_mm: float = float(_FLUO["reference_focus_mm"])
    #: water's contact angle on the well wall (degrees, 0–90) for the meniscus correction;
    #: ``None`` (default): flat, as water in polystyrene plates nearly is [V: plate_reader.toml]
    meniscus_contact_angle_deg: float | None = None
    #: luminescence detection efficiency, counts per emitted photon [A]: with the species
    #: library's glow reagent (2×10⁵ photons/s/pmol) 1 pmol reads ~10⁵ RLU, as its notes intend
    photon_detection_efficiency: float = 0.5
    #: diagonal neighbours leak this fraction of an edge neighbour's cross-talk [A]
    diagonal_crosstalk_ratio: float = 0.5
    #: virtual time per read [A]: plate in/out and settling, then per-well costs
    read_overhead_s: float = 4.0
    absorbance_s_per_well: float = 0.08
    spectrum_s_per_well_per_nm: float = 0.01
    fluorescence_s_per_well: float = 0.15
    luminescence_s_per_well: float = 0.10
    open_close_s: float = 2.0
    #: incubation: setpoints from the room's temperature plus ``incubation_above_room_c`` up
    #: to ``incubation_max_c`` (°C); the chamber's air approaches its setpoint with time
    #: constant ``chamber_tau_s``, a plate follows the air with ``plate_tau_s`` (s)
    #: [V/A: plate_reader.toml]
    incubation_above_room_c: float = float(_HEAT["above_room_c"])
    incubation_max_c: float = float(_HEAT["max_c"])
    chamber_tau_s: float = float(_HEAT["chamber_tau_s"])
    plate_tau_s: float = float(_HEAT["plate_tau_s"])


@dataclass(frozen=True)
class ReaderTruth:
    """Hidden per-seed parameters of one reader."""

    #: stray-light fraction s: T_meas = (T + s)/(1 + s), ceiling ≈ −log10 s [A: log-uniform
    #: 1e-5..5e-5, bounded by the Synergy HT accuracy spec and 4.0 OD range, plate_reader.toml]
    stray_light: float
    #: photometric gain error (relative) [A, inside the Synergy HT ±1.0 % ±0.010 OD accuracy
    #: spec for 0–2 OD [V: BioTek Synergy HT operator's manual]]
    gain_error: float
    #: reader zero offset (OD) [A, inside the same spec]
    zero_offset_od: float
    #: the chamber sensor's offset (°C): it reads the air this much high; the controller holds
    #: the sensor at the setpoint [A: within ±0.2 °C, plate_reader.toml]
    sensor_offset_c: float
    #: instrument-to-instrument fluorescence scale (relative) [A]
    fluorescence_scale: float
    #: plate and buffer autofluorescence floor (RFU) [A: clear plate]
    fluorescence_background: float
    #: luminescence cross-talk fraction to each edge neighbour
    #: [A: 1e-6..1e-4 by plate colour and reader, physics reference §6]
    crosstalk: float
    #: dark count rate (counts/s) [A]
    dark_cps: float


@dataclass(frozen=True)
class PlateTruth:
    """Hidden per-plate optics: the plastic's OD and each well's offset (plate item order)."""

    plate_od: float
    well_offsets_od: np.ndarray


def draw_reader(rng: np.random.Generator) -> ReaderTruth:
    """Sample a reader's hidden parameters (called once per seed through ``world.hidden``)."""
    return ReaderTruth(
        stray_light=float(math.exp(rng.uniform(math.log(_STRAY_LOW), math.log(_STRAY_HIGH)))),
        gain_error=float(rng.uniform(-0.006, 0.006)),
        zero_offset_od=float(rng.uniform(-0.004, 0.004)),
        sensor_offset_c=float(rng.uniform(_OFFSET_LOW, _OFFSET_HIGH)),
        fluorescence_scale=float(math.exp(rng.normal(0.0, 0.1))),
        fluorescence_background=float(rng.uniform(10.0, 30.0)),
        crosstalk=float(math.exp(rng.uniform(math.log(1e-6), math.log(1e-4)))),
        dark_cps=float(rng.uniform(10.0, 50.0)),
    )


def draw_plate(rng: np.random.Generator, items: int, plate_od: float) -> PlateTruth:
    """Sample one plate's optics: its OD ±10 % plate to plate and per-well offsets of at most
    ±0.004 OD [A]; with the reader's gain and zero errors the systematic budget stays inside
    ±1.0 % ±0.010 OD [V: Synergy HT spec]."""
    return PlateTruth(
        plate_od=float(plate_od * rng.uniform(0.9, 1.1)),
        well_offsets_od=rng.uniform(-0.004, 0.004, size=items),
    )
