"""``OBPSpectrometer``: an Ocean spectrometer speaking OBP, behind the labtools tool surface.

Layering (as in python-seabreeze): this facade → the model record (:mod:`.models`) → command
declarations (:mod:`.messages`) → framing (:mod:`.protocol`, :mod:`.link`) → a transport.
The constructor does no I/O; :meth:`setup` connects and reads the serial number and wavelength
calibration, :meth:`stop` disconnects; after :meth:`restore` (episodes), setup reads them again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import numpy as np

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.link import OBPLink
from labtools.drivers.ocean.models import DeviceModel, get_model
from labtools.drivers.ocean.protocol import Checksum
from labtools.errors import InstrumentError, OutOfRange, PreconditionFailed
from labtools.instruments.spectrometer import Spectrometer, SpectrometerSnapshot
from labtools.transport import Transport, make_transport

__all__ = ["OBPSpectrometer"]

#: the command that lets light in (1) or blocks it (0) for dark spectra
_LIGHT_SWITCHES = {"lamp": m.SET_LAMP_ENABLE, "shutter": m.SET_SHUTTER}

log = logging.getLogger(__name__)
T = TypeVar("T")


class OBPSpectrometer(Spectrometer):
    """An Ocean spectrometer over OBP.

    ``transport``: a :class:`~labtools.transport.Transport`, a URI such as
    ``"socket://127.0.0.1:5000"``, ``"TCPIP::127.0.0.1::5000::SOCKET"`` or ``"/dev/ttyUSB0"``,
    or a mapping ``{"uri": …, "timeout": …, …}``. A transport given as an object stays the
    caller's (not closed by :meth:`stop`); one opened from a URI or mapping is closed.
    ``model``: a key of :data:`labtools.drivers.ocean.models.MODELS` (``"FLAME-S"``, ``"STS"``,
    ``"ST"``).
    ``md5``: put MD5 checksums on outgoing messages. ``timeout``: seconds to wait for a reply,
    on top of the exposure time.

    ``dark_with``: how a dark spectrum blocks the light — ``"lamp"`` switches the lamp-enable
    output off (OBP 0x00110410; a light source wired to it goes dark), ``"shutter"`` closes the
    shutter (OBP 0x00110610). Averaging runs on the device when the model supports it
    (message 0x00120010), else in the driver.
    """

    def __init__(
        self,
        name: str,
        transport: Transport | str | Mapping[str, Any],
        model: str = "FLAME-S",
        *,
        md5: bool = False,
        timeout: float = 1.0,
        dark_with: Literal["lamp", "shutter"] = "lamp",
    ) -> None:
        super().__init__(name)
        if not isinstance(transport, Transport | str | Mapping):
            raise TypeError(
                f"transport must be a Transport, URI or mapping, not {type(transport).__name__}"
            )
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if dark_with not in _LIGHT_SWITCHES:
            raise ValueError(f"dark_with must be 'lamp' or 'shutter', not {dark_with!r}")
        self._light_switch = _LIGHT_SWITCHES[dark_with]
        self.model: DeviceModel = get_model(model)
        self.limits = self.model.limits()
        self._transport_spec = transport
        self._owns_transport = not isinstance(transport, Transport)
        self._checksum = Checksum.MD5 if md5 else Checksum.NONE
        self._timeout = float(timeout)
        self._link: OBPLink | None = None
        self._wavelengths: np.ndarray | None = None
        self.serial_number: str | None = None
        self.coefficients: tuple[float, ...] = ()
        # what the device is known to hold (None: unknown, sent before first use)
        self._light_on: bool | None = None
        self._device_scans: int | None = None

    # -- lifetime ------------------------------------------------------------------------------
    @property
    def transport(self) -> Transport | None:
        """The transport: the open one, or the one given to the constructor; ``None`` while a
        URI or mapping is not yet opened (before :meth:`setup`, after :meth:`stop`)."""
        if self._link is not None:
            return self._link.transport
        spec = self._transport_spec
        return spec if isinstance(spec, Transport) else None

    async def setup(self) -> None:
        """Connect unless connected; read the serial number and the wavelength calibration
        unless known (and, on a reconnection or after :meth:`restore`, send the integration time
        in force again)."""
        if self._link is None:
            spec = self._transport_spec
            if isinstance(spec, Transport):
                transport = spec
            else:
                transport = await asyncio.to_thread(make_transport, spec, timeout=self._timeout)
            self._link = OBPLink(transport, checksum=self._checksum, timeout=self._timeout)
        elif self._wavelengths is not None:
            return
        try:
            await self._io(self._identify)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Disconnect (closes the transport if this driver opened it)."""
        link, self._link = self._link, None
        self._light_on = self._device_scans = None
        if link is not None and self._owns_transport:
            link.transport.close()

    # -- episodes ------------------------------------------------------------------------------
    def restore(self, snapshot: SpectrometerSnapshot) -> None:
        """Return the front end to ``snapshot`` and forget what was read from the device.

        The lab sets the instrument up again before its next call: the serial number and the
        calibration are read afresh (a virtual device rewound to a new seed has new ones), the
        integration time in force is sent again, and lamp and averaging before the next scan.
        """
        super().restore(snapshot)
        self.serial_number = None
        self.coefficients = ()
        self._wavelengths = None
        self._light_on = self._device_scans = None
        if self._link is not None:
            self._link.resync()

    def _identify(self) -> None:
        link = self._need_link()
        self.serial_number = link.request(m.GET_SERIAL_NUMBER)
        count = link.request(m.GET_WAVELENGTH_COEFFICIENT_COUNT)
        if not count:
            raise InstrumentError(f"{self.name}: the device reports no wavelength calibration")
        self.coefficients = tuple(
            float(link.request(m.GET_WAVELENGTH_COEFFICIENT, i)) for i in range(count)
        )
        pixels = np.arange(self.model.pixels, dtype=float)
        self._wavelengths = np.polynomial.polynomial.polyval(pixels, self.coefficients)
        if not np.all(np.diff(self._wavelengths) > 0):
            raise InstrumentError(
                f"{self.name}: wavelength calibration is not monotonic",
                hint=f"coefficients {self.coefficients}",
            )
        if self._integration_s is not None:  # reconnected: the device may have been reset
            link.request(m.SET_INTEGRATION_TIME, self._to_device_micros(self._integration_s))
        log.info(
            "%s: %s serial %s, %.1f–%.1f nm",
            self.name,
            self.model.name,
            self.serial_number,
            self._wavelengths[0],
            self._wavelengths[-1],
        )

    # -- driver hooks --------------------------------------------------------------------------
    async def _set_integration_time(self, seconds: float) -> None:
        micros = self._to_device_micros(seconds)
        await self._io(self._need_link().request, m.SET_INTEGRATION_TIME, micros)

    async def _acquire(self, scans: int, *, dark: bool) -> np.ndarray:
        integration_s = self._current_integration()
        if (
            isinstance(scans, bool)
            or not isinstance(scans, int)
            or not (1 <= scans <= self.model.max_scans)
        ):
            raise OutOfRange(
                f"scans must be 1–{self.model.max_scans}, not {scans!r}",
                field="/scans",
                hint=f"1–{self.model.max_scans}",
            )
        return await self._io(self._acquire_blocking, scans, dark, integration_s)

    def _acquire_blocking(self, scans: int, dark: bool, integration_s: float) -> np.ndarray:
        link = self._need_link()
        light_on = not dark
        if self._light_on != light_on:
            link.request(self._light_switch, int(light_on))
            self._light_on = light_on
        on_device = scans if scans <= self.model.max_scans_to_average else 1
        if self.model.max_scans_to_average > 1 and self._device_scans != on_device:
            link.request(m.SET_SCANS_TO_AVERAGE, on_device)
            self._device_scans = on_device
        requests = scans // on_device
        total = np.zeros(self.model.pixels)
        for _ in range(requests):
            counts = link.request(m.GET_RAW_SPECTRUM, wait=integration_s * on_device)
            if counts is None or counts.size != self.model.pixels:
                size = None if counts is None else counts.size
                raise InstrumentError(
                    f"{self.name}: spectrum has {size} pixels, the {self.model.name} has "
                    f"{self.model.pixels}",
                    hint="check the configured model",
                )
            total += counts
        return total / requests

    def wavelengths(self) -> np.ndarray:
        """Wavelength of each pixel (nm), from the calibration read at :meth:`setup`."""
        if self._wavelengths is None:
            raise PreconditionFailed(
                f"{self.name} is not connected", hint="the lab connects it on the first tool call"
            )
        return self._wavelengths

    def full_scale(self) -> float:
        """The ADC's largest count (65535 for a 16-bit detector, 16383 for 14-bit)."""
        return float(self.model.full_scale)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "model": self.model.name, "serial_number": self.serial_number}

    # -- helpers -------------------------------------------------------------------------------
    def _to_device_micros(self, seconds: float) -> int:
        """Seconds → whole device steps of µs; out-of-range is an error, never clipped."""
        model = self.model
        micros = round(seconds * 1e6 / model.integration_step_us) * model.integration_step_us
        if not model.integration_min_us <= micros <= model.integration_max_us:
            low, high = model.integration_min_us / 1000, model.integration_max_us / 1000
            raise OutOfRange(
                f"integration time {seconds * 1e3:g} ms is outside the {model.name}'s range",
                field="/time",
                hint=f"{low:g}–{high:g} millisecond",
            )
        return micros

    def _need_link(self) -> OBPLink:
        if self._link is None:
            raise PreconditionFailed(
                f"{self.name} is not connected", hint="the lab connects it on the first tool call"
            )
        return self._link

    async def _io(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking device I/O off the event loop (in-process links run inline)."""
        link = self._need_link()
        if link.transport.blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)
