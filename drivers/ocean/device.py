"""What every Ocean spectrometer front end shares, whatever its link: the device model as data,
the serial number and wavelength calibration read at :meth:`setup`, and their reporting."""

from __future__ import annotations

from typing import Any

import numpy as np

from labtools.drivers.ocean.models import DeviceModel, get_model
from labtools.errors import InstrumentError, NotConnected
from labtools.instruments.spectrometer import Spectrometer

__all__ = ["OceanSpectrometer"]


class OceanSpectrometer(Spectrometer):
    """An Ocean spectrometer of ``model`` (a key of :data:`~labtools.drivers.ocean.models.MODELS`);
    subclasses speak to it (OBP over a transport, or python-seabreeze over USB) and fill
    ``serial_number`` and the calibration when they connect."""

    def __init__(self, name: str, model: str) -> None:
        super().__init__(name)
        self.model: DeviceModel = get_model(model)
        self.limits = self.model.limits()
        self._wavelengths: np.ndarray | None = None
        self.serial_number: str | None = None

    def wavelengths(self) -> np.ndarray:
        """Wavelength of each pixel (nm), from the calibration read at :meth:`setup`."""
        if self._wavelengths is None:
            raise NotConnected(self.name)
        return self._wavelengths

    def full_scale(self) -> float:
        """The ADC's largest count (65535 for a 16-bit detector, 16383 for 14-bit)."""
        return float(self.model.full_scale)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "model": self.model.name, "serial_number": self.serial_number}

    # -- checks both links make -----------------------------------------------------------------
    def _check_same_device(self, serial: str | None) -> None:
        """After reconnecting: the device must be the one ``serial`` named before (if known)."""
        if serial is not None and self.serial_number != serial:
            raise InstrumentError(
                f"{self.name}: after reconnecting, serial number {self.serial_number} answers, "
                f"not {serial}",
                hint="check which device is connected; its dark and reference must be taken again",
            )

    def _checked_counts(self, counts: np.ndarray | None) -> np.ndarray:
        """A spectrum's counts, refused unless it has the model's number of pixels."""
        if counts is None or counts.size != self.model.pixels:
            size = None if counts is None else counts.size
            raise InstrumentError(
                f"{self.name}: spectrum has {size} pixels, the {self.model.name} has "
                f"{self.model.pixels}",
                hint="check the configured model",
            )
        return counts
