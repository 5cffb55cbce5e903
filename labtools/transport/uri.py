"""Opening a transport from a URI or a configuration mapping.

* VISA resource names (``TCPIP::127.0.0.1::5000::SOCKET``, ``ASRL1::INSTR``, ``USB0::…``,
  ``GPIB0::8::INSTR``), or any string prefixed ``visa:`` → :class:`VisaTransport` (``@py``
  backend unless ``visa_library`` says otherwise);
* pyserial URLs (``socket://host:port``, ``loop://``, ``rfc2217://…``, ``spy://…``) and port
  names (``/dev/ttyUSB0``, ``COM3``) → :class:`SerialTransport`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from labtools.transport.base import Transport

__all__ = ["check_transport", "make_transport", "open_transport", "transport_kind"]

_VISA = re.compile(r"^(TCPIP|ASRL|USB|GPIB|VXI|PXI|VICP)[^:]*::", re.IGNORECASE)
_PORT = re.compile(r"^(/dev/|COM\d+$)", re.IGNORECASE)


def open_transport(uri: str, *, timeout: float = 1.0, **options: Any) -> Transport:
    """Open the transport ``uri`` names; ``options`` go to the adapter (e.g. ``baudrate`` for a
    serial port, ``visa_library`` for VISA). Raises ``ValueError`` for a URI of no known kind
    and :class:`~labtools.errors.InstrumentError` when the link cannot be opened."""
    kind, target = transport_kind(uri)
    if kind == "visa":
        return _visa(target, timeout, options)
    from labtools.transport.serial_port import SerialTransport

    return SerialTransport(target, timeout=timeout, **options)


def transport_kind(uri: str) -> tuple[Literal["visa", "serial"], str]:
    """What kind of link ``uri`` names, and the name its adapter takes, without opening it;
    ``ValueError`` for a URI of no known kind."""
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"a transport URI must be a non-empty string, not {uri!r}")
    if uri.lower().startswith("visa:"):
        return "visa", uri[5:].removeprefix("//")
    if _VISA.match(uri):
        return "visa", uri
    if "://" in uri or _PORT.match(uri):
        return "serial", uri
    raise ValueError(
        f"cannot tell what kind of link {uri!r} is: give a VISA resource "
        "(TCPIP::host::port::SOCKET), a pyserial URL (socket://host:port, loop://) or a port "
        "name (/dev/ttyUSB0, COM3)"
    )


def check_transport(spec: Transport | str | Mapping[str, Any]) -> None:
    """Check a transport specification as :func:`make_transport` takes it, opening nothing:
    ``ValueError`` for a URI of no known kind or a mapping without one, ``TypeError`` for
    anything else."""
    if isinstance(spec, Transport):
        return
    if isinstance(spec, Mapping):
        if "uri" not in spec:
            raise ValueError(f"a transport mapping needs a 'uri' (got keys {sorted(spec)})")
        spec = spec["uri"]
    if not isinstance(spec, str):
        raise TypeError(
            f"a transport is a Transport, a URI or a mapping, not {type(spec).__name__}"
        )
    transport_kind(spec)


def _visa(resource: str, timeout: float, options: dict[str, Any]) -> Transport:
    from labtools.transport.visa import VisaTransport

    return VisaTransport(resource, timeout=timeout, **options)


def make_transport(spec: Transport | str | Mapping[str, Any], *, timeout: float = 1.0) -> Transport:
    """A transport from an object (returned as is), a URI, or a mapping
    ``{"uri": …, "timeout": …, <adapter options>}`` as found in a lab configuration."""
    if isinstance(spec, Transport):
        return spec
    if isinstance(spec, str):
        return open_transport(spec, timeout=timeout)
    check_transport(spec)  # a mapping with a 'uri'
    options = dict(spec)
    uri = options.pop("uri")
    return open_transport(uri, timeout=options.pop("timeout", timeout), **options)
