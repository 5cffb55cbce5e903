"""What the drivers say when USB itself is missing: pyusb, or a library over it, without libusb."""

from __future__ import annotations

__all__ = ["LIBUSB_HINT", "no_libusb"]

LIBUSB_HINT = (
    "pyusb found no USB library: install libusb 1.0 (Debian/Ubuntu: apt install libusb-1.0-0; "
    "macOS: brew install libusb)"
)


def no_libusb(exc: BaseException) -> bool:
    """pyusb's ``NoBackendError`` (``usb.core``, a ``ValueError``), or seabreeze's
    ``RuntimeError`` naming the missing pyusb backend: libusb is not installed."""
    kind = type(exc)
    if kind.__name__ == "NoBackendError" and kind.__module__ == "usb.core":
        return True
    return isinstance(exc, RuntimeError) and "pyusb backend" in str(exc)
