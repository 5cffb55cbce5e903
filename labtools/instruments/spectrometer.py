"""The spectrometer interface: a CCD array spectrometer reading a cuvette.

The front end keeps the dark and reference spectra and computes absorbance
``A = -log10((S - D) / (R - D))``; a driver implements the hooks: set the integration time, acquire
averaged counts, and report its wavelength calibration and full scale.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from typing_extensions import TypedDict

from labtools.errors import PreconditionFailed
from labtools.instrument import DataSnapshot, Instrument
from labtools.progress import report_progress
from labtools.tool import Arg, tool
from labtools.units import Duration, QuantityJSON, Range, magnitude, qty

__all__ = [
    "AbsorbanceSpectrumResult",
    "CountsSpectrum",
    "IntegrationTimeSet",
    "Spectrometer",
    "SpectrometerLimits",
    "SpectrometerSnapshot",
]

NM = "nanometer"


@dataclass(frozen=True)
class SpectrometerLimits:
    """Integration-time range, scans per average, and the compact-form resolution."""

    integration_time: Range = Range(1, 65_000, "millisecond")
    scans: Range = Range(1, 100)
    #: spacing of the inline (compact) spectrum in results; full data stays behind the handle
    compact_step_nm: float = 10.0
    #: pixels whose reference light is below this fraction of its peak have no absorbance
    min_reference_fraction: float = 0.01
    #: the reported peak is the maximum of the spectrum averaged over this window (nm)
    peak_window_nm: float = 4.0


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


class AbsorbanceSpectrumResult(TypedDict):
    integration_time: QuantityJSON
    scans: int
    peak_wavelength: QuantityJSON
    peak_absorbance: float
    wavelengths: list[float]
    wavelength_unit: str
    absorbance: list[float | None]
    saturated_pixels: int
    data: str


_SCANS = "Number of scans to average; noise falls as 1/sqrt(scans)."


@dataclass
class _Stored:
    counts: np.ndarray
    integration_s: float


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
        """Set the integration time; it applies from the next acquisition.

        Keep the reference's peak below ~85 % of full scale; dark and reference must be
        acquired again at the new time.
        """
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
        self._dark = _Stored(counts, self._current_integration())
        return self._counts_result(counts, scans)

    @tool(idempotent=True, long_running=True)  # replaces the kept reference spectrum
    async def acquire_reference(
        self, scans: Annotated[int, Arg(_SCANS, within="scans")]
    ) -> CountsSpectrum:
        """Acquire and keep the reference spectrum: the cuvette as it is now (fill it with
        blank first)."""
        counts = await self._scan(scans, dark=False)
        self._reference = _Stored(counts, self._current_integration())
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
        """Measure the absorbance spectrum of the cuvette against the kept dark and reference.

        The peak is that of the spectrum smoothed over a few nm, so single-pixel noise does not
        move it.
        Pixels saturated in the sample or reference, or with under 1 % of the reference's peak
        light, give null.
        """
        integration = self._current_integration()
        dark = self._kept(self._dark, "dark", integration)
        reference = self._kept(self._reference, "reference", integration)
        sample = await self._scan(scans, dark=False)
        wavelengths = self.wavelengths()
        full = self.full_scale()
        signal = sample - dark.counts
        light = reference.counts - dark.counts
        saturated = (sample >= full) | (reference.counts >= full)
        # where the reference has almost no light (the lamp's and grating's far ends) the ratio
        # is noise, not absorbance: keep pixels with at least 1 % of the reference's peak light
        dim = light < self.limits.min_reference_fraction * max(float(light.max()), 1.0)
        bad = saturated | dim | (signal <= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            absorbance = np.where(bad, np.nan, -np.log10(signal / light))
        smooth = _boxcar(absorbance, wavelengths, self.limits.peak_window_nm)
        finite = np.where(np.isnan(smooth), -np.inf, smooth)
        peak = int(np.argmax(finite)) if np.isfinite(finite).any() else 0
        grid, compact = self._compact(wavelengths, absorbance)
        handle = self.data.put(
            {
                "kind": "absorbance",
                "wavelengths_nm": wavelengths.tolist(),
                "absorbance": [None if np.isnan(a) else float(a) for a in absorbance],
            }
        )
        return {
            "integration_time": qty(integration * 1e3, "millisecond"),
            "scans": scans,
            "peak_wavelength": qty(round(float(wavelengths[peak]), 2), NM),
            "peak_absorbance": round(float(finite[peak]), 4) if np.isfinite(finite[peak]) else 0.0,
            "wavelengths": grid,
            "wavelength_unit": NM,
            "absorbance": compact,
            "saturated_pixels": int(saturated.sum()),
            "data": handle,
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


def _boxcar(values: np.ndarray, wavelengths: np.ndarray, window_nm: float) -> np.ndarray:
    """``values`` averaged over a moving window of about ``window_nm`` (NaN-aware)."""
    spacing = float(np.median(np.diff(wavelengths))) if wavelengths.size > 1 else 1.0
    width = max(round(window_nm / spacing), 1)
    if width == 1:
        return values
    kernel = np.ones(width)
    valid = ~np.isnan(values)
    sums = np.convolve(np.where(valid, values, 0.0), kernel, mode="same")
    counts = np.convolve(valid.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(valid & (counts > 0), sums / counts, np.nan)
