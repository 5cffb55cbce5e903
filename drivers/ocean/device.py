"""What every Ocean spectrometer front end shares, whatever its link: the device model as data,
the serial number and wavelength calibration read at :meth:`setup`, and their reporting."""

from __future__ import annotations

from typing import Any

import numpy as np

from labtools.drivers.ocean.models import DeviceModel, get_model
from labtools.errors import PreconditionFailed
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
            raise PreconditionFailed(
                f"{self.name} is not connected", hint="the lab connects it on the first tool call"
            )
        return self._wavelengths

    def full_scale(self) -> float:
        """The ADC's largest count (65535 for a 16-bit detector, 16383 for 14-bit)."""
        return float(self.model.full_scale)

    def state(self) -> dict[str, Any]:
        return {**super().state(), "model": self.model.name, "serial_number": self.serial_number}
