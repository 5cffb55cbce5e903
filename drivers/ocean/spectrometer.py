"""``OBPSpectrometer``: an Ocean spectrometer speaking OBP, behind the labtools tool surface.

Layering (as in python-seabreeze): this facade → the model record (:mod:`.models`) → command
declarations (:mod:`.messages`) → framing (:mod:`.protocol`, :mod:`.link`) → a transport.
The constructor does no I/O; :meth:`setup` connects and reads the serial number and wavelength
calibration, :meth:`stop` disconnects; after :meth:`restore` (episodes), setup reads them again.

What the device holds (integration time, averaging, lamp or shutter) is tracked separately from
what the front end asked for: a setting is "unknown" from the moment its command is sent until
its ACK arrives, so after a timeout or a damaged reply the next acquisition first reads the
integration time back (and re-applies what differs) and re-applies averaging and the light
switch. A spectrum is therefore never labelled with settings the device does not have.
A link whose transport broke is reopened on the next call (:data:`RECONNECT_ATTEMPTS` tries),
then the device is identified again; a different serial number is an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import numpy as np

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.device import OceanSpectrometer
from labtools.drivers.ocean.link import OBPError, OBPLink
from labtools.drivers.ocean.protocol import Checksum
from labtools.errors import InstrumentError, NotConnected, OutOfRange, ToolError
from labtools.instruments.spectrometer import SpectrometerSnapshot
from labtools.transport import Transport, check_transport, make_transport

__all__ = ["RECONNECT_ATTEMPTS", "OBPSpectrometer"]

#: tries to reopen a dropped link, and the pause before the first retry (s, doubling)
RECONNECT_ATTEMPTS = 3
RECONNECT_PAUSE_S = 0.1

#: the command that lets light in (1) or blocks it (0) for dark spectra
_LIGHT_SWITCHES = {"lamp": m.SET_LAMP_ENABLE, "shutter": m.SET_SHUTTER}
#: the attribute recording what the device holds for each setting command (None: unknown)
_HELD = {
    m.SET_INTEGRATION_TIME.message_type: "_device_integration_us",
    m.SET_LAMP_ENABLE.message_type: "_light_on",
    m.SET_SHUTTER.message_type: "_light_on",
    m.SET_SCANS_TO_AVERAGE.message_type: "_device_scans",
}

log = logging.getLogger(__name__)
T = TypeVar("T")


class OBPSpectrometer(OceanSpectrometer):
    """An Ocean spectrometer over OBP.

    ``transport``: a :class:`~labtools.transport.Transport`, a URI such as
    ``"socket://127.0.0.1:5000"``, ``"TCPIP::127.0.0.1::5000::SOCKET"`` or ``"/dev/ttyUSB0"``,
    or a mapping ``{"uri": …, "timeout": …, …}``. A transport given as an object stays the
    caller's (not closed by :meth:`stop`); one opened from a URI or mapping is closed.
    ``model``: a key of :data:`labtools.drivers.ocean.models.MODELS` (``"FLAME-S"``, ``"STS"``,
    ``"ST"``).
    ``md5``: MD5 checksums on every message. ``None`` (default): on, and replies must carry them
    if the first reply does (a device that refuses MD5 requests, OBP error 8, is spoken to
    without); ``True``: required both ways; ``False``: off. ``timeout``: seconds to wait for a
    reply, on top of the exposure time.

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
        md5: bool | None = None,
        timeout: float = 1.0,
        dark_with: Literal["lamp", "shutter"] = "lamp",
    ) -> None:
        super().__init__(name, model)
        check_transport(transport)  # a URI of no known kind fails here, when the lab loads
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if dark_with not in _LIGHT_SWITCHES:
            raise ValueError(f"dark_with must be 'lamp' or 'shutter', not {dark_with!r}")
        self._light_switch = _LIGHT_SWITCHES[dark_with]
        self._transport_spec = transport
        self._owns_transport = not isinstance(transport, Transport)
        self._md5 = md5
        self._timeout = float(timeout)
        self._link: OBPLink | None = None
        self.coefficients: tuple[float, ...] = ()
        # what the device is known to hold (None: unknown, sent before first use)
        self._light_on: bool | None = None
        self._device_scans: int | None = None
        self._device_integration_us: int | None = None
        #: the next request's ``regarding`` number, kept across links
        self._next_id = 1

    # -- lifetime ------------------------------------------------------------------------------
    @property
    def transport(self) -> Transport | None:
        """The transport: the open one, or the one given to the constructor; ``None`` while a
        URI or mapping is not yet opened (before :meth:`setup`, after :meth:`stop`)."""
        if self._link is not None:
            return self._link.transport
        spec = self._transport_spec
        return spec if isinstance(spec, Transport) else None

    @property
    def link(self) -> OBPLink | None:
        """The OBP link while connected."""
        return self._link

    async def setup(self) -> None:
        """Connect unless connected (reopening a dropped link); read the serial number and the
        wavelength calibration unless known (and, on a reconnection or after :meth:`restore`,
        send the integration time in force again)."""
        if self._link is not None and self._link.broken:
            await self._reconnect()
            return
        if self._link is None:
            self._link = await self._open_link()
        elif self._wavelengths is not None:
            return
        try:
            await self._io(self._identify)
        except BaseException:
            await self.stop()
            raise

    @property
    def link_lost(self) -> bool:
        return self._link is not None and self._link.broken

    async def stop(self) -> None:
        """Disconnect (closes the transport if this driver opened it)."""
        link, self._link = self._link, None
        self._forget_device_settings()
        if link is not None:
            self._next_id = link.next_id
        if link is not None and self._owns_transport:
            with contextlib.suppress(Exception):  # a dropped link may fail to close cleanly
                link.transport.close()

    async def _open_link(self, first_id: int | None = None) -> OBPLink:
        spec = self._transport_spec
        if isinstance(spec, Transport):
            transport = spec
            drop_hint = (
                f"the link to {self.name} dropped; this driver did not open the transport, so "
                "reopen it and give it again (or give a URI, which the driver reopens itself)"
            )
        else:
            transport = await asyncio.to_thread(make_transport, spec, timeout=self._timeout)
            drop_hint = f"the link to {self.name} dropped; the next call reopens it"
        return OBPLink(
            transport,
            checksum=Checksum.NONE if self._md5 is False else Checksum.MD5,
            require_checksum=self._md5,
            timeout=self._timeout,
            first_id=self._next_id if first_id is None else first_id,
            drop_hint=drop_hint,
        )

    async def _reconnect(self) -> None:
        """Reopen a dropped link (bounded retries) and identify the device again: the device may
        have been reset, so nothing it held is assumed."""
        old = self._need_link()
        if not self._owns_transport:
            raise InstrumentError(f"{self.name}: the link is down", hint=old.drop_hint)
        with contextlib.suppress(Exception):
            old.transport.close()
        self._forget_device_settings()
        serial = self.serial_number
        pause = RECONNECT_PAUSE_S
        for attempt in range(1, RECONNECT_ATTEMPTS + 1):
            try:
                self._link = await self._open_link(first_id=old.next_id)
                await self._io(self._identify)
                break
            except ToolError as exc:
                if self._link is not old and self._link is not None:
                    with contextlib.suppress(Exception):
                        self._link.transport.close()
                self._link = old  # still broken: the next call tries again
                log.info("%s: reconnect attempt %d failed: %s", self.name, attempt, exc.message)
                if attempt == RECONNECT_ATTEMPTS:
                    raise InstrumentError(
                        f"{self.name}: the link dropped and {RECONNECT_ATTEMPTS} attempts to "
                        f"reopen it failed: {exc.message}",
                        hint="check that the device is powered and reachable; the next call "
                        "tries again",
                    ) from exc
                await asyncio.sleep(pause)
                pause *= 2
        self._check_same_device(serial)
        log.warning("%s: link reopened", self.name)

    def _forget_device_settings(self) -> None:
        self._light_on = self._device_scans = self._device_integration_us = None

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
        self._forget_device_settings()
        if self._link is not None:
            self._link.resync()

    def _identify(self) -> None:
        link = self._need_link()
        self.serial_number = self._serial_number(link)
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
            self._apply(m.SET_INTEGRATION_TIME, self._to_device_micros(self._integration_s))
        log.info(
            "%s: %s serial %s, %.1f–%.1f nm",
            self.name,
            self.model.name,
            self.serial_number,
            self._wavelengths[0],
            self._wavelengths[-1],
        )

    def _serial_number(self, link: OBPLink) -> str:
        """The first exchange; with ``md5=None`` a device that refuses MD5 (OBP error 8) is
        spoken to without it from then on."""
        try:
            return link.request(m.GET_SERIAL_NUMBER)
        except OBPError as exc:
            if exc.obp_error != 8 or self._md5 is not None or link.checksum == Checksum.NONE:
                raise
        log.warning("%s: the device refuses MD5 checksums; continuing without", self.name)
        link.checksum, link.require_checksum = Checksum.NONE, False
        return link.request(m.GET_SERIAL_NUMBER)

    # -- device settings -----------------------------------------------------------------------
    def _apply(self, command: m.Command[None], value: int) -> None:
        """Send a setting and record it as held once ACKed. Unknown while in flight: after a
        timeout or a damaged reply the device may or may not hold it; a NACK leaves it as it
        was."""
        attribute = _HELD[command.message_type]
        before = getattr(self, attribute)
        setattr(self, attribute, None)
        try:
            self._need_link().request(command, value)
        except OBPError:
            setattr(self, attribute, before)  # refused: unchanged
            raise
        setattr(self, attribute, bool(value) if attribute == "_light_on" else value)

    def _establish(self, micros: int, light_on: bool, on_device: int) -> None:
        """Bring the device to the settings of the next acquisition, reading back the
        integration time when it is not known (the protocol has a getter) and re-applying
        what differs."""
        if self._device_integration_us != micros:
            if self._device_integration_us is None:
                self._device_integration_us = self._read_integration_us()
            if self._device_integration_us != micros:
                self._apply(m.SET_INTEGRATION_TIME, micros)
        if self._light_on != light_on:
            self._apply(self._light_switch, int(light_on))
        if self.model.max_scans_to_average > 1 and self._device_scans != on_device:
            self._apply(m.SET_SCANS_TO_AVERAGE, on_device)

    def _read_integration_us(self) -> int | None:
        try:
            return int(self._need_link().request(m.GET_INTEGRATION_TIME))
        except OBPError as exc:
            if exc.obp_error != 2:  # 2: no getter on this device; re-apply instead
                raise
            return None

    # -- driver hooks --------------------------------------------------------------------------
    async def _set_integration_time(self, seconds: float) -> None:
        micros = self._to_device_micros(seconds)
        await self._io(self._apply, m.SET_INTEGRATION_TIME, micros)

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
        on_device = scans if scans <= self.model.max_scans_to_average else 1
        self._establish(self._to_device_micros(integration_s), not dark, on_device)
        requests = scans // on_device
        total = np.zeros(self.model.pixels)
        for _ in range(requests):
            total += self._checked_counts(
                link.request(m.GET_RAW_SPECTRUM, wait=integration_s * on_device)
            )
        return total / requests

    # -- helpers -------------------------------------------------------------------------------
    def _to_device_micros(self, seconds: float) -> int:
        """Seconds → whole device steps of µs; out-of-range is an error, never clipped."""
        return self.model.integration_micros(seconds)

    def _need_link(self) -> OBPLink:
        if self._link is None:
            raise NotConnected(self.name)
        return self._link

    async def _io(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking device I/O off the event loop (in-process links run inline), reopening
        a dropped link first."""
        link = self._need_link()
        if link.broken:
            await self._reconnect()
            link = self._need_link()
        return await link.transport.off_loop(function, *args)
