"""python-seabreeze as the USB link of :class:`~labtools.drivers.ocean.usb.SeaBreezeSpectrometer`.

seabreeze's pure-Python backend (``pyseabreeze``, on pyusb) is imported only when a device is
opened; it is an optional dependency (the ``ocean`` extra). Devices are found through its USB
transport class, not ``SeaBreezeAPI()`` (which resets every Ocean device on the bus, and whose
listing also probes the network for Ethernet models) nor ``seabreeze.use`` (which selects a
backend for the whole process).

Devices are named by URI: ``seabreeze://`` (the one device of the configured model) or
``seabreeze://<serial number>``. seabreeze's errors become the typed tool errors here.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

from labtools.drivers.ocean import messages as m
from labtools.drivers.ocean.protocol import Flag, FramingError, OBPMessage, decode
from labtools.drivers.usb import LIBUSB_HINT, no_libusb
from labtools.errors import InstrumentError, NotSupported, Timeout, ToolError, install_hint

__all__ = [
    "INSTALL_HINT",
    "SCHEME",
    "SEABREEZE_MODELS",
    "find_device",
    "import_pyseabreeze",
    "mapped_errors",
    "parse_uri",
    "switch_light",
]

SCHEME = "seabreeze://"
INSTALL_HINT = install_hint("ocean") + " (python-seabreeze and pyusb)"
#: seabreeze's model names for each model of :data:`labtools.drivers.ocean.models.MODELS`
#: (seabreeze reports a Flame-S as FLAMES when its FPGA firmware is 3 or later, else USB2000PLUS)
SEABREEZE_MODELS: dict[str, tuple[str, ...]] = {
    "FLAME-S": ("FLAMES", "USB2000PLUS"),
    "STS": ("STS",),
    "ST": ("ST",),
}
_SERIAL = re.compile(r"[A-Za-z0-9._-]{1,32}")
#: the OOI command that drives the strobe/lamp-enable line (python-seabreeze OOIProtocol 0x03)
_OOI_LAMP_ENABLE = 0x03
_OBP_LIGHT = {"lamp": m.SET_LAMP_ENABLE, "shutter": m.SET_SHUTTER}


def parse_uri(uri: str) -> str | None:
    """The serial number a ``seabreeze://`` URI names (``None``: any one device)."""
    if not isinstance(uri, str) or not uri.lower().startswith(SCHEME):
        raise ValueError(
            f"a seabreeze device is 'seabreeze://' or 'seabreeze://<serial>', not {uri!r}"
        )
    serial = uri[len(SCHEME) :]
    if not serial:
        return None
    if not _SERIAL.fullmatch(serial):
        raise ValueError(f"{serial!r} is not a serial number (letters, digits, '.', '_', '-')")
    return serial


def import_pyseabreeze() -> Any:
    """The ``seabreeze.pyseabreeze`` package; :class:`NotSupported` with an install hint when
    seabreeze or pyusb is missing."""
    try:
        return importlib.import_module("seabreeze.pyseabreeze")
    except ImportError as exc:
        raise NotSupported(
            f"Ocean spectrometers over USB need python-seabreeze and pyusb ({exc})",
            hint=INSTALL_HINT,
        ) from exc


def find_device(name: str, serial: str | None, model: str, pyusb_backend: str | None) -> Any:
    """The seabreeze device of ``model`` with ``serial`` (the only one of ``model`` when
    ``None``), opened.

    USB only: seabreeze's ``SeaBreezeAPI.list_devices`` would also probe the network for
    Ethernet models (a multicast request and a second's wait on every open).
    """
    pyseabreeze = import_pyseabreeze()
    transport = importlib.import_module("seabreeze.pyseabreeze.transport")
    options = {} if pyusb_backend is None else {"pyusb_backend": pyusb_backend}
    wanted = SEABREEZE_MODELS[model]
    found: list[str] = []
    matches: list[Any] = []
    with mapped_errors(name, "listing USB devices"):
        for handle in transport.USBTransport.list_devices(**options):
            device = pyseabreeze.SeaBreezeDevice(handle)
            if serial is None and device.model not in wanted:
                found.append(device.model)
                continue
            try:
                device.open()
            except transport.USBTransportDeviceInUse:
                found.append(f"{device.model} (in use)")
                continue
            found.append(f"{device.model}:{device.serial_number}")
            if serial is None or device.serial_number == serial:
                matches.append(device)
            else:
                device.close()
    if len(matches) == 1:
        return matches[0]
    for device in matches:
        device.close()
    which = f"serial number {serial}" if serial else f"model {model}"
    if not matches:
        raise InstrumentError(
            f"{name}: no Ocean spectrometer with {which} on USB",
            hint=f"found: {', '.join(found) or 'none'}; check the cable and the USB permissions "
            "(seabreeze_os_setup installs the udev rules on Linux)",
        )
    raise InstrumentError(
        f"{name}: {len(matches)} spectrometers of {which} on USB",
        hint=f"name one as 'seabreeze://<serial>': {', '.join(found)}",
    )


