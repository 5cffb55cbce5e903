"""``SeaBreezeSpectrometer``: an Ocean spectrometer on USB through python-seabreeze, behind the
labtools tool surface (the same tools as :class:`~labtools.drivers.ocean.OBPSpectrometer`).

seabreeze's pure-Python backend (its device, feature, protocol and USB transport classes, on
pyusb) does the talking, whatever the model's command set: a Flame-S speaks Ocean's older OOI
commands over USB, an STS OBP, an ST OBP2. In a lab configuration::

    [instruments.spec]
    class = "labtools.drivers.ocean.usb:SeaBreezeSpectrometer"
    device = "seabreeze://S05123"   # or "seabreeze://": the one STS on USB
    model = "STS"

The constructor does no I/O and does not import seabreeze (the ``ocean`` extra:
``pip install -e '/path/to/labtools[ocean]'``); :meth:`setup` opens the device and reads its
serial number and wavelength calibration.

What seabreeze cannot tell: it sends settings with an ACK requested but does not report a
NACK, and it has no integration-time getter. So the driver checks every setting against the
model's limits (and seabreeze's) before sending, and re-sends what is not known to be held
after an error or a reconnection. Scans are averaged here (seabreeze has no device averaging).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np

from labtools.drivers.ocean import seabreeze_link as sb
from labtools.drivers.ocean.device import OceanSpectrometer
from labtools.errors import InstrumentError, NotConnected, OutOfRange
from labtools.instruments.spectrometer import SpectrometerSnapshot

__all__ = ["SeaBreezeSpectrometer"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class SeaBreezeSpectrometer(OceanSpectrometer):
    """An Ocean spectrometer on USB through python-seabreeze (pyseabreeze backend).

    ``device``: ``"seabreeze://"`` (the one device of ``model`` on USB),
    ``"seabreeze://<serial number>"``, or a seabreeze device object (from
    ``SeaBreezeAPI().list_devices()``; then it stays the caller's and :meth:`stop` leaves it
    open). ``model``: a key of :data:`labtools.drivers.ocean.models.MODELS` (``"FLAME-S"``,
    ``"STS"``, ``"ST"``); the device must be of it. ``dark_with``: ``"lamp"`` switches the
    lamp-enable output off for dark spectra, ``"shutter"`` closes the shutter (OBP devices
    only). ``pyusb_backend``: ``"libusb1"``, ``"libusb0"`` or ``"openusb"`` (default: the first
    that loads).
    """

    def __init__(
        self,
        name: str,
        device: str | object = "seabreeze://",
        model: str = "STS",
        *,
        dark_with: Literal["lamp", "shutter"] = "lamp",
        pyusb_backend: str | None = None,
    ) -> None:
        super().__init__(name, model)
        if dark_with not in ("lamp", "shutter"):
            raise ValueError(f"dark_with must be 'lamp' or 'shutter', not {dark_with!r}")
        if pyusb_backend not in (None, "libusb1", "libusb0", "openusb"):
            raise ValueError(
                f"pyusb_backend must be 'libusb1', 'libusb0' or 'openusb', not {pyusb_backend!r}"
            )
        self._serial_wanted = sb.parse_uri(device) if isinstance(device, str) else None
        self._given: Any = None if isinstance(device, str) else device
        self._dark_with = dark_with
        self._pyusb_backend = pyusb_backend
        self._device: Any = None
        self._lost = False
        # what the device is known to hold (None: unknown, sent before the next scan)
        self._device_integration_us: int | None = None
        self._light_on: bool | None = None

    # -- lifetime ------------------------------------------------------------------------------
    async def setup(self) -> None:
        """Open the device unless open (reopening a lost one), then read its serial number and
        wavelength calibration unless known."""
        if self._lost:
            await self._reopen()
            return
        if self._device is None:
            self._device = await asyncio.to_thread(self._open)
        if self._wavelengths is None:
            try:
                await asyncio.to_thread(self._identify)
            except BaseException:
                await self.stop()
                raise

    @property
    def link_lost(self) -> bool:
        return self._lost

    async def stop(self) -> None:
        """Close the device (one given as an object stays open)."""
        device, self._device = self._device, None
        self._forget_device_settings()
        if device is not None and self._given is None:
            with contextlib.suppress(Exception):  # an unplugged device may fail to close
                await asyncio.to_thread(device.close)

    def restore(self, snapshot: SpectrometerSnapshot) -> None:
        """Return the front end to ``snapshot``; the device's settings are sent again and its
        calibration read again at the next :meth:`setup`."""
        super().restore(snapshot)
        self._wavelengths = None
        self._forget_device_settings()

    async def _reopen(self) -> None:
        serial = self.serial_number
        await self.stop()
        self._lost = False
        self._wavelengths = None
        await self.setup()
        self._check_same_device(serial)
        log.warning("%s: USB device reopened", self.name)

    def _open(self) -> Any:
        device = self._given
        if device is None:
            device = sb.find_device(
                self.name, self._serial_wanted, self.model.name, self._pyusb_backend
            )
        if not device.is_open:
            with sb.mapped_errors(self.name, "opening the device"):
                device.open()
        if device.model not in sb.SEABREEZE_MODELS[self.model.name]:
            if self._given is None:
                with contextlib.suppress(Exception):
                    device.close()
            raise InstrumentError(
                f"{self.name}: the device is a {device.model}, configured as {self.model.name}",
                hint="set model to the connected device's (FLAME-S, STS or ST)",
            )
        return device

    def _identify(self) -> None:
        feature = self._feature()
        self.serial_number = str(self._need_device().serial_number)
        with sb.mapped_errors(self.name, "reading the wavelength calibration", self._mark_lost):
            wavelengths = np.asarray(feature.get_wavelengths(), dtype=float)
        if wavelengths.size != self.model.pixels or not np.all(np.diff(wavelengths) > 0):
            raise InstrumentError(
                f"{self.name}: the wavelength calibration has {wavelengths.size} pixels or is "
                f"not monotonic ({self.model.name}: {self.model.pixels} pixels)",
                hint="check the configured model",
            )
        self._wavelengths = wavelengths
        log.info(
            "%s: %s serial %s, %.1f–%.1f nm over USB",
            self.name,
            self.model.name,
            self.serial_number,
            wavelengths[0],
            wavelengths[-1],
        )

    def _forget_device_settings(self) -> None:
        self._device_integration_us = None
        self._light_on = None

    def _mark_lost(self) -> None:
        self._lost = True
        self._forget_device_settings()

    # -- driver hooks --------------------------------------------------------------------------
    async def _set_integration_time(self, seconds: float) -> None:
        micros = self.model.integration_micros(seconds)
        await self._io(self._apply_integration, micros)

    async def _acquire(self, scans: int, *, dark: bool) -> np.ndarray:
        integration_s = self._current_integration()
        top = self.model.max_scans
        if isinstance(scans, bool) or not isinstance(scans, int) or not 1 <= scans <= top:
            raise OutOfRange(
                f"scans must be 1–{top}, not {scans!r}", field="/scans", hint=f"1–{top}"
            )
        return await self._io(self._acquire_blocking, scans, dark, integration_s)

    def _acquire_blocking(self, scans: int, dark: bool, integration_s: float) -> np.ndarray:
        micros = self.model.integration_micros(integration_s)
        if self._device_integration_us != micros:
            self._apply_integration(micros)
        if self._light_on != (not dark):
            self._light_on = None  # unknown until acknowledged
            sb.switch_light(
                self.name, self._need_device(), self._dark_with, not dark, self._mark_lost
            )
            self._light_on = not dark
        feature = self._feature()
        total = np.zeros(self.model.pixels)
        for _ in range(scans):
            with sb.mapped_errors(self.name, "reading a spectrum", self._mark_lost):
                counts = np.asarray(feature.get_intensities(), dtype=float)
            total += self._checked_counts(counts)
        return total / scans

    def _apply_integration(self, micros: int) -> None:
        """Send the integration time (µs); held once sent without error."""
        feature = self._feature()
        low, high = (int(v) for v in feature.get_integration_time_micros_limits())
        if not low <= micros < high:  # seabreeze's own bounds (its upper one is exclusive)
            raise OutOfRange(
                f"integration time {micros / 1000:g} ms is outside what seabreeze sends to a "
                f"{self._need_device().model}",
                field="/time",
                hint=f"{low / 1000:g} millisecond up to (not including) {high / 1000:g}",
            )
        self._device_integration_us = None
        with sb.mapped_errors(self.name, "setting the integration time", self._mark_lost):
            feature.set_integration_time_micros(micros)
        self._device_integration_us = micros

    # -- helpers -------------------------------------------------------------------------------
    def _need_device(self) -> Any:
        if self._device is None:
            raise NotConnected(self.name)
        return self._device

    def _feature(self) -> Any:
        feature = self._need_device().f.spectrometer
        if feature is None:
            raise InstrumentError(
                f"{self.name}: seabreeze gives this device no spectrometer feature"
            )
        return feature

    async def _io(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking USB I/O off the event loop, reopening a lost device first."""
        if self._lost:
            await self._reopen()
        self._need_device()
        return await asyncio.to_thread(function, *args)
