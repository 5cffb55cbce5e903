"""What the plate-reader tools return (their output schemas are generated from these)."""

from __future__ import annotations

from typing_extensions import TypedDict

from labtools.units import QuantityJSON

__all__ = [
    "AbsorbanceReading",
    "AbsorbanceSpectrum",
    "FluorescenceReading",
    "KineticReading",
    "LuminescenceReading",
    "ReaderData",
    "SpectrumPeak",
    "TemperatureReading",
    "TemperatureSet",
]


class AbsorbanceReading(TypedDict):
    plate: str
    wavelength: QuantityJSON
    unit: str
    values: dict[str, float]
    saturated: list[str]
    over_range: list[str]


class SpectrumPeak(TypedDict):
    wavelength: QuantityJSON
    absorbance: float


class AbsorbanceSpectrum(TypedDict):
    plate: str
    wavelengths: list[float]
    wavelength_unit: str
    unit: str
    peaks: dict[str, SpectrumPeak]
    values: dict[str, list[float | None]]
    saturated: list[str]
    over_range: list[str]
    data: str


class KineticReading(TypedDict):
    plate: str
    wavelength: QuantityJSON
    unit: str
    times: list[float]
    time_unit: str
    values: dict[str, list[float | None]]
    slopes: dict[str, float | None]
    slope_unit: str
    saturated: list[str]
    over_range: list[str]
    data: str


class ReaderData(TypedDict):
    data: str
    plate: str
    axis: str
    axis_values: list[float]
    axis_unit: str
    points: int
    unit: str
    values: dict[str, list[float | None]]


class FluorescenceReading(TypedDict):
    plate: str
    excitation_wavelength: QuantityJSON
    emission_wavelength: QuantityJSON
    unit: str
    values: dict[str, float]
    saturated: list[str]


class LuminescenceReading(TypedDict):
    plate: str
    unit: str
    values: dict[str, float]
    saturated: list[str]


class TemperatureReading(TypedDict):
    temperature: float
    setpoint: float | None
    unit: str


class TemperatureSet(TypedDict):
    setpoint: float
    temperature: float
    unit: str
    stable: bool
    waited: float
    waited_unit: str
