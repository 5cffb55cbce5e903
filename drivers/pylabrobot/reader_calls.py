"""How to ask one PyLabRobot plate reader for each measurement.

Most backends implement PLR's ``PlateReaderBackend`` signatures and are called through PLR's
``PlateReader`` front end. Some do not:

- Molecular Devices (SpectraMax M5 / 384 Plus / Gemini EM) override the reads with their own
  signatures (``read_absorbance(plate, wavelengths, …)``, no ``wells``), so the front end's call
  raises ``TypeError``. They are called directly: whole-plate reads, lists of wavelengths, the
  emission cut-off filter from PLR's own wavelength table, and native spectrum scans
  (``ReadType.SPECTRUM``). Luminescence asks for emission wavelength 0 (all light), the default
  of PLR's Gemini EM backend [unverified on hardware].
- BMG CLARIOstar reads only whole plates (PLR raises ``NotImplementedError`` otherwise).
- A backend with ``read_absorbance_spectrum(plate, wells, wavelengths)`` (the physics simulator)
  scans spectra natively; any other backend gets one absorbance read per wavelength.
- Incubation: Agilent BioTek backends that heat or cool (Cytation, Synergy H1) and the physics
  simulator take ``set_temperature(°C)`` and ``get_current_temperature()``; the setpoint is
  the one set here, or the backend's ``setpoint`` where it has one. Molecular Devices backends
  take ``set_temperature(°C)`` and report ``(current, setpoint)`` from ``get_temperature()``.
  PLR 0.2.2 gives the others (CLARIOstar, Tecan, Byonoy, the chatterbox) no temperature
  control.

- Fluorescence optics: a read height other than the reader's own goes to PLR's
  ``focal_height`` (the front end's argument; Molecular Devices backends only where they
  name one); a PMT gain other than the reader's own (0) only to backends whose
  ``read_fluorescence`` names a ``gain`` (PLR's Tecan Infinite and Spark, the physics
  simulator). Others refuse it with ``NotSupported`` before anything is sent.

Each plan is chosen once from the backend's class and method signatures (no I/O). A read the
backend cannot do at all raises ``NotSupported``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from labtools.drivers.pylabrobot.internals import md_cutoff_filter
from labtools.drivers.pylabrobot.plr import (
    BioTekPlateReaderBackend,
    CLARIOstarBackend,
    MolecularDevicesBackend,
    Plate,
    ReadType,
    SpectrumSettings,
    Well,
)
from labtools.drivers.pylabrobot.plr import (
    PlateReader as PLRPlateReaderFrontEnd,
)
from labtools.errors import InstrumentError, NotSupported, PreconditionFailed

__all__ = ["Grid", "ReadCalls", "SpectrumBackend"]

Grid = list[list[float | None]]
Plan = Literal["front_end", "md_lists", "md_single", "none"]
SpectrumPlan = Literal["native", "md", "repeat", "none"]
TemperaturePlan = Literal["biotek", "md", "none"]

#: emission wavelength meaning "all light" for Molecular Devices luminescence reads
_MD_ALL_LIGHT = 0


@runtime_checkable
class SpectrumBackend(Protocol):
    """A backend that scans absorbance spectra in one call (one result dict per wavelength)."""

    async def read_absorbance_spectrum(
        self, plate: Plate, wells: list[Well], wavelengths: Sequence[int]
    ) -> list[dict]: ...


def _takes(method: Callable[..., Any], *names: str) -> bool:
    """Whether ``method`` accepts all keyword arguments ``names`` (``**kwargs`` counts)."""
    params = inspect.signature(method).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return True
    return all(n in params for n in names)


def _temperature_plan(backend: Any) -> TemperaturePlan:
    if isinstance(backend, MolecularDevicesBackend):
        return "md"
    if isinstance(backend, BioTekPlateReaderBackend) and not (
        backend.supports_heating or backend.supports_cooling
    ):
        return "none"
    if callable(getattr(backend, "set_temperature", None)) and callable(
        getattr(backend, "get_current_temperature", None)
    ):
        return "biotek"
    return "none"


def _names(method: Callable[..., Any], *names: str) -> bool:
    """Whether ``method`` names all of ``names`` as parameters (``**kwargs`` does not count)."""
    params = inspect.signature(method).parameters
    return all(n in params for n in names)


class ReadCalls:
    """Per-measurement call plans for one PLR reader (``reader``: its front end)."""

    def __init__(self, reader: PLRPlateReaderFrontEnd, focal_height_mm: float) -> None:
        backend = reader.backend
        self.reader = reader
        self.focal_height_mm = focal_height_mm
        self.backend_name = type(backend).__name__
        self.whole_plate_only = isinstance(backend, CLARIOstarBackend)
        md = isinstance(backend, MolecularDevicesBackend)
        self.absorbance_plan: Plan = (
            "md_lists"
            if md and _names(backend.read_absorbance, "wavelengths")
            else "front_end"
            if _takes(backend.read_absorbance, "wells", "wavelength")
            else "none"
        )
        self.fluorescence_plan: Plan = (
            "md_lists"
            if md and _names(backend.read_fluorescence, "excitation_wavelengths")
            else "md_single"
            if md and _names(backend.read_fluorescence, "excitation_wavelength")
            else "front_end"
            if _takes(
                backend.read_fluorescence,
                "wells",
                "excitation_wavelength",
                "emission_wavelength",
                "focal_height",
            )
            else "none"
        )
        self.luminescence_plan: Plan = (
            "md_lists"
            if md and _names(backend.read_luminescence, "emission_wavelengths")
            else "md_single"
            if md
            else "front_end"
            if _takes(backend.read_luminescence, "wells", "focal_height")
            else "none"
        )
        #: whether the backend takes a PMT gain, and a read height on Molecular Devices plans
        self.takes_gain = _names(backend.read_fluorescence, "gain")
        self.takes_height = self.fluorescence_plan == "front_end" or _names(
            backend.read_fluorescence, "focal_height"
        )
        self.temperature_plan: TemperaturePlan = _temperature_plan(backend)
        #: the setpoint set through this plan (°C), for backends that do not report theirs
        self._setpoint: float | None = None
        self.spectrum_plan: SpectrumPlan = (
            "native"
            if isinstance(backend, SpectrumBackend)
            else "md"
            if self.absorbance_plan == "md_lists"
            else "repeat"
            if self.absorbance_plan == "front_end"
            else "none"
        )

    # -- measurements --------------------------------------------------------------------------
    async def absorbance(self, plate: Plate, wells: list[Well] | None, nm: int) -> Grid:
        backend = self._backend("absorbance", self.absorbance_plan)
        if self.absorbance_plan == "md_lists":
            self._ready(plate)
            results = await backend.read_absorbance(plate=plate, wavelengths=[nm])
        else:
            results = await self.reader.read_absorbance(
                wavelength=nm, wells=self._wells(wells), use_new_return_type=True
            )
        return _pick(results, "wavelength", nm)

    async def spectrum(self, plate: Plate, wells: list[Well] | None, nms: list[int]) -> list[Grid]:
        """Grids at each of ``nms`` (a uniform, increasing grid of whole nanometres)."""
        if self.spectrum_plan == "repeat":
            return [await self.absorbance(plate, wells, nm) for nm in nms]
        backend = self._backend("absorbance spectra", self.spectrum_plan)
        self._ready(plate)
        if self.spectrum_plan == "native":
            chosen = self._wells(wells) or plate.get_all_items()
            results = await backend.read_absorbance_spectrum(plate, chosen, nms)
        else:
            step = nms[1] - nms[0] if len(nms) > 1 else 1
            settings = SpectrumSettings(start_wavelength=nms[0], step=step, num_steps=len(nms))
            results = await backend.read_absorbance(
                plate=plate,
                wavelengths=[nms[0]],
                read_type=ReadType.SPECTRUM,
                spectrum_settings=settings,
            )
        by_nm = {r.get("wavelength"): r for r in results} if isinstance(results, list) else {}
        return [_pick([by_nm[nm]] if nm in by_nm else results, "wavelength", nm) for nm in nms]

    def check_optics(self, gain: int, focal_height_mm: float) -> None:
        """Refuse a PMT gain or read height the backend cannot be given (0: its own)."""
        if gain and not self.takes_gain:
            raise NotSupported(
                f"the {self.backend_name} backend takes no PMT gain through PyLabRobot",
                field="/gain",
                hint="give gain 0: the reader's own",
            )
        if focal_height_mm and not self.takes_height:
            raise NotSupported(
                f"the {self.backend_name} backend takes no read height through PyLabRobot",
                field="/focal_height",
                hint="give focal_height 0 mm: the reader's own",
            )

    async def fluorescence(
        self,
        plate: Plate,
        wells: list[Well] | None,
        ex: int,
        em: int,
        *,
        gain: int = 0,
        focal_height_mm: float = 0.0,
    ) -> Grid:
        """A fluorescence read; ``gain`` and ``focal_height_mm`` 0: the reader's own (the
        configured read height on the front end), else as :meth:`check_optics` allows."""
        self.check_optics(gain, focal_height_mm)
        plan = self.fluorescence_plan
        backend = self._backend("fluorescence", plan)
        optics: dict[str, Any] = {"gain": gain} if gain else {}
        if focal_height_mm and plan != "front_end":
            optics["focal_height"] = focal_height_mm
        if plan == "front_end":
            results = await self.reader.read_fluorescence(
                excitation_wavelength=ex,
                emission_wavelength=em,
                focal_height=focal_height_mm or self.focal_height_mm,
                wells=self._wells(wells),
                use_new_return_type=True,
                **optics,
            )
        elif plan == "md_lists":
            self._ready(plate)
            cutoff = md_cutoff_filter(backend, em)
            results = await backend.read_fluorescence(
                plate=plate,
                excitation_wavelengths=[ex],
                emission_wavelengths=[em],
                cutoff_filters=[cutoff],
                **optics,
            )
        else:
            self._ready(plate)
            results = await backend.read_fluorescence(
                plate=plate,
                wells=plate.get_all_items(),
                excitation_wavelength=ex,
                emission_wavelength=em,
                **optics,
            )
        return _pick(results, "em_wavelength", em)

    async def luminescence(self, plate: Plate, wells: list[Well] | None) -> Grid:
        plan = self.luminescence_plan
        backend = self._backend("luminescence", plan)
        if plan == "front_end":
            results = await self.reader.read_luminescence(
                focal_height=self.focal_height_mm,
                wells=self._wells(wells),
                use_new_return_type=True,
            )
        elif plan == "md_lists":
            self._ready(plate)
            results = await backend.read_luminescence(
                plate=plate, emission_wavelengths=[_MD_ALL_LIGHT]
            )
        else:
            self._ready(plate)
            results = await backend.read_luminescence(plate=plate, wells=plate.get_all_items())
        return _pick(results, None, None)

    # -- incubation ----------------------------------------------------------------------------
    async def set_temperature(self, celsius: float) -> None:
        backend = self._heater()
        await backend.set_temperature(celsius)
        self._setpoint = celsius

    async def stop_heating(self) -> None:
        """Heater off: PLR's BioTek ``stop_heating_or_cooling``; PLR 0.2.2 has no such command
        for Molecular Devices readers."""
        backend = self._heater()
        stop = getattr(backend, "stop_heating_or_cooling", None)
        if self.temperature_plan == "md" or not callable(stop):
            raise NotSupported(
                f"the {self.backend_name} backend has no heater-off command in PyLabRobot",
                hint="set the lowest temperature the reader holds instead (reader_set_temperature)",
            )
        await stop()
        self._setpoint = None

    async def temperature(self) -> tuple[float, float | None]:
        """The chamber's temperature and setpoint (°C; ``None``: off or unknown)."""
        backend = self._heater()
        if self.temperature_plan == "md":
            current, setpoint = await backend.get_temperature()
            return float(current), float(setpoint)
        current = float(await backend.get_current_temperature())
        stated = getattr(type(backend), "setpoint", None)
        return current, backend.setpoint if isinstance(stated, property) else self._setpoint

    def _heater(self) -> Any:
        if self.temperature_plan == "none":
            raise NotSupported(
                f"the {self.backend_name} backend has no temperature control in PyLabRobot",
                hint="use a reader with an incubator (Cytation, Synergy H1, SpectraMax) or "
                "run at room temperature",
            )
        if not self.reader.setup_finished:
            raise PreconditionFailed(
                "the plate reader is not set up",
                hint="the lab sets it up on first use unless it was stopped",
            )
        return self.reader.backend

    # -- helpers -------------------------------------------------------------------------------
    def _backend(self, what: str, plan: str) -> Any:
        if plan == "none":
            raise NotSupported(
                f"the {self.backend_name} backend cannot read {what}",
                hint="use a reader whose backend supports it",
            )
        return self.reader.backend

    def _wells(self, wells: list[Well] | None) -> list[Well] | None:
        return None if self.whole_plate_only else wells

    def _ready(self, plate: Plate) -> None:
        """What PLR's front end checks before a read, for calls that go past it."""
        if not self.reader.setup_finished:
            raise PreconditionFailed(
                "the plate reader is not set up",
                hint="the lab sets it up on first use unless it was stopped",
            )
        if plate is not self.reader.get_plate():
            raise PreconditionFailed(f"plate {plate.name!r} is not in the reader")


def _pick(results: list[dict], key: str | None, value: int | None) -> Grid:
    """The data grid of the measurement whose ``key`` is ``value`` (or the only one)."""
    if not isinstance(results, list) or not results:
        raise InstrumentError(f"the reader returned no measurement ({results!r:.80})")
    chosen = None
    if key is not None:
        chosen = next((r for r in results if r.get(key) == value), None)
    if chosen is None and len(results) == 1:
        chosen = results[0]
    if chosen is None or "data" not in chosen:
        raise InstrumentError(f"the reader returned no data for {key} {value}")
    return chosen["data"]
