"""labtools' ``PlateReader`` over a PyLabRobot (0.2.2) plate reader, real or simulated.

The same adapter drives a BMG CLARIOstar, an Agilent BioTek Cytation/Synergy, a Molecular
Devices SpectraMax or the physics simulator: only the PLR backend inside the given PLR
``PlateReader`` front end differs. PLR takes whole nanometres (``int``), so wavelengths that are
not whole numbers are refused rather than rounded. Results always use PLR's new return type.

Kinetic reads are repeated single absorbance reads, each started ``interval`` after the last,
through the same call plan as a single read: PLR 0.2.2 has no kinetic protocol common to its
backends (only Molecular Devices' own ``KineticSettings``), and this way every backend that can
read absorbance can read kinetics. Waiting between reads goes through the backend when it keeps
a virtual clock (``ClockedBackend``: the physics simulator, where time passes instantly and
reactions in the wells go on); otherwise it is real time (``asyncio.sleep``), with progress
reported after every read (``labtools.progress``). A cancelled job (``labtools.jobs``) stops
between reads, never during one, and returns the reads taken; a read under way when the call
itself is cancelled is finished first.

Incubation calls the backend's own temperature control where PLR has one (``reader_calls``);
waiting for a setpoint reads the temperature at intervals on the same clock as kinetic reads.
A backend with ``bind(front_end)`` (the physics simulator) is told which PLR front end holds
it, so it knows which plate its chamber heats.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, runtime_checkable

from labtools.config import ConfigError
from labtools.drivers.pylabrobot.naming import grid_position, items_by_identifier
from labtools.drivers.pylabrobot.plr import (
    BioTekPlateReaderBackend,
    Deck,
    MolecularDevicesBackend,
    Plate,
    PlateReaderBackend,
    PlateReaderChatterboxBackend,
    ResourceNotFoundError,
    Well,
)
from labtools.drivers.pylabrobot.plr import (
    PlateReader as PLRPlateReaderFrontEnd,
)
from labtools.drivers.pylabrobot.reader_calls import Grid, ReadCalls
from labtools.drivers.pylabrobot.reader_errors import MOVE_HINT, reader_errors
from labtools.errors import (
    InstrumentError,
    NotSupported,
    OutOfRange,
    PreconditionFailed,
    UnknownResource,
    brief,
)
from labtools.instrument import DataSnapshot
from labtools.instruments import PlateReader, PlateReaderLimits
from labtools.jobs import stop_requested, wait_unless_stopped
from labtools.progress import report_progress
from labtools.units import Range

__all__ = ["ClockedBackend", "PLRPlateReader", "limits_for"]

log = logging.getLogger(__name__)
T = TypeVar("T")

NM = "nanometer"
CELSIUS = "degree_Celsius"
#: setpoints of Molecular Devices readers (°C) [V: PLR 0.2.2 molecular_devices/backend.py
#: set_temperature refuses anything outside 0–45 °C]
MD_INCUBATION = Range(0, 45, CELSIUS)
#: default read height for top-read fluorescence and luminescence (mm) [A]: inside the
#: focal ranges of PLR's BioTek backends (4.5–13.88 mm; Synergy H1 4.5–10.68 mm)
DEFAULT_FOCAL_HEIGHT_MM = 8.5


@runtime_checkable
class ClockedBackend(Protocol):
    """A backend on a virtual clock (the physics simulator): it tells the time and lets time
    pass, instantly, for the waits of kinetic reads."""

    simulated: bool

    def now(self) -> float:
        """Seconds on the backend's clock."""
        ...

    async def wait(self, seconds: float) -> None:
        """Let ``seconds`` (≥ 0) pass."""
        ...


class _WallClock:
    """Real time, for real readers."""

    def now(self) -> float:
        return time.monotonic()

    async def wait(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True, eq=False)
class _PlateIndex:
    """A plate's wells by identifier, in reading order (row-major), with grid positions."""

    plate: Plate
    identifiers: list[str]
    wells: dict[str, Well]
    position: dict[str, tuple[int, int]]


