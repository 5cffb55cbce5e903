"""The plate-reader interface: absorbance (single and kinetic), spectra, fluorescence, luminescence,
incubation temperature.

The tools here are concrete: they resolve and check wells, bound spectrum sizes and shape results.
A driver implements the ``_read_*`` hooks (bare floats: nm in, values per well out, ``inf`` for a
well that saturated the detector, NaN for a well the reader sent no number for because it was out
of its range) and ``_plate_wells``, which also says whether the plate is in the reader. No
absorbance above ``PlateReaderLimits.od_max`` is ever returned as a number: such wells are listed
in ``over_range``, whatever the driver sent. Incubation goes through ``_set_temperature``,
``_temperature`` and ``_settle``; readers without a heater keep the defaults, which refuse with
``not_supported``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from labtools.errors import NotSupported, OutOfRange, brief
from labtools.instrument import Instrument
from labtools.instruments.plate_reader_results import (
    AbsorbanceReading,
    AbsorbanceSpectrum,
    FluorescenceReading,
    KineticReading,
    LuminescenceReading,
    ReaderData,
    SpectrumPeak,
    TemperatureReading,
    TemperatureSet,
)
from labtools.instruments.plate_reader_values import (
    choose_wells,
    echo,
    od_series,
    slope_per_minute,
    split,
    split_od,
    window,
)
from labtools.tool import Arg, tool
from labtools.units import (
    Duration,
    Length,
    Range,
    Temperature,
    Wavelength,
    magnitude,
    qty,
)

__all__ = [
    "ACCURATE_OD",
    "FOCAL_HEIGHTS",
    "GAINS",
    "MONOCHROMATOR_ABSORBANCE",
    "OD_MAX",
    "AbsorbanceReading",
    "AbsorbanceSpectrum",
    "FluorescenceReading",
    "KineticReading",
    "LuminescenceReading",
    "PlateReader",
    "PlateReaderLimits",
    "SpectrumPeak",
    "TemperatureReading",
    "TemperatureSet",
]

NM = "nanometer"
CELSIUS = "degree_Celsius"

#: absorbance range of a typical UV-Vis monochromator plate reader (nm) [A]: the limits of a
#: reader whose PLR backend states none, and the simulated reader's monochromator
#: (``labtools.simulators.plate_reading.ReaderConstants``)
MONOCHROMATOR_ABSORBANCE = Range(230, 1000, NM)

#: top of a typical plate reader's stated absorbance range (OD) [V: "readers report up to
#: ~4.0 OD", Biochrom FAQ (physics reference §4)]
OD_MAX = 4.0

#: the accurate absorbance range (OD, as read, plate included): a typical reader's ±1.0 %
#: ±0.010 OD accuracy holds for 0–2 OD, where the 0.010 OD floor is at most 10 % from 0.1 OD
#: up; above 2 OD stray light bends the response (physics reference §4)
ACCURATE_OD = (0.1, 2.0)

#: read heights (mm above the plate's underside) of a typical top-read reader [V: PLR 0.2.2
#: agilent/biotek_backend.py focal_height_range, 4.5–13.88 mm]: the limits of a reader whose PLR
#: backend states none, and the simulated reader's
FOCAL_HEIGHTS = Range(4.5, 13.88, "millimeter")

#: PMT gains of a reader with a numeric gain [V: Tecan Infinite 200 PRO IFU 30125943 §4.5.1,
#: "selectable from 1 – 255"]; 0 asks for the reader's own gain
GAINS = Range(0, 255)

#: incubation setpoints of a typical heated reader (°C) [V/L]: 4 °C above a 25 °C room
#: ("ambient +4 °C", BioTek's incubation range [L]) to 50 °C (Agilent BioTek Synergy HTX data
#: sheet: "Incubation to 50 °C", ±0.2 °C at 37 °C [V])
INCUBATION = Range(29, 50, CELSIUS)


@dataclass(frozen=True)
class PlateReaderLimits:
    """Optical ranges of the reader (nm) and the largest spectrum it reads in one call."""

    absorbance: Range = MONOCHROMATOR_ABSORBANCE
    excitation: Range = Range(250, 850, NM)
    emission: Range = Range(280, 850, NM)
    spectrum_step: Range = Range(1, 50, NM)
    spectrum_points: int = 771
    #: at most this many numbers are returned inline; larger spectra come as a data handle
    inline_values: int = 600
    #: kinetic reads: time from one read's start to the next, and how many reads
    kinetic_interval: Range = Range(1, 3600, "second")
    kinetic_reads: Range = Range(2, 240)
    #: top of the stated absorbance range (OD): readings above it are reported over-range
    od_max: float = OD_MAX
    #: fluorescence: the read heights (mm) and PMT gains a read may ask for (0: the reader's
    #: own read height or gain)
    focal_height: Range = FOCAL_HEIGHTS
    gain: Range = GAINS
    #: incubation setpoints, and how close (°C) to the setpoint the chamber counts as stable
    #: [V: ±0.2 °C at 37 °C, Agilent BioTek Synergy HTX and Cytation 1 data sheets]
    temperature: Range = INCUBATION
    temperature_tolerance: float = 0.2
    #: waiting for a setpoint: how often the temperature is read, and for how long at most (s)
    #: [A: a 25 → 50 °C step settles in well under an hour on a chamber of minutes]
    temperature_poll_s: float = 10.0
    temperature_wait_s: float = 3600.0

    @property
    def data_index(self) -> Range:
        """Indices of a kept read's points: 0 to the last of the longest spectrum or kinetic
        read."""
        return Range(0, max(self.spectrum_points, int(self.kinetic_reads.high)) - 1)

    @property
    def data_points(self) -> Range:
        """Points a window of a kept read may ask for."""
        return Range(1, self.inline_values)

    @property
    def focal_heights(self) -> str:
        """The read heights a fluorescence read takes, as its description states them."""
        return f"Allowed: 0 (the reader's own) or {self.focal_height.describe()}."


#: the JSON form of 0 mm: ``focal_height``'s default for Python callers (the reader's own)
_OWN_HEIGHT = {"value": 0, "unit": "millimeter"}
_PLATE = "Plate in the reader, e.g. 'plate_1'."
_WELLS = 'Wells, e.g. ["A1", "B1"]; []: all.'


class PlateReader(Instrument):
    """A microplate reader; it reads the plate that is inside it."""

    kind = "plate_reader"
    limits: PlateReaderLimits

    @tool(read_only=True)
    async def read_absorbance(
        self,
        plate: Annotated[str, Arg(_PLATE)],
        wavelength: Annotated[Wavelength, Arg("Measurement wavelength.", within="absorbance")],
        wells: Annotated[Sequence[str], Arg(_WELLS)] = (),
    ) -> AbsorbanceReading:
        """Measure absorbance (OD, base 10, not path-corrected) at one wavelength. Wells above
        the reader's range (dilute them) are in ``over_range``, not ``values``; wells with no
        value, in ``saturated``."""
        chosen = self._choose_wells(plate, wells)
        values = await self._read_absorbance(plate, chosen, magnitude(wavelength, NM))
        finite, saturated, over = split_od(values, self.limits.od_max)
        return {
            "plate": plate,
            "wavelength": echo(wavelength),
            "unit": "OD",
            "values": finite,
            "saturated": saturated,
            "over_range": over,
        }

    @tool(read_only=True)
    async def read_absorbance_spectrum(
        self,
        plate: Annotated[str, Arg(_PLATE)],
        wells: Annotated[Sequence[str], Arg(_WELLS)],
        start: Annotated[Wavelength, Arg("First wavelength.", within="absorbance")],
        stop: Annotated[Wavelength, Arg("Last wavelength (inclusive).", within="absorbance")],
        step: Annotated[Wavelength, Arg("Step.", within="spectrum_step")],
    ) -> AbsorbanceSpectrum:
        """Measure absorbance spectra and each well's peak. Large spectra come as a data
        handle, the peaks inline; values above the reader's range are null, their wells in
        ``over_range``."""
        low, high, by = magnitude(start, NM), magnitude(stop, NM), magnitude(step, NM)
        if high < low:
            raise OutOfRange(
                "stop lies below start",
                field="/stop",
                hint=f"give a stop of at least {start.magnitude:g} {start.units}",
            )
        count = int((high - low) / by + 1e-9) + 1
        if count > self.limits.spectrum_points:
            raise OutOfRange(
                f"{count} wavelengths exceed the {self.limits.spectrum_points} per read",
                field="/step",
                hint=f"use a step of at least "
                f"{(high - low) / (self.limits.spectrum_points - 1):.3g} nm or a narrower range",
            )
        grid = [round(low + i * by, 6) for i in range(count)]
        chosen = self._choose_wells(plate, wells)
        spectra = await self._read_absorbance_spectrum(plate, chosen, grid)
        shown, saturated, over = od_series(spectra, self.limits.od_max)
        peaks: dict[str, SpectrumPeak] = {}
        for well in shown:
            finite = [v if v is not None else -math.inf for v in shown[well]]
            best = max(range(count), key=finite.__getitem__)
            peaks[well] = {
                "wavelength": qty(grid[best], NM),
                "absorbance": shown[well][best] or 0.0,
            }
        handle = self.data.put({"plate": plate, "wavelengths_nm": grid, "absorbance": shown})
        inline = count * len(chosen) <= self.limits.inline_values
        return {
            "plate": plate,
            "wavelengths": grid if inline else [],
            "wavelength_unit": NM,
            "unit": "OD",
            "peaks": peaks,
            "values": shown if inline else {},
            "saturated": saturated,
            "over_range": over,
            "data": handle,
        }

    @tool(long_running=True)  # holds the reader for up to hours while the plate's reactions run
    async def read_absorbance_kinetic(
        self,
        plate: Annotated[str, Arg(_PLATE)],
        wells: Annotated[Sequence[str], Arg(_WELLS)],
        wavelength: Annotated[Wavelength, Arg("Measurement wavelength.", within="absorbance")],
        interval: Annotated[
            Duration,
            Arg("From one read's start to the next's.", within="kinetic_interval"),
        ],
        reads: Annotated[int, Arg("Number of reads; the first at once.", within="kinetic_reads")],
    ) -> KineticReading:
        """Read absorbance (OD) of wells at a fixed interval while the plate's reactions go on
        (also the way to let time pass): ``times`` (s from the first read), ``values`` per well
        per read (null: saturated or over range, the wells in ``saturated``, ``over_range``),
        ``slopes`` (least-squares OD/min). Over 600 values come as a data handle."""
        chosen = self._choose_wells(plate, wells)
        times, series = await self._read_absorbance_kinetic(
            plate, chosen, magnitude(wavelength, NM), magnitude(interval, "second"), reads
        )
        times = [round(t, 3) for t in times]
        shown, saturated, over = od_series(series, self.limits.od_max)
        handle = self.data.put(
            {
                "plate": plate,
                "wavelength_nm": magnitude(wavelength, NM),
                "times_s": times,
                "absorbance": shown,
            }
        )
        inline = len(times) * len(chosen) <= self.limits.inline_values
        return {
            "plate": plate,
            "wavelength": echo(wavelength),
            "unit": "OD",
            "times": times if inline else [],
            "time_unit": "second",
            "values": shown if inline else {},
            "slopes": {w: slope_per_minute(times, v) for w, v in shown.items()},
            "slope_unit": "OD/min",
            "saturated": saturated,
            "over_range": over,
            "data": handle,
        }

    @tool(read_only=True)
    async def get_data(
        self,
        data: Annotated[str, Arg("A read's 'data' handle, e.g. 'reader/3'.")],
        wells: Annotated[Sequence[str], Arg("Wells of that read; []: all.")],
        first: Annotated[
            int, Arg("First point (wavelength or read), from 0.", within="data_index")
        ],
        points: Annotated[int, Arg("How many points.", within="data_points")],
    ) -> ReaderData:
        """Values of a kept spectrum or kinetic read (a handle past 600 values): wavelengths
        (nm) or times (s), OD per well (null: unmeasured). At most 600 values a call; the
        newest 64 reads are kept."""
        stored = self.data.get(data, field="/data")
        return window(data, stored, wells, first, points, self.limits.inline_values)

    @tool(read_only=True)
    async def read_fluorescence(
        self,
        plate: Annotated[str, Arg(_PLATE)],
        wells: Annotated[Sequence[str], Arg(_WELLS)],
        excitation_wavelength: Annotated[
            Wavelength, Arg("Excitation wavelength.", within="excitation")
        ],
        emission_wavelength: Annotated[Wavelength, Arg("Emission wavelength.", within="emission")],
        gain: Annotated[
            int,
            Arg(
                "PMT gain (higher: brighter, saturates sooner); 0: the reader's own.",
                within="gain",
            ),
        ] = 0,
        focal_height: Annotated[
            Length,
            Arg(
                "Focal point above the plate's underside (lower: deeper in the well).",
                note="focal_heights",
            ),
        ] = _OWN_HEIGHT,  # type: ignore[assignment]  # JSON form, as Python callers may give it
    ) -> FluorescenceReading:
        """Measure fluorescence (RFU, top read). Wells saturating the detector are in
        ``saturated``: dilute them or lower the gain. A reader without a numeric gain or an
        adjustable height refuses all but 0 (its own)."""
        ex, em = magnitude(excitation_wavelength, NM), magnitude(emission_wavelength, NM)
        if em <= ex:
            raise OutOfRange(
                "emission must be longer than excitation",
                field="/emission_wavelength",
                hint=f"give an emission wavelength above {ex:g} nm",
            )
        height = magnitude(focal_height, "millimeter")
        heights = self.limits.focal_height
        if height != 0.0 and not heights.contains(focal_height):
            raise OutOfRange(
                f"focal height {height:g} mm is outside the reader's read heights",
                field="/focal_height",
                hint=self.limits.focal_heights,
            )
        chosen = self._choose_wells(plate, wells)
        values = await self._read_fluorescence(plate, chosen, ex, em, gain, height)
        finite, saturated = split(values, 1)
        return {
            "plate": plate,
            "excitation_wavelength": echo(excitation_wavelength),
            "emission_wavelength": echo(emission_wavelength),
            "unit": "RFU",
            "values": finite,
            "saturated": saturated,
        }

    @tool(read_only=True)
    async def read_luminescence(
        self,
        plate: Annotated[str, Arg(_PLATE)],
        wells: Annotated[Sequence[str], Arg(_WELLS)],
    ) -> LuminescenceReading:
        """Measure luminescence (relative light units, counts per second)."""
        chosen = self._choose_wells(plate, wells)
        values = await self._read_luminescence(plate, chosen)
        finite, saturated = split(values, 0)
        return {"plate": plate, "unit": "RLU", "values": finite, "saturated": saturated}

    @tool(long_running=True)  # waiting for a setpoint holds the reader for minutes
    async def set_temperature(
        self,
        temperature: Annotated[Temperature, Arg("Setpoint.", within="temperature")],
        wait: Annotated[
            bool,
            Arg("true: return once the setpoint holds (time passes); false: at once."),
        ] = False,
    ) -> TemperatureSet:
        """Set the chamber's incubation temperature (it heats; it cannot cool below the room).
        The chamber settles in minutes, a plate inside in minutes more. With ``wait``, returns
        once stable or after an hour (``stable`` false)."""
        celsius = magnitude(temperature, CELSIUS)
        await self._set_temperature(celsius)
        limits = self.limits
        waited = 0.0
        if wait:
            waited, current = await self._settle(
                celsius,
                limits.temperature_tolerance,
                limits.temperature_poll_s,
                limits.temperature_wait_s,
            )
        else:
            current, _ = await self._temperature()
        return {
            "setpoint": round(celsius, 2),
            "temperature": round(current, 2),
            "unit": CELSIUS,
            "stable": abs(current - celsius) <= limits.temperature_tolerance,
            "waited": round(waited, 3),
            "waited_unit": "second",
        }

    @tool()
    async def stop_heating(self) -> TemperatureReading:
        """Switch the heater off: the chamber and a plate inside cool to the room over
        minutes."""
        await self._stop_heating()
        return await self._reading()

    @tool(read_only=True)
    async def get_temperature(self) -> TemperatureReading:
        """The chamber's temperature, and its setpoint (null: heater off or unknown)."""
        return await self._reading()

    async def _reading(self) -> TemperatureReading:
        current, setpoint = await self._temperature()
        return {
            "temperature": round(current, 2),
            "setpoint": None if setpoint is None else round(setpoint, 2),
            "unit": CELSIUS,
        }

    def _choose_wells(self, plate: str, wells: Sequence[str]) -> list[str]:
        existing = self._plate_wells(plate)
        hint = f"wells run {existing[0]}–{existing[-1]}"
        return choose_wells(wells, existing, f"plate {brief(plate)}", hint)

    # -- driver hooks --------------------------------------------------------------------------
    @abstractmethod
    def _plate_wells(self, plate: str) -> list[str]:
        """The wells of ``plate`` in reading order. Raises ``UnknownResource`` for an unknown
        plate and ``PreconditionFailed`` when it is not in the reader."""

    @abstractmethod
    async def _read_absorbance(self, plate: str, wells: list[str], nm: float) -> dict[str, float]:
        """OD per well at ``nm`` (``inf`` where saturated, NaN where over-range)."""

    @abstractmethod
    async def _read_absorbance_spectrum(
        self, plate: str, wells: list[str], nm: list[float]
    ) -> dict[str, list[float]]:
        """OD per well at each wavelength of ``nm``."""

    @abstractmethod
    async def _read_absorbance_kinetic(
        self, plate: str, wells: list[str], nm: float, interval_s: float, reads: int
    ) -> tuple[list[float], dict[str, list[float]]]:
        """``reads`` absorbance reads at ``nm``, each starting ``interval_s`` after the last
        (or when the last ends, if later): the seconds from the first read's start to each
        read's, and OD per well per read."""

    @abstractmethod
    async def _read_fluorescence(
        self,
        plate: str,
        wells: list[str],
        excitation_nm: float,
        emission_nm: float,
        gain: int,
        focal_height_mm: float,
    ) -> dict[str, float]:
        """RFU per well (``inf`` or NaN past the detector's range) at PMT ``gain`` and read
        height ``focal_height_mm`` (within the limits; 0: the reader's own)."""

    @abstractmethod
    async def _read_luminescence(self, plate: str, wells: list[str]) -> dict[str, float]:
        """RLU (counts per second) per well."""

    async def _set_temperature(self, celsius: float) -> None:
        """Set the chamber's setpoint (°C, within ``limits.temperature``); returns at once."""
        raise _no_heater(self.name)

    async def _stop_heating(self) -> None:
        """Switch the chamber's heater off; returns at once."""
        raise _no_heater(self.name)

    async def _temperature(self) -> tuple[float, float | None]:
        """The chamber's temperature now and its setpoint (°C; ``None``: off or unknown)."""
        raise _no_heater(self.name)

    async def _settle(
        self, celsius: float, tolerance: float, poll_s: float, most_s: float
    ) -> tuple[float, float]:
        """Wait, reading the temperature every ``poll_s``, until it is within ``tolerance`` of
        ``celsius`` or ``most_s`` have passed: the seconds waited and the last temperature."""
        raise _no_heater(self.name)


def _no_heater(name: str) -> NotSupported:
    return NotSupported(
        f"{name} has no temperature control",
        hint="run temperature-sensitive assays on a reader with an incubator, or at room "
        "temperature",
    )
