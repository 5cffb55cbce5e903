"""The plate reader's parameters: fixed constants and hidden per-seed truth, typed views of the
lab's profile (:mod:`labtools.simulators.profile`), which holds each value or prior with its unit
and source. Hidden values are drawn once per seed from the world's ``truth/<key>`` streams, never
from the reader's noise stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from labtools.instruments.plate_reader import MONOCHROMATOR_ABSORBANCE
from labtools.simulators.profile import Profile
from labtools.simulators.published import data_file, published

__all__ = [
    "CONSTANT_KEYS",
    "LATER_TRUTH",
    "TRUTH_KEYS",
    "PlateTruth",
    "ReaderConstants",
    "ReaderTruth",
    "draw_plate",
    "draw_reader",
    "reader_data",
]


def reader_data() -> dict[str, Any]:
    """The parsed ``simulators/data/plate_reader.toml`` (shared; do not change it)."""
    return data_file("plate_reader.toml")


#: the profile key of each :class:`ReaderConstants` field the profile holds
CONSTANT_KEYS = {
    "plate_od": "reader.absorbance.plate_od",
    "snr0": "reader.absorbance.snr0",
    "od_noise_floor": "reader.absorbance.noise_floor",
    "od_range_max": "reader.absorbance.range_max",
    "rfu_per_nm_fluorescein": "reader.fluorescence.rfu_per_nm_fluorescein",
    "rfu_noise_floor": "reader.fluorescence.noise_floor",
    "rfu_cv": "reader.fluorescence.cv",
    "rfu_ceiling": "reader.fluorescence.ceiling",
    "focal_half_width_mm": "reader.fluorescence.focal_half_width",
    "meniscus_contact_angle_deg": "reader.path.meniscus_contact_angle",
    "reference_column_mm": "reader.fluorescence.reference_column",
    "reference_focus_mm": "reader.fluorescence.reference_focus",
    "photon_detection_efficiency": "reader.luminescence.detection_efficiency",
    "diagonal_crosstalk_ratio": "reader.luminescence.diagonal_ratio",
    "chamber_tau_s": "reader.incubation.chamber_tau",
    "plate_tau_s": "reader.incubation.plate_tau",
    # the physics real readings ask for: off in published-1, on in published-2 (the default)
    "outlier_fraction": "reader.absorbance.outlier_fraction",
    "outlier_od": "reader.absorbance.outlier_od",
    "outlier_path_loss": "reader.absorbance.outlier_path_loss",
    "stray_light_uv_length_nm": "reader.absorbance.stray_light_uv_length",
    "stray_light_uv_wavelength_nm": "reader.absorbance.stray_light_uv_wavelength",
    "path_offset_mm": "reader.path.offset",
    "path_plate_sd": "reader.path.plate_sd",
    "path_well_sd_mm": "reader.path.well_sd",
    "gain_reference": "reader.fluorescence.gain_reference",
    "gain_exponent": "reader.fluorescence.gain_exponent",
}
#: the profile key of each :class:`ReaderTruth` field, in the order they are drawn
TRUTH_KEYS = {
    "stray_light": "reader.absorbance.stray_light",
    "gain_error": "reader.absorbance.gain_error",
    "zero_offset_od": "reader.absorbance.zero_offset",
    "sensor_offset_c": "reader.incubation.sensor_offset",
    "fluorescence_scale": "reader.fluorescence.scale",
    "fluorescence_background": "reader.fluorescence.background",
    "crosstalk": "reader.luminescence.crosstalk",
    "dark_cps": "reader.luminescence.dark_rate",
    "stray_light_uv_ratio": "reader.absorbance.stray_light_uv_ratio",
}
#: the :data:`TRUTH_KEYS` fields added since the others were drawn: a prior among them draws
#: from a stream of its own (:func:`draw_reader`'s ``later``), so the others keep their draws
LATER_TRUTH = ("stray_light_uv_ratio",)


def _published(field: str) -> Any:
    return published()[CONSTANT_KEYS[field]].expected


@dataclass(frozen=True)
class ReaderConstants:
    """Fixed model constants: the published profile's unless built :meth:`from_profile` or
    given (the profile keys are :data:`CONSTANT_KEYS`, each with its unit and source)."""

    #: optical density of an empty clear polystyrene plate (OD)
    plate_od: float = _published("plate_od")
    #: absorbance shot-noise scale: σ_A = (0.434 / snr0) · sqrt(10^A)
    snr0: float = _published("snr0")
    #: absorbance noise floor, 1 sd (OD)
    od_noise_floor: float = _published("od_noise_floor")
    #: top of the reader's stated absorbance range (OD): a well reading above it is reported
    #: over-range (NaN, as PLR's BioTek backend parses a reader's starred values)
    od_range_max: float = _published("od_range_max")
    #: readable wavelengths (nm) of the monochromator: labtools' typical UV-Vis reader, the
    #: default plate-reader limits (``MONOCHROMATOR_ABSORBANCE`` [A])
    wavelength_min_nm: float = MONOCHROMATOR_ABSORBANCE.low
    wavelength_max_nm: float = MONOCHROMATOR_ABSORBANCE.high
    #: fluorescence gain: RFU for 1 nM fluorescein read 490/515 nm in the calibration geometry
    #: (``reference_column_mm``, ``reference_focus_mm``)
    rfu_per_nm_fluorescein: float = _published("rfu_per_nm_fluorescein")
    #: fluorescence noise: σ² = floor² + (cv · F)² (RFU)
    rfu_noise_floor: float = _published("rfu_noise_floor")
    rfu_cv: float = _published("rfu_cv")
    #: PMT/ADC ceiling in RFU at the reader's fixed gain; above it a well reads as saturated
    rfu_ceiling: float = _published("rfu_ceiling")
    #: top-read collection along the well axis: a Lorentzian of this half-width (mm) about the
    #: focal point
    focal_half_width_mm: float = _published("focal_half_width_mm")
    #: the calibration geometry of ``rfu_per_nm_fluorescein``: liquid column and focal point
    #: above the well's inner bottom (mm)
    reference_column_mm: float = _published("reference_column_mm")
    reference_focus_mm: float = _published("reference_focus_mm")
    #: water's contact angle on the well wall (degrees, 0–90) for the meniscus correction;
    #: 90° (``None`` too): flat, as water in polystyrene plates nearly is
    meniscus_contact_angle_deg: float | None = _published("meniscus_contact_angle_deg")
    #: luminescence detection efficiency, counts per emitted photon
    photon_detection_efficiency: float = _published("photon_detection_efficiency")
    #: diagonal neighbours leak this fraction of an edge neighbour's cross-talk
    diagonal_crosstalk_ratio: float = _published("diagonal_crosstalk_ratio")
    #: virtual time per read [A]: plate in/out and settling, then per-well costs
    read_overhead_s: float = 4.0
    absorbance_s_per_well: float = 0.08
    spectrum_s_per_well_per_nm: float = 0.01
    fluorescence_s_per_well: float = 0.15
    luminescence_s_per_well: float = 0.10
    open_close_s: float = 2.0
    #: incubation: setpoints from the room's temperature plus ``incubation_above_room_c`` up
    #: to ``incubation_max_c`` (°C) [V/A: plate_reader.toml]; the chamber's air approaches its
    #: setpoint with time constant ``chamber_tau_s``, a plate follows the air with
    #: ``plate_tau_s`` (s)
    incubation_above_room_c: float = float(reader_data()["incubation"]["above_room_c"])
    incubation_max_c: float = float(reader_data()["incubation"]["max_c"])
    chamber_tau_s: float = _published("chamber_tau_s")
    plate_tau_s: float = _published("plate_tau_s")
    #: defect wells (a bubble, a scratch, dust: each stays with its well for that plate): the
    #: fraction of a plate's wells with one, the sd of its extra OD (symmetric) and the scale
    #: of its path shortfall (relative; ``loss · |N(0, 1)|``, at most the whole path)
    outlier_fraction: float = _published("outlier_fraction")
    outlier_od: float = _published("outlier_od")
    outlier_path_loss: float = _published("outlier_path_loss")
    #: stray light across wavelengths: ``ReaderTruth.stray_light`` in the visible rises
    #: towards ``stray_light_uv_wavelength_nm`` over this length (nm) and holds flat below it
    stray_light_uv_length_nm: float = _published("stray_light_uv_length_nm")
    stray_light_uv_wavelength_nm: float = _published("stray_light_uv_wavelength_nm")
    #: the liquid path: the centre of the surface this far (mm) below the height-volume
    #: table's height (beside the meniscus cap); each plate's paths scaled by N(1, plate_sd²)
    #: and each well's moved by N(0, well_sd²) mm
    path_offset_mm: float = _published("path_offset_mm")
    path_plate_sd: float = _published("path_plate_sd")
    path_well_sd_mm: float = _published("path_well_sd_mm")
    #: PMT gain: ``rfu_per_nm_fluorescein`` holds at ``gain_reference`` (a read without a gain
    #: reads there); signal ∝ (gain / gain_reference)^gain_exponent
    gain_reference: float = _published("gain_reference")
    gain_exponent: float = _published("gain_exponent")

    @classmethod
    def from_profile(cls, profile: Profile, **given: Any) -> ReaderConstants:
        """The constants of ``profile`` (each fixed value, or a prior's mean), ``given``
        replacing any."""
        values = {f: profile[k].expected for f, k in CONSTANT_KEYS.items()}
        return replace(cls(), **{**values, **given})

    def changed(self) -> dict[str, Any]:
        """The fields that differ from the published constants."""
        default = ReaderConstants()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }


@dataclass(frozen=True)
class ReaderTruth:
    """Hidden per-seed parameters of one reader (profile keys :data:`TRUTH_KEYS`)."""

    #: stray-light fraction s: T_meas = (T + s)/(1 + s), ceiling ≈ −log10 s
    stray_light: float
    #: photometric gain error (relative)
    gain_error: float
    #: reader zero offset (OD)
    zero_offset_od: float
    #: the chamber sensor's offset (°C): it reads the air this much high; the controller holds
    #: the sensor at the setpoint
    sensor_offset_c: float
    #: instrument-to-instrument fluorescence scale (relative)
    fluorescence_scale: float
    #: plate and buffer autofluorescence floor (RFU)
    fluorescence_background: float
    #: luminescence cross-talk fraction to each edge neighbour
    crosstalk: float
    #: dark count rate (counts/s)
    dark_cps: float
    #: stray light at ``ReaderConstants.stray_light_uv_wavelength_nm`` over ``stray_light``
    #: (1: flat across wavelengths)
    stray_light_uv_ratio: float = 1.0


@dataclass(frozen=True)
class PlateTruth:
    """Hidden per-plate optics: the plastic's OD and each well's offset (plate item order)."""

    plate_od: float
    well_offsets_od: np.ndarray


def draw_reader(
    rng: np.random.Generator,
    profile: Profile | None = None,
    later: Callable[[], np.random.Generator] | None = None,
) -> ReaderTruth:
    """Sample a reader's hidden parameters from ``profile`` (the published one by default;
    called once per seed through ``world.hidden``). The :data:`LATER_TRUTH` fields draw from
    ``later()`` (``rng`` without it), called only where one of them has draws to make."""
    profile = profile or published()
    values = {f: profile[k].draw(rng) for f, k in TRUTH_KEYS.items() if f not in LATER_TRUTH}
    for name in LATER_TRUTH:
        parameter = profile[TRUTH_KEYS[name]]
        if parameter.prior is None and parameter.draws_like is None:
            values[name] = parameter.draw(rng)  # a fixed value: no draw
        else:
            values[name] = parameter.draw(rng if later is None else later())
    return ReaderTruth(**values)


def draw_plate(
    rng: np.random.Generator, items: int, plate_od: float, profile: Profile | None = None
) -> PlateTruth:
    """Sample one plate's optics: its plastic OD, ``plate_od`` times the profile's
    ``reader.absorbance.plate_od_factor``, and each well's offset
    (``reader.absorbance.well_offset``)."""
    profile = profile or published()
    return PlateTruth(
        plate_od=float(plate_od * profile["reader.absorbance.plate_od_factor"].draw(rng)),
        well_offsets_od=profile["reader.absorbance.well_offset"].draws(rng, items),
    )