def limits_for(backend: PlateReaderBackend) -> PlateReaderLimits:
    """The optical and incubation limits of a PLR backend where PLR states them, else
    labtools' defaults."""
    limits = PlateReaderLimits()
    if isinstance(backend, BioTekPlateReaderBackend):
        low_mm, high_mm = backend.focal_height_range
        limits = PlateReaderLimits(
            absorbance=_nanometres(backend.abs_wavelength_range),
            excitation=_nanometres(backend.excitation_range),
            emission=_nanometres(backend.emission_range),
            focal_height=Range(low_mm, high_mm, "millimeter"),
        )
    if isinstance(backend, MolecularDevicesBackend):
        return replace(limits, temperature=MD_INCUBATION)
    stated = getattr(backend, "temperature_range", None)  # BioTek's and the simulator's
    if isinstance(stated, tuple) and len(stated) == 2 and stated[1] is not None:
        low = limits.temperature.low if stated[0] is None else float(stated[0])
        return replace(limits, temperature=Range(low, float(stated[1]), CELSIUS))
    return limits


def _nanometres(bounds: tuple[float, float]) -> Range:
    """PLR's ``(low, high)`` wavelength range (nm) as a limit."""
    low, high = bounds
    return Range(low, high, NM)


class PLRPlateReader(PlateReader):
    """A plate reader driven through PyLabRobot.

    ``reader``: a PLR ``PlateReader`` front end holding the backend chosen by the lab's
    configuration (``PhysicsPlateReaderBackend`` in simulation; ``CLARIOstarBackend``,
    ``CytationBackend``, ``MolecularDevicesSpectraMaxM5Backend``, … in a real lab).
    ``limits``: optical limits; by default what PLR states for the backend.
    ``focal_height``: read height (mm) for luminescence, and for fluorescence reads that ask for
    the reader's own (``focal_height`` 0); a read may ask for another within the limits, and
    for a PMT gain where the backend takes one (``reader_calls``).
    The constructor does no I/O; :meth:`setup` connects.
    """

    def __init__(
        self,
        name: str,
        reader: PLRPlateReaderFrontEnd,
        *,
        limits: PlateReaderLimits | None = None,
        focal_height: float = DEFAULT_FOCAL_HEIGHT_MM,
    ) -> None:
        super().__init__(name)
        if not isinstance(reader, PLRPlateReaderFrontEnd):
            raise ConfigError(
                f"needs a PyLabRobot PlateReader, not a {type(reader).__name__}", key="reader"
            )
        if limits is not None and not isinstance(limits, PlateReaderLimits):
            raise ConfigError(
                f"needs PlateReaderLimits, not a {type(limits).__name__}", key="limits"
            )
        if (
            isinstance(focal_height, bool)
            or not isinstance(focal_height, int | float)
            or not (math.isfinite(focal_height) and focal_height > 0)
        ):
            raise ConfigError(
                f"must be a positive number of mm, not {brief(focal_height)}", key="focal_height"
            )
        self.reader = reader
        self.limits = limits or limits_for(reader.backend)
        self.calls = ReadCalls(reader, float(focal_height))
        backend = reader.backend
        self.dry_run = isinstance(backend, PlateReaderChatterboxBackend)
        self.simulated = bool(getattr(backend, "simulated", False)) or self.dry_run
        self._indexes: dict[str, _PlateIndex] = {}
        self._clock: ClockedBackend | _WallClock = (
            backend if isinstance(backend, ClockedBackend) and backend.simulated else _WallClock()
        )
        bind = getattr(backend, "bind", None)
        if callable(bind):
            bind(reader)

    @classmethod
    def on_deck(
        cls,
        name: str,
        deck: Deck,
        reader: str = "reader",
        *,
        limits: PlateReaderLimits | None = None,
        focal_height: float = DEFAULT_FOCAL_HEIGHT_MM,
    ) -> PLRPlateReader:
        """The driver for the PLR plate reader named ``reader`` on a liquid handler's deck (so
        the gripper can move plates into it); for lab configurations."""
        if not isinstance(deck, Deck):
            raise ConfigError(f"needs a PyLabRobot Deck, not a {type(deck).__name__}", key="deck")
        found = deck.get_resource(reader) if deck.has_resource(reader) else None
        if not isinstance(found, PLRPlateReaderFrontEnd):
            readers = [
                r.name for r in deck.get_all_resources() if isinstance(r, PLRPlateReaderFrontEnd)
            ]
            what = "no resource" if found is None else f"a {type(found).__name__}, not a reader,"
            raise ConfigError(
                f"the deck has {what} named {brief(reader)}; "
                f"plate readers on it: {', '.join(readers) or 'none'}",
                key="reader",
            )
        return cls(name, found, limits=limits, focal_height=focal_height)

    @property
    def backend_name(self) -> str:
        return self.calls.backend_name

    # -- lifetime ------------------------------------------------------------------------------
    async def setup(self) -> None:
        """Connect to the reader (PLR ``setup``), unless it is already set up."""
        if not self.reader.setup_finished:
            with reader_errors("setup", self.backend_name):
                await self.reader.setup()
            log.info("plate reader %s set up (%s)", self.name, self.backend_name)

    async def stop(self) -> None:
        if self.reader.setup_finished:
            with reader_errors("stop", self.backend_name):
                await self.reader.stop()

    # -- episodes ------------------------------------------------------------------------------
    def snapshot(self) -> DataSnapshot:
        """The data store (simulated readers only). The plate in the reader is a place on the
        deck: the liquid handler that moves plates puts it back."""
        if not self.simulated:
            raise NotSupported(f"{self.name}: a real plate reader cannot be rewound")
        return self.data.snapshot()

    def restore(self, snapshot: DataSnapshot) -> None:
        """Return to ``snapshot``. Nothing else here depends on the seed: the physics backend
        reads hidden truth from the world on every read and caches only geometry and spectra."""
        self.data.restore(snapshot)

    def state(self) -> dict[str, Any]:
        held = self._held()
        return {"plate": held.name if held is not None else None, "backend": self.backend_name}

    # -- PlateReader hooks ---------------------------------------------------------------------
    def _plate_wells(self, plate: str) -> list[str]:
        return list(self._index(plate).identifiers)

    async def _read_absorbance(self, plate: str, wells: list[str], nm: float) -> dict[str, float]:
        wavelength = _whole_nm(nm, "/wavelength")
        index = self._index(plate)
        with reader_errors("absorbance read", self.backend_name):
            grid = await self.calls.absorbance(index.plate, self._chosen(index, wells), wavelength)
        return _values(grid, index, wells, "absorbance")

    async def _read_absorbance_spectrum(
        self, plate: str, wells: list[str], nm: list[float]
    ) -> dict[str, list[float]]:
        grid = [_whole_nm(x, "/start" if i == 0 else "/step") for i, x in enumerate(nm)]
        index = self._index(plate)
        with reader_errors("absorbance spectrum", self.backend_name):
            grids = await self.calls.spectrum(index.plate, self._chosen(index, wells), grid)
        per_nm = [_values(g, index, wells, "absorbance") for g in grids]
        return {w: [values[w] for values in per_nm] for w in wells}

    async def _read_absorbance_kinetic(
        self, plate: str, wells: list[str], nm: float, interval_s: float, reads: int
    ) -> tuple[list[float], dict[str, list[float]]]:
        wavelength = _whole_nm(nm, "/wavelength")
        index = self._index(plate)
        chosen = self._chosen(index, wells)
        clock = self._clock
        times: list[float] = []
        series: dict[str, list[float]] = {w: [] for w in wells}
        start = clock.now()
        for i in range(reads):
            # a cancelled job stops here, between reads, keeping the reads taken
            due = start + i * interval_s - clock.now()
            if stop_requested() or (due > 0 and not await wait_unless_stopped(clock.wait(due))):
                await report_progress(i, reads, f"stopped after {i} of {reads} reads")
                break
            times.append(clock.now() - start)
            with reader_errors("kinetic absorbance read", self.backend_name):
                grid = await _whole(self.calls.absorbance(index.plate, chosen, wavelength))
            for well, value in _values(grid, index, wells, "absorbance").items():
                series[well].append(value)
            await report_progress(i + 1, reads, f"read {i + 1} of {reads}")
        return times, series

    async def _read_fluorescence(
        self,
        plate: str,
        wells: list[str],
        excitation_nm: float,
        emission_nm: float,
        gain: int,
        focal_height_mm: float,
    ) -> dict[str, float]:
        ex = _whole_nm(excitation_nm, "/excitation_wavelength")
        em = _whole_nm(emission_nm, "/emission_wavelength")
        self.calls.check_optics(gain, focal_height_mm)
        index = self._index(plate)
        chosen = self._chosen(index, wells)
        with reader_errors("fluorescence read", self.backend_name):
            grid = await self.calls.fluorescence(
                index.plate, chosen, ex, em, gain=gain, focal_height_mm=focal_height_mm
            )
        return _values(grid, index, wells, "fluorescence")

    async def _read_luminescence(self, plate: str, wells: list[str]) -> dict[str, float]:
        index = self._index(plate)
        with reader_errors("luminescence read", self.backend_name):
            grid = await self.calls.luminescence(index.plate, self._chosen(index, wells))
        return _values(grid, index, wells, "luminescence")

    async def _set_temperature(self, celsius: float) -> None:
        with reader_errors("set temperature", self.backend_name):
            await self.calls.set_temperature(celsius)

    async def _stop_heating(self) -> None:
        with reader_errors("stop heating", self.backend_name):
            await self.calls.stop_heating()

    async def _temperature(self) -> tuple[float, float | None]:
        with reader_errors("read temperature", self.backend_name):
            return await self.calls.temperature()

    async def _settle(
        self, celsius: float, tolerance: float, poll_s: float, most_s: float
    ) -> tuple[float, float]:
        clock = self._clock
        start = clock.now()
        current, _ = await self._temperature()
        while abs(current - celsius) > tolerance and clock.now() - start < most_s:
            if stop_requested() or not await wait_unless_stopped(clock.wait(poll_s)):
                break
            current, _ = await self._temperature()
            waited = clock.now() - start
            await report_progress(min(waited, most_s), most_s, f"{current:.2f} °C")
        return clock.now() - start, current

    # -- plates and wells ----------------------------------------------------------------------
    def _held(self) -> Plate | None:
        return next((c for c in self.reader.children if isinstance(c, Plate)), None)

    def _index(self, name: str) -> _PlateIndex:
        """The index of plate ``name`` if it is in the reader; else the error that says why."""
        held = self._held()
        if held is not None and held.name == name:
            index = self._indexes.get(name)
            if index is None or index.plate is not held:
                index = self._indexes[name] = _build_index(held)
            return index
        root = self.reader.get_root()
        found = None
        if root is not self.reader:
            try:
                found = root.get_resource(name)
            except ResourceNotFoundError:
                found = None
        inside = f"the reader holds {held.name!r}" if held is not None else "the reader is empty"
        if not isinstance(found, Plate):
            plates = _plates_under(root)
            known = f"plates: {', '.join(plates)}; " if plates else ""
            raise UnknownResource(
                f"no plate named {brief(name)}", field="/plate", hint=f"{known}{inside}"
            )
        hint = MOVE_HINT if held is None else f"{inside}; move it out first, then {MOVE_HINT}"
        raise PreconditionFailed(
            f"plate {brief(name)} is not in the reader", field="/plate", hint=hint
        )

    @staticmethod
    def _chosen(index: _PlateIndex, wells: list[str]) -> list[Well] | None:
        """PLR wells to read; ``None`` reads the whole plate."""
        if len(wells) == len(index.identifiers):
            return None
        return [index.wells[w] for w in wells]


