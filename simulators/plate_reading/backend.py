"""A PyLabRobot plate-reader backend whose readings come from the world's true well contents.

Plug it into PLR's ``PlateReader`` front end like any hardware backend; the labtools driver
(``labtools.drivers.pylabrobot.plate_reader.PLRPlateReader``) then exercises the same code path as
on a real reader. Results follow PLR's ``use_new_return_type`` shape: a list of dicts with ``data``
(rows × columns, ``None`` for wells not read), ``temperature`` (°C), ``time`` (virtual seconds)
and the wavelengths. Absorbance above the reader's stated range reads NaN (as PLR's BioTek
backend parses the reader's starred values); fluorescence and luminescence above the detector
ceiling read ``inf`` (as PLR's Molecular Devices backend parses ``#SAT``).

Incubation follows PLR's BioTek backends (``set_temperature``, ``get_current_temperature``,
``stop_heating_or_cooling``, ``temperature_range``, ``supports_heating``): the chamber is one of
the world's ``Thermal`` chambers, heating the plate in the PLR front end this backend is bound
to (:meth:`PhysicsPlateReaderBackend.bind`; the labtools driver binds it) as virtual time
passes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from labtools.drivers.pylabrobot.plr import Plate, PlateReaderBackend, Well
from labtools.simulators.plate_reading.absorbance import measured_absorbance, reported
from labtools.simulators.plate_reading.composition import Absorptivity, gather
from labtools.simulators.plate_reading.fluorescence import emitted_rfu, gain_of, measured_rfu
from labtools.simulators.plate_reading.layout import (
    PathModel,
    PlateLayout,
    layout_of,
    meniscus_drop_mm,
)
from labtools.simulators.plate_reading.luminescence import (
    emitted_photons,
    measured_rlu,
    with_crosstalk,
)
from labtools.simulators.plate_reading.params import (
    PlateTruth,
    ReaderConstants,
    ReaderTruth,
    draw_plate,
    draw_reader,
)
from labtools.simulators.plate_reading.variation import (
    Defects,
    PathSpread,
    defects_on,
    draw_defects,
    draw_path_spread,
    spread_on,
)
from labtools.simulators.world import World
from labtools.simulators.world.thermal import Chamber

__all__ = ["PhysicsPlateReaderBackend"]

log = logging.getLogger(__name__)

Grid = list[list[float | None]]


class PhysicsPlateReaderBackend(PlateReaderBackend):
    """Absorbance (and spectra), fluorescence and luminescence of 96- and 384-well plates.

    ``world``: the shared simulated world (true contents, clock, streams, hidden truth).
    ``stream``: the name of this reader's noise stream and the prefix of its hidden parameters.
    ``path_model``: how liquid height follows from volume (see :mod:`.layout`); by default PLR's
    own height–volume functions of the labware.
    ``constants``: fixed model constants (the meniscus, path spread and defect wells included,
    :mod:`.variation`); by default those of the world's profile, whose priors give the
    reader's hidden parameters too.
    """

    simulated = True
    #: a heater, no cooling (as BioTek's Synergy readers in PLR)
    supports_heating = True
    supports_cooling = False

    def __init__(
        self,
        world: World,
        *,
        stream: str = "reader",
        path_model: PathModel = "plr",
        constants: ReaderConstants | None = None,
    ) -> None:
        super().__init__()
        if path_model not in ("plr", "cross_section"):
            raise ValueError(f"path_model must be 'plr' or 'cross_section', not {path_model!r}")
        self.world = world
        self.stream = stream
        self.path_model: PathModel = path_model
        self.constants = constants or ReaderConstants.from_profile(world.profile)
        angle = self.constants.meniscus_contact_angle_deg
        if angle is not None:
            meniscus_drop_mm(1.0, angle)  # refuses an angle outside 0-90°
        self._layouts: dict[str, PlateLayout] = {}
        self._eps = Absorptivity(world.species)
        self._buffer_ph: dict[str, float | None] = {}
        self._front_end: Any = None

    def bind(self, front_end: Any) -> None:
        """The PLR ``PlateReader`` holding this backend: the plate in it is the one heated."""
        self._front_end = front_end

    def _held(self) -> str | None:
        children = getattr(self._front_end, "children", ())
        return next((c.name for c in children if isinstance(c, Plate)), None)

    # -- hidden truth --------------------------------------------------------------------------
    @property
    def truth(self) -> ReaderTruth:
        """This reader's hidden parameters (for trainers and tests; never for agents)."""
        world, profile = self.world, self.world.profile
        # the UV stray light's draw, where a profile draws it, comes from a stream of its own
        later = f"truth/{self.stream}/reader/stray_light_uv"
        return world.hidden(
            f"{self.stream}/reader",
            lambda rng: draw_reader(rng, profile, lambda: world.stream(later)),
        )

    def plate_truth(self, plate: Plate) -> PlateTruth:
        """The hidden optics of ``plate`` (its plastic OD and per-well offsets)."""
        items = plate.num_items
        return self.world.hidden(
            f"{self.stream}/plate/{plate.name}/{items}",
            lambda rng: draw_plate(rng, items, self.constants.plate_od, self.world.profile),
        )

    def _path_spread(self, plate: Plate) -> PathSpread | None:
        """``plate``'s path spread (``None`` where the constants have none: nothing drawn)."""
        if not spread_on(self.constants):
            return None
        items = plate.num_items
        return self.world.hidden(
            f"{self.stream}/plate/{plate.name}/{items}/path",
            lambda rng: draw_path_spread(rng, items, self.constants),
        )

    def _defects(self, plate: Plate) -> Defects | None:
        """``plate``'s defect wells (``None`` where the constants have none: nothing drawn)."""
        if not defects_on(self.constants):
            return None
        items = plate.num_items
        return self.world.hidden(
            f"{self.stream}/plate/{plate.name}/{items}/defects",
            lambda rng: draw_defects(rng, items, self.constants),
        )

    # -- PLR machine interface -----------------------------------------------------------------
    async def setup(self) -> None:
        log.debug("physics plate reader ready (stream %r)", self.stream)

    async def stop(self) -> None:
        log.debug("physics plate reader stopped")

    async def open(self) -> None:
        self.world.clock.advance(self.constants.open_close_s)

    async def close(self, plate: Plate | None = None) -> None:
        self.world.clock.advance(self.constants.open_close_s)

    # -- the virtual clock (drivers wait through it between the reads of a kinetic read) -------
    def now(self) -> float:
        """Seconds on the world's virtual clock."""
        return self.world.clock.now()

    async def wait(self, seconds: float) -> None:
        """Let ``seconds`` (≥ 0) of virtual time pass, plate in the reader: wells react."""
        self.world.clock.advance(seconds)

    # -- incubation (PLR BioTek's interface) ---------------------------------------------------
    @property
    def chamber(self) -> Chamber:
        """This reader's heated chamber in the world (made, heater off, on first use)."""
        k = self.constants
        return self.world.thermal.chamber(self.stream, k.chamber_tau_s, k.plate_tau_s, self._held)

    @property
    def temperature_range(self) -> tuple[float, float]:
        """Setpoints the heater holds (°C): the room's temperature plus a margin, to a top."""
        k = self.constants
        return (self.world.thermal.room_c + k.incubation_above_room_c, k.incubation_max_c)

    @property
    def setpoint(self) -> float | None:
        """The setpoint (°C, as the sensor reads), ``None`` with the heater off."""
        air = self.chamber.setpoint_c
        return None if air is None else air + self.truth.sensor_offset_c

    async def set_temperature(self, temperature: float) -> None:
        """Hold the chamber's sensor at ``temperature`` (°C, within :attr:`temperature_range`);
        returns at once: the chamber and the plate get there as time passes."""
        low, high = self.temperature_range
        value = float(temperature)
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"temperature must be within {low:g}-{high:g} C, not {temperature}")
        self.chamber.setpoint_c = value - self.truth.sensor_offset_c

    async def stop_heating_or_cooling(self) -> None:
        """Heater off: the chamber drifts back to the room's temperature."""
        self.chamber.setpoint_c = None

    async def get_current_temperature(self) -> float:
        """The chamber's temperature (°C) as its sensor reads it now."""
        return self._sensor_c()

    def _sensor_c(self) -> float:
        chamber = self.world.thermal.chambers.get(self.stream)
        air = self.world.thermal.room_c if chamber is None else chamber.air_c
        return air + self.truth.sensor_offset_c

    # -- reads ---------------------------------------------------------------------------------
    async def read_absorbance(self, plate: Plate, wells: list[Well], wavelength: int) -> list[dict]:
        """OD at ``wavelength`` (nm, within the constants' wavelength range) of ``wells``."""
        nm = self._wavelength(wavelength, "wavelength")
        layout, items = self._resolve(plate, wells)
        values = self._absorbance(layout, items, np.array([nm]))[:, 0]
        k = self.constants
        self._spend(k.read_overhead_s + items.size * k.absorbance_s_per_well)
        log.debug("absorbance %s nm, %d wells of %s", nm, items.size, plate.name)
        return [self._result(layout, items, values, wavelength=int(nm))]

    async def read_absorbance_spectrum(
        self, plate: Plate, wells: list[Well], wavelengths: Sequence[int]
    ) -> list[dict]:
        """OD of ``wells`` at each of ``wavelengths`` (nm) in one scan: one dict per wavelength,
        as PLR's Molecular Devices backends return spectrum reads."""
        grid = np.array([self._wavelength(w, "wavelengths") for w in wavelengths], dtype=float)
        layout, items = self._resolve(plate, wells)
        values = self._absorbance(layout, items, grid)
        k = self.constants
        per_well = k.absorbance_s_per_well + k.spectrum_s_per_well_per_nm * grid.size
        self._spend(k.read_overhead_s + items.size * per_well)
        log.debug("spectrum %d wavelengths, %d wells of %s", grid.size, items.size, plate.name)
        return [
            self._result(layout, items, values[:, j], wavelength=int(nm))
            for j, nm in enumerate(grid)
        ]

    async def read_fluorescence(
        self,
        plate: Plate,
        wells: list[Well],
        excitation_wavelength: int,
        emission_wavelength: int,
        focal_height: float,
        gain: float | None = None,
    ) -> list[dict]:
        """RFU of ``wells`` (top read) with the focal point ``focal_height`` mm above the plate's
        underside (see :mod:`.fluorescence`), at PMT ``gain`` (``None``: the constants'
        ``gain_reference``)."""
        ex = self._wavelength(excitation_wavelength, "excitation_wavelength")
        em = self._wavelength(emission_wavelength, "emission_wavelength")
        if em <= ex:
            raise ValueError("emission wavelength must be longer than excitation wavelength")
        layout, items = self._resolve(plate, wells)
        if not (math.isfinite(float(focal_height)) and float(focal_height) >= 0.0):
            raise ValueError(
                f"focal_height must be a non-negative number of mm, not {focal_height}"
            )
        factor = self._gain_factor(gain)
        contents = gather(self.world, layout.keys_of(items), self._buffer_ph)
        column = self._column_mm(layout, items, contents.volume_ul)
        focus = np.full(column.shape, float(focal_height) - layout.bottom_mm)
        truth = self.truth
        k = self.constants
        emitted = emitted_rfu(
            contents,
            column,
            focus,
            ex,
            em,
            self._eps,
            self.world.species,
            gain_of(k, truth),
            k.focal_half_width_mm,
        )
        values = measured_rfu(emitted, truth, k, self._rng, factor)
        self._spend(k.read_overhead_s + items.size * k.fluorescence_s_per_well)
        log.debug("fluorescence %s/%s nm, %d wells of %s", ex, em, items.size, plate.name)
        return [self._result(layout, items, values, ex_wavelength=int(ex), em_wavelength=int(em))]

    async def read_luminescence(
        self, plate: Plate, wells: list[Well], focal_height: float, integration_time: float = 1.0
    ) -> list[dict]:
        """Counts per second of ``wells`` over ``integration_time`` (s, 0.01–60) each."""
        if not 0.01 <= integration_time <= 60.0:
            raise ValueError("integration_time must be within 0.01-60 s")
        layout, items = self._resolve(plate, wells)
        everything = gather(self.world, layout.keys, self._buffer_ph)
        truth = self.truth
        k = self.constants
        incident = with_crosstalk(
            emitted_photons(everything, self.world.species),
            layout,
            truth.crosstalk,
            truth.crosstalk * k.diagonal_crosstalk_ratio,
        )
        values = measured_rlu(incident[items], integration_time, truth, k, self._rng)
        self._spend(k.read_overhead_s + items.size * (k.luminescence_s_per_well + integration_time))
        log.debug("luminescence %d wells of %s", items.size, plate.name)
        return [self._result(layout, items, values)]

    # -- internals -----------------------------------------------------------------------------
    @property
    def _rng(self) -> np.random.Generator:
        return self.world.stream(self.stream)

    def _wavelength(self, nm: Any, name: str) -> float:
        k = self.constants
        value = float(nm)
        if not (math.isfinite(value) and k.wavelength_min_nm <= value <= k.wavelength_max_nm):
            low, high = k.wavelength_min_nm, k.wavelength_max_nm
            raise ValueError(f"{name} must be within {low:g}-{high:g} nm, not {nm}")
        return value

    def _gain_factor(self, gain: float | None) -> float:
        """The signal's factor at PMT ``gain``: (gain / reference)^exponent, 1 at the
        reference (and for ``None``)."""
        k = self.constants
        if gain is None or float(gain) == k.gain_reference:
            return 1.0
        value = float(gain)
        if not (math.isfinite(value) and value > 0.0):
            raise ValueError(f"gain must be a positive number, not {gain}")
        return float((value / k.gain_reference) ** k.gain_exponent)

    def _column_mm(self, layout: PlateLayout, items: np.ndarray, volume: np.ndarray) -> np.ndarray:
        """Liquid column (mm) at each well's centre, with the plate's path spread if any."""
        column = layout.column_mm(volume)
        spread = self._path_spread(layout.plate)
        return column if spread is None else spread.apply(column, items)

    def path_cm(self, plate: Plate, volume_ul: np.ndarray, wells: list[Well]) -> np.ndarray:
        """The true path (cm) the liquid in ``wells`` of ``plate`` gives a vertical beam at
        ``volume_ul``: the height-volume table, the meniscus and path offset, the plate's path
        spread (hidden truth, for scoring; defect wells' shortfalls left out)."""
        layout, items = self._resolve(plate, wells)
        return self._column_mm(layout, items, np.asarray(volume_ul, float)) / 10.0

    def _resolve(self, plate: Plate, wells: list[Well]) -> tuple[PlateLayout, np.ndarray]:
        k = self.constants
        layout = layout_of(
            self._layouts, plate, self.path_model, k.meniscus_contact_angle_deg, k.path_offset_mm
        )
        items = layout.indices(wells) if wells else np.arange(len(layout.keys))
        return layout, items

    def _absorbance(self, layout: PlateLayout, items: np.ndarray, nm: np.ndarray) -> np.ndarray:
        contents = gather(self.world, layout.keys_of(items), self._buffer_ph)
        column = self._column_mm(layout, items, contents.volume_ul)
        defects = self._defects(layout.plate)
        if defects is not None:
            column = column * (1.0 - defects.path_loss[items])
        path = column / 10.0
        celsius = self.world.thermal.temperature(layout.plate.name)
        true_od = self._eps.alpha(contents, nm, celsius) * path[:, None]
        if defects is not None:
            true_od = true_od + defects.od[items][:, None]
        reading = measured_absorbance(
            true_od,
            self.plate_truth(layout.plate),
            items,
            self.truth,
            self.constants,
            self._rng,
            nm,
        )
        return reported(reading, self.constants)

    def _spend(self, seconds: float) -> None:
        self.world.clock.advance(seconds)

    def _result(
        self, layout: PlateLayout, items: np.ndarray, values: np.ndarray, **extra: int
    ) -> dict[str, Any]:
        cols = layout.cols
        flat: list[float | None] = [None] * (layout.rows * cols)
        positions = (layout.row[items] * cols + layout.col[items]).tolist()
        for position, value in zip(positions, values.tolist(), strict=True):
            flat[position] = value
        data: Grid = [flat[r * cols : (r + 1) * cols] for r in range(layout.rows)]
        return {
            **extra,
            "time": self.world.clock.now(),
            "temperature": round(self._sensor_c(), 1),
            "data": data,
        }
