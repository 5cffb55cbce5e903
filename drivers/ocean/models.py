"""Ocean spectrometer models as data: one frozen record per model, limits with their sources.

Evidence tags as in the project's physics reference: [V] confirmed in the named source, [L]
recalled literature/datasheet value, [A] assumption.

Protocol note: this driver speaks OBP with header version 0x1100. Of the models below only the STS
speaks it natively over USB [V: python-seabreeze 2.11 ``STS`` uses ``OBPProtocol``]; the real
Flame-S uses Ocean's older command set over USB and the real ST speaks OBP2 (header version
0x2000) [V: python-seabreeze 2.11]. The ``FLAME-S`` and ``ST`` entries are therefore
"-like" models: their detector facts follow the real instruments, their wire protocol is OBP 1.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtools.errors import OutOfRange
from labtools.instruments.spectrometer import SpectrometerLimits
from labtools.units import Range

__all__ = ["MODELS", "DeviceModel", "get_model"]


@dataclass(frozen=True)
class DeviceModel:
    """What the driver must know about a model before talking to it."""

    name: str
    #: detector pixels per spectrum
    pixels: int
    #: largest ADC count; a pixel at it is saturated
    full_scale: int
    #: integration time limits and step, µs (the device unit; converted at the boundary)
    integration_min_us: int
    integration_max_us: int
    integration_step_us: int
    #: most scans the device averages itself (1: the driver averages)
    max_scans_to_average: int
    #: most scans one tool call may average
    max_scans: int = 100
    source: str = ""

    def __post_init__(self) -> None:
        if not 0 < self.integration_min_us <= self.integration_max_us:
            raise ValueError(f"{self.name}: bad integration range")
        if self.pixels < 1 or self.full_scale < 1 or self.integration_step_us < 1:
            raise ValueError(f"{self.name}: pixels, full scale and step must be positive")

    def integration_micros(self, seconds: float) -> int:
        """Seconds → whole device steps of µs; out of range is :class:`OutOfRange` (``/time``),
        never clipped."""
        step = self.integration_step_us
        micros = round(seconds * 1e6 / step) * step
        if not self.integration_min_us <= micros <= self.integration_max_us:
            low, high = self.integration_min_us / 1000, self.integration_max_us / 1000
            raise OutOfRange(
                f"integration time {seconds * 1e3:g} ms is outside the {self.name}'s range",
                field="/time",
                hint=f"{low:g}–{high:g} millisecond",
            )
        return micros

    def limits(self) -> SpectrometerLimits:
        """The tool-level limits (integration time in ms, scans per call)."""
        return SpectrometerLimits(
            integration_time=Range(
                self.integration_min_us / 1000.0, self.integration_max_us / 1000.0, "millisecond"
            ),
            scans=Range(1, self.max_scans),
        )


MODELS: dict[str, DeviceModel] = {
    model.name: model
    for model in (
        DeviceModel(
            name="FLAME-S",
            # 2048-pixel Sony ILX511B, 16-bit ADC [V: seabreeze FLAMES; Flame-S datasheet [L]]
            pixels=2048,
            full_scale=65535,
            # Flame-S datasheet: 1 ms – 65 s [L]. seabreeze FLAMES constants allow 1,000 –
            # 655,350,000 µs [V]; the physics reference says: use the datasheet.
            integration_min_us=1_000,
            integration_max_us=65_000_000,
            integration_step_us=1,  # seabreeze integration_time_base = 1 [V]
            max_scans_to_average=5000,  # device-side averaging is this driver's choice [A]
            source="Flame-S-like: ILX511B 2048 px, 16 bit; datasheet 1 ms–65 s",
        ),
        DeviceModel(
            name="STS",
            # 1024 pixels, 14-bit (16383) [V: seabreeze STS]
            pixels=1024,
            full_scale=16383,
            integration_min_us=10,  # [V: seabreeze STS integration_time_min]
            integration_max_us=85_000_000,  # [V: seabreeze STS integration_time_max]
            integration_step_us=1,
            max_scans_to_average=5000,  # [A]
            source="STS: 1024 px, 14 bit, 10 µs–85 s (seabreeze STS class)",
        ),
        DeviceModel(
            name="ST",
            # 1516 pixels, 14-bit (16383) [V: seabreeze ST, marked uncertain there]
            pixels=1516,
            full_scale=16383,
            integration_min_us=1_560,  # [V: seabreeze ST]
            integration_max_us=6_000_000,  # [V: seabreeze ST]
            integration_step_us=10,  # seabreeze ST integration_time_base = 10 [V]
            max_scans_to_average=1,  # no device-side averaging assumed [A]: the driver averages
            source="ST-like: 1516 px, 14 bit, 1.56 ms–6 s in 10 µs steps (seabreeze ST class)",
        ),
    )
}


def get_model(name: str) -> DeviceModel:
    """The model called ``name`` (case-insensitive); ``ValueError`` lists the known ones."""
    model = MODELS.get(name.upper()) if isinstance(name, str) else None
    if model is None:
        raise ValueError(f"unknown spectrometer model {name!r}; known: {', '.join(MODELS)}")
    return model