async def _whole(read: Awaitable[T]) -> T:
    """Await a read to its end even if the caller is cancelled meanwhile (then re-raise): a
    reader is never left in the middle of an exchange with its backend."""
    task = asyncio.ensure_future(read)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            if task.done():
                result = task.result()
                break
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result


def _build_index(plate: Plate) -> _PlateIndex:
    by_name = items_by_identifier(plate)
    position = {ident: grid_position(ident) for ident in by_name}
    ordered = sorted(position, key=position.__getitem__)
    return _PlateIndex(plate, ordered, by_name, position)


def _plates_under(root: Any, limit: int = 8) -> list[str]:
    if not hasattr(root, "get_all_children"):
        return []
    names = [r.name for r in root.get_all_children() if isinstance(r, Plate)]
    return [*names[:limit], "…"] if len(names) > limit else names


def _whole_nm(nm: float, field: str) -> int:
    """PLR sets wavelengths in whole nanometres; refuse anything else rather than round it."""
    rounded = round(nm)
    if abs(nm - rounded) > 1e-6:
        raise OutOfRange(
            f"{nm:g} nm is not a whole number of nanometres",
            field=field,
            hint=f"this reader sets wavelengths in 1 nm steps, e.g. {rounded} nm",
        )
    return int(rounded)


def _values(grid: Grid, index: _PlateIndex, wells: list[str], what: str) -> dict[str, float]:
    """The wells' values from a PLR data grid: ``inf`` where the detector saturated (PLR's
    Molecular Devices ``#SAT``), NaN where the reader sent no number for a well it read (PLR's
    BioTek backend parses the reader's starred, out-of-range values so); a missing value
    (``None``, or no such cell) is an error."""
    out: dict[str, float] = {}
    missing: list[str] = []
    for well in wells:
        row, col = index.position[well]
        try:
            value = grid[row][col]
        except (IndexError, TypeError):
            value = None
        if value is None:
            missing.append(well)
        else:
            out[well] = float(value)
    if missing:
        raise InstrumentError(
            f"the reader returned no {what} value for {len(missing)} well(s): {_listed(missing)}"
        )
    return out


def _listed(wells: list[str], limit: int = 12) -> str:
    shown = ", ".join(wells[:limit])
    return f"{shown}, …" if len(wells) > limit else shown
