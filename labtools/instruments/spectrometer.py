"""The spectrometer interface: a CCD array spectrometer reading a cuvette.

The front end keeps the dark and reference spectra and computes absorbance
``A = -log10((S - D) / (R - D))`` (:mod:`.absorbance`: which pixels have one, and the peak); a
driver implements the hooks: set the integration time, acquire averaged counts, and report its
wavelength calibration and full scale.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from typing_extensions import TypedDict

from labtools.errors import OutOfRange, PreconditionFailed
from labtools.instrument import DataSnapshot, Instrument
from labtools.instruments.absorbance import Reason, analyse
from labtools.progress import report_progress
from labtools.tool import Arg, tool
from labtools.units import Duration, QuantityJSON, Range, Wavelength, magnitude, qty

__all__ = [
    "AbsorbanceSpectrumResult",
    "CountsSpectrum",
    "IntegrationTimeSet",
    "MaskedRange",
    "Spectrometer",
    "SpectrometerLimits",
    "SpectrometerSnapshot",
]

NM = "nanometer"
#: pixels a get_data call returns at most: a result a model reads whole
MAX_PIXELS = 600


@dataclass(frozen=True)
class SpectrometerLimits:
    """Integration-time range, scans per average, and the compact-form resolution."""

    integration_time: Range = Range(1, 65_000, "millisecond")
    scans: Range = Range(1, 100)
    #: windows of kept spectra (get_data): the span UV–NIR CCD spectrometers' gratings cover
    #: (Ocean's Flame and STS families: about 180–1100 nm); a device's own pixels decide what
    #: a window holds
    wavelengths: Range = Range(150, 1200, "nanometer")
    #: spacing of the inline (compact) spectrum in results; full data stays behind the handle
    compact_step_nm: float = 10.0
    #: pixels within this fraction of full scale in the sample or reference count as saturated
    saturation_margin: float = 0.02
    #: pixels whose reference light is below this fraction of its peak have no absorbance
    min_reference_fraction: float = 0.01
    #: ... or below this many times its own noise (ICH Q2(R1) quantitation limit, S:N 10:1)
    min_reference_snr: float = 10.0
    #: the reported peak is the maximum of the spectrum averaged over this window (nm) ...
    peak_window_nm: float = 4.0
    #: ... standing above zero absorbance by this many times its noise (else no peak)
    peak_significance: float = 6.0


class IntegrationTimeSet(TypedDict):
    integration_time: QuantityJSON


class CountsSpectrum(TypedDict):
    integration_time: QuantityJSON
    scans: int
    max_counts: float
    full_scale: float
    peak_wavelength: QuantityJSON
    saturated_pixels: int
    data: str


class MaskedRange(TypedDict):
    """Pixels from start to stop (in the result's wavelength_unit) that have no absorbance."""

    start: float
    stop: float
    reason: Reason


class AbsorbanceSpectrumResult(TypedDict):
    integration_time: QuantityJSON
    scans: int
    peak_wavelength: QuantityJSON | None
    peak_absorbance: float | None
    wavelengths: list[float]
    wavelength_unit: str
    absorbance: list[float | None]
    masked: list[MaskedRange]
    saturated_pixels: int
    data: str


class SpectrumData(TypedDict):
    """The full-resolution values behind a handle, over a wavelength window."""

    data: str
    kind: str
    wavelengths: list[float]
    wavelength_unit: str
    values: list[float | None]
    unit: str


_SCANS = "Number of scans to average; noise falls as 1/sqrt(scans)."


@dataclass
class _Stored:
    counts: np.ndarray
    integration_s: float
    scans: int = 1


@dataclass(frozen=True)
class SpectrometerSnapshot:
    """The front end's state, for :meth:`Spectrometer.restore`."""

    integration_s: float | None
    dark: _Stored | None
    reference: _Stored | None
    data: DataSnapshot


class Spectrometer(Instrument):
    """A fibre-coupled CCD spectrometer measuring the cuvette in its holder."""

    kind = "spectrometer"
    limits: SpectrometerLimits

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._integration_s: float | None = None
        self._dark: _Stored | None = None
        self._reference: _Stored | None = None

    @tool(destructive=False, idempotent=True)
    async def set_integration_time(
        self,
        time: Annotated[Duration, Arg("Exposure per scan.", within="integration_time")],
    ) -> IntegrationTimeSet:
        """Set the integration time, from the next acquisition. Keep the reference's peak
        under ~85 % of full scale; acquire dark and reference again at the new time."""
        seconds = magnitude(time, "second")
        await self._set_integration_time(seconds)
        self._integration_s = seconds
        return {"integration_time": qty(seconds * 1e3, "millisecond")}

    @tool(idempotent=True, long_running=True)  # replaces the kept dark spectrum
    async def acquire_dark(
        self, scans: Annotated[int, Arg(_SCANS, within="scans")]
    ) -> CountsSpectrum:
        """Acquire and keep the dark spectrum (light path shuttered) at the current time."""
        counts = await self._scan(scans, dark=True)
        self._dark = _Stored(counts, self._current_integration(), scans)
        return self._counts_result(counts, scans)

    @tool(idempotent=True, long_running=True)  # replaces the kept reference spectrum
    async def acquire_reference(
        self, scans: Annotated[int, Arg(_SCANS, within="scans")]
    ) -> CountsSpectrum:
        """Acquire and keep the reference spectrum: the cuvette as it is now (fill it with
        blank first)."""
        counts = await self._scan(scans, dark=False)
        self._reference = _Stored(counts, self._current_integration(), scans)
        return self._counts_result(counts, scans)

    @tool(read_only=True, long_running=True)
    async def acquire_spectrum(
        self, scans: Annotated[int, Arg(_SCANS, within="scans")]
    ) -> CountsSpectrum:
        """Acquire a raw spectrum of the cuvette (counts), e.g. to choose an integration time."""
        counts = await self._scan(scans, dark=False)
        return self._counts_result(counts, scans)

    @tool(read_only=True, long_running=True)
    async def measure_absorbance(
        self, scans: Annotated[int, Arg(_SCANS, within="scans")]
    ) -> AbsorbanceSpectrumResult:
        """Measure the cuvette's absorbance spectrum against the kept dark and reference.
        Unmeasurable pixels are null, ``masked`` giving their ranges and why: saturated (within
        2 % of full scale), no_light (reference under 10× its noise or 1 % of its peak, as
        below the UV cut-off) or opaque (sample light under 3× noise). The peak is the top of
        the smoothed band clear of noise; null when nothing absorbs or when it borders an
        opaque range (dilute)."""
        integration = self._current_integration()
        dark = self._kept(self._dark, "dark", integration)
        reference = self._kept(self._reference, "reference", integration)
        sample = await self._scan(scans, dark=False)
        wavelengths = self.wavelengths()
        limits = self.limits
        result = analyse(
            np.asarray(sample, dtype=float),
            np.asarray(reference.counts, dtype=float),
            np.asarray(dark.counts, dtype=float),
            scans=(scans, reference.scans, dark.scans),
            wavelengths=wavelengths,
            full_scale=self.full_scale(),
            saturation_margin=limits.saturation_margin,
            min_snr=limits.min_reference_snr,
            min_fraction=limits.min_reference_fraction,
            window_nm=limits.peak_window_nm,
            significance=limits.peak_significance,
        )
        absorbance = result.values
        grid, compact = self._compact(wavelengths, absorbance)
        handle = self.data.put(
            {
                "kind": "absorbance",
                "wavelengths_nm": wavelengths.tolist(),
                "absorbance": [None if np.isnan(a) else float(a) for a in absorbance],
            }
        )
        masked: list[MaskedRange] = [
            {"start": round(a, 2), "stop": round(b, 2), "reason": reason}
            for a, b, reason in result.masked_ranges(wavelengths)
        ]
        peak_nm, peak_a = result.peak_nm, result.peak_absorbance
        return {
            "integration_time": qty(integration * 1e3, "millisecond"),
            "scans": scans,
            "peak_wavelength": None if peak_nm is None else qty(round(peak_nm, 2), NM),
            "peak_absorbance": None if peak_a is None else round(peak_a, 4),
            "wavelengths": grid,
            "wavelength_unit": NM,
            "absorbance": compact,
            "masked": masked,
            "saturated_pixels": result.saturated_pixels,
            "data": handle,
        }

    @tool(read_only=True)
    async def get_data(
        self,
        data: Annotated[str, Arg("A result's 'data' handle, e.g. 'spec/3'.")],
        start: Annotated[Wavelength, Arg("Window start.", within="wavelengths")],
        stop: Annotated[Wavelength, Arg("Window end.", within="wavelengths")],
    ) -> SpectrumData:
        """A kept spectrum's pixels over a window at full resolution (results are compact):
        counts, or absorbance (null where unmeasurable). At most 600 pixels a call; the newest
        64 spectra are kept."""
        stored = self.data.get(data, field="/data")
        low, high = magnitude(start, NM), magnitude(stop, NM)
        if not low < high:
            raise OutOfRange(
                "the window must start below where it stops",
                field="/stop",
                hint=f"give a stop above {low:g} nm",
            )
        nm = stored["wavelengths_nm"]
        kind = stored["kind"]  # "counts" or "absorbance": also the values' key and unit
        chosen = [i for i, w in enumerate(nm) if low <= w <= high]
        if not chosen:
            raise OutOfRange(
                f"{data} has no pixel within {low:g}-{high:g} nm",
                field="/start",
                hint=f"its pixels run {nm[0]:.2f}-{nm[-1]:.2f} nm",
            )
        if len(chosen) > MAX_PIXELS:
            span = (nm[-1] - nm[0]) / (len(nm) - 1) * MAX_PIXELS
            raise OutOfRange(
                f"{len(chosen)} pixels lie within {low:g}-{high:g} nm, more than {MAX_PIXELS}",
                field="/stop",
                hint=f"ask for at most about {span:.0f} nm at a time",
            )
        values = stored[kind]
        return {
            "data": data,
            "kind": kind,
            "wavelengths": [round(nm[i], 3) for i in chosen],
            "wavelength_unit": NM,
            "values": [values[i] for i in chosen],
            "unit": kind,
        }

    # -- helpers -------------------------------------------------------------------------------
    async def _scan(self, scans: int, *, dark: bool) -> np.ndarray:
        """Acquire averaged counts, reporting progress (a long average takes seconds)."""
        await report_progress(0, scans, "dark" if dark else "acquiring")
        counts = await self._acquire(scans, dark=dark)
        await report_progress(scans, scans, "done")
        return counts

    def _kept(self, stored: _Stored | None, what: str, integration_s: float) -> _Stored:
        if stored is None or not math.isclose(stored.integration_s, integration_s):
            raise PreconditionFailed(
                f"no {what} spectrum at the current integration time",
                hint=f"call {self.name}_acquire_{what} first (after setting the time)",
            )
        return stored

    def _current_integration(self) -> float:
        if self._integration_s is None:
            raise PreconditionFailed(
                "no integration time is set",
                hint=f"call {self.name}_set_integration_time first, e.g. 100 millisecond",
            )
        return self._integration_s

    def _counts_result(self, counts: np.ndarray, scans: int) -> CountsSpectrum:
        wavelengths = self.wavelengths()
        full = self.full_scale()
        top = int(np.argmax(counts))
        handle = self.data.put(
            {
                "kind": "counts",
                "wavelengths_nm": wavelengths.tolist(),
                "counts": counts.tolist(),
            }
        )
        return {
            "integration_time": qty(self._current_integration() * 1e3, "millisecond"),
            "scans": scans,
            "max_counts": round(float(counts[top]), 1),
            "full_scale": full,
            "peak_wavelength": qty(round(float(wavelengths[top]), 2), NM),
            "saturated_pixels": int((counts >= full).sum()),
            "data": handle,
        }

    def _compact(
        self, wavelengths: np.ndarray, values: np.ndarray
    ) -> tuple[list[float], list[float | None]]:
        """Values averaged in bins of ``compact_step_nm`` around round wavelengths."""
        step = self.limits.compact_step_nm
        start = math.ceil(wavelengths[0] / step) * step
        centres = np.arange(start, wavelengths[-1] + 1e-9, step)
        out: list[float | None] = []
        for centre in centres:
            window = values[np.abs(wavelengths - centre) <= step / 2]
            window = window[~np.isnan(window)]
            out.append(round(float(window.mean()), 4) if window.size else None)
        return [float(c) for c in centres], out

    # -- episodes ------------------------------------------------------------------------------
    def snapshot(self) -> SpectrometerSnapshot:
        """The front end's state: integration time, kept dark and reference, data store.
        Drivers with state of their own extend this."""
        return SpectrometerSnapshot(
            self._integration_s, self._dark, self._reference, self.data.snapshot()
        )

    def restore(self, snapshot: SpectrometerSnapshot) -> None:
        """Return the front end to ``snapshot`` (kept spectra are never changed in place)."""
        self._integration_s = snapshot.integration_s
        self._dark = snapshot.dark
        self._reference = snapshot.reference
        self.data.restore(snapshot.data)

    def state(self) -> dict[str, Any]:
        return {
            "integration_time": None
            if self._integration_s is None
            else qty(self._integration_s * 1e3, "millisecond"),
            "dark": self._dark is not None,
            "reference": self._reference is not None,
        }

    # -- driver hooks --------------------------------------------------------------------------
    @abstractmethod
    async def _set_integration_time(self, seconds: float) -> None:
        """Send the integration time to the device."""

    @abstractmethod
    async def _acquire(self, scans: int, *, dark: bool) -> np.ndarray:
        """Counts per pixel averaged over ``scans``; ``dark`` closes the shutter (or lamp)."""

    @abstractmethod
    def wavelengths(self) -> np.ndarray:
        """Wavelength of each pixel (nm), from the device's calibration."""

    @abstractmethod
    def full_scale(self) -> float:
        """The ADC's largest count (a pixel at it is saturated)."""