def switch_light(
    name: str, device: Any, kind: str, on: bool, on_lost: Callable[[], None] | None = None
) -> None:
    """Let light in (``on``) or block it, with the device's lamp-enable line or shutter.

    pyseabreeze implements no lamp or shutter feature, so the message is sent through its
    protocol object: OBP (1.1) devices get the published OBP message, framed here and written
    to seabreeze's USB transport, and its ACK or NACK is checked; OOI devices (Flame-S) get
    OOI command 0x03 (lamp only; OOI sends no acknowledgement).
    """
    protocols = importlib.import_module("seabreeze.pyseabreeze.protocol")
    protocol = device.f.spectrometer.protocol
    value = int(on)
    if isinstance(protocol, protocols.OBPProtocol) and not isinstance(
        protocol, protocols.OBP2Protocol
    ):
        command = _OBP_LIGHT[kind]
        frame = OBPMessage(command.message_type, command.pack(value), Flag.ACK_REQUESTED).encode()
        with mapped_errors(name, command.name, on_lost):
            protocol.transport.write(frame)
            reply = decode(bytes(protocol.transport.read()))
        if reply.nack:
            raise InstrumentError(
                f"{name}: the device refused {command.name} ({reply.describe_error()})",
                hint="configure dark_with to the light switch this device has",
            )
        return
    if isinstance(protocol, protocols.OOIProtocol) and kind == "lamp":
        with mapped_errors(name, "set lamp enable", on_lost):
            protocol.send(_OOI_LAMP_ENABLE, value)
        return
    raise NotSupported(
        f"{name}: python-seabreeze has no way to switch the {kind} of a {device.model}",
        hint="take the dark spectrum with the light path blocked by another driver or by hand",
    )


@contextlib.contextmanager
def mapped_errors(
    name: str, action: str, on_lost: Callable[[], None] | None = None
) -> Iterator[None]:
    """Turn seabreeze's and pyusb's exceptions raised while doing ``action`` into tool errors;
    ``on_lost`` is called when the link is gone or out of step (a USB error, a malformed
    reply), so the next call reopens the device."""
    try:
        yield
    except ToolError as exc:
        if isinstance(exc, FramingError) and on_lost is not None:
            on_lost()
        raise
    except Exception as exc:
        error, lost = _translate(name, action, exc)
        if lost and on_lost is not None:
            on_lost()
        raise error from exc


def _translate(name: str, action: str, exc: Exception) -> tuple[ToolError, bool]:
    """The tool error for ``exc``, and whether the link is to be reopened."""
    usb_core = importlib.import_module("usb.core")
    transport = importlib.import_module("seabreeze.pyseabreeze.transport")
    exceptions = importlib.import_module("seabreeze.pyseabreeze.exceptions")
    if isinstance(exc, usb_core.USBTimeoutError):
        # seabreeze answers a refused query by reading on, so a NACK also ends up here
        return Timeout(
            f"{name}: no reply to {action} over USB",
            hint="the device may have refused the request; check the setting, then the cable",
        ), False
    if isinstance(exc, usb_core.USBError | transport.USBTransportError):
        return InstrumentError(
            f"{name}: USB error during {action}: {exc}",
            hint="check the cable and the USB permissions; the next call reopens the device",
        ), True
    if isinstance(exc, transport.USBTransportDeviceInUse):
        return InstrumentError(
            f"{name}: the device is in use by another program or process",
            hint="close the other program (OceanView, another lab) and try again",
        ), False
    if no_libusb(exc):
        return InstrumentError(
            f"{name}: pyusb found no USB library ({exc})", hint=LIBUSB_HINT
        ), False
    if isinstance(exc, exceptions.SeaBreezeError):
        return InstrumentError(f"{name}: {action} failed: {exc}"), False
    if isinstance(exc, struct.error | AssertionError | ValueError):
        return InstrumentError(
            f"{name}: malformed reply to {action}: {exc}",
            hint="the link may be out of step; the next call reopens the device",
        ), True
    return InstrumentError(f"{name}: {action} failed: {type(exc).__name__}: {exc}"), False
