"""From the world's cuvette to photoelectrons per second on each pixel.

rate(p) = peak · L(λ_p) · [ T(λ_p) + s(λ_p) · T̄ ] ⊗ slit

* λ_p: the *true* pixel wavelengths — the device's stored calibration plus a small hidden error
  per seed (±0.1–0.5 nm, physics reference §7, [A] shape: offset + tilt);
* L: lamp × response (:mod:`.light`), peak: the model's brightest-pixel rate;
* T: the cuvette's transmission (:mod:`.cuvette`);
* stray light s(λ) ≈ 0.05 % at 600 nm, 0.10 % at 435 nm [L], its level hidden per seed; it comes
  from the whole spectrum, so it scales with T̄, the flux-weighted mean transmission [A];
* ⊗ slit: a Gaussian line shape of the model's resolution (FWHM, nm) [A].
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from labtools.simulators.spectrometer.cuvette import Cuvette
from labtools.simulators.spectrometer.light import relative_rate
from labtools.simulators.spectrometer.profiles import DetectorProfile
from labtools.simulators.world import World

__all__ = ["Optics", "stray_fraction"]

#: s(435)/s(600) = 2 [L] → s ∝ λ^-k
_STRAY_EXPONENT = math.log(2.0) / math.log(600.0 / 435.0)


def stray_fraction(nm: np.ndarray, at_600nm: float) -> np.ndarray:
    """Stray-light fraction s(λ) = s600 · (600/λ)^k."""
    return at_600nm * (600.0 / nm) ** _STRAY_EXPONENT


class Optics:
    """The light path of one emulated spectrometer looking at ``container`` in ``world``."""

    def __init__(
        self,
        world: World,
        profile: DetectorProfile,
        *,
        name: str,
        container: str = "cuvette",
        cuvette: Cuvette | None = None,
    ) -> None:
        self.world = world
        self.profile = profile
        self.name = name
        self.container = container
        self.cuvette = cuvette or Cuvette()
        pixels = np.arange(profile.model.pixels, dtype=float)
        stored_coefficients = np.asarray(profile.coefficients, dtype=np.float32).astype(
            float
        )  # as sent (float32)
        self._pixels = pixels
        self._stored_nm = np.polynomial.polynomial.polyval(pixels, stored_coefficients)
        self._draw_truth()
        world.on_reset(self._draw_truth)

    def _draw_truth(self) -> None:
        """The hidden calibration error and stray light of the world's seed, and what follows."""
        world, profile, pixels = self.world, self.profile, self._pixels
        # hidden truth per seed, from the world's profile: true minus stored wavelength =
        # offset + tilt · (p/N − ½); stray light at 600 nm
        offset = world.hidden(
            f"{self.name}/wavelength_offset_nm", _drawn(world, "wavelength_offset")
        )
        tilt = world.hidden(f"{self.name}/wavelength_tilt_nm", _drawn(world, "wavelength_tilt"))
        stray = world.hidden(f"{self.name}/stray_light_600nm", _drawn(world, "stray_light_600nm"))
        #: what each pixel really sees, nm
        self.true_nm = self._stored_nm + offset + tilt * (pixels / pixels[-1] - 0.5)
        self._lamp = profile.peak_rate_e_per_s * relative_rate(self.true_nm)
        self._stray = stray_fraction(self.true_nm, stray)
        self._kernel = _slit_kernel(profile.resolution_nm, float(np.mean(np.diff(self.true_nm))))

    def rate(self, *, light: bool) -> np.ndarray:
        """Photoelectrons per second per pixel (excluding dark current); zeros when the lamp is
        off or the shutter is closed (``light`` false)."""
        if not light:
            return np.zeros_like(self._lamp)
        contents = self.world.peek(self.container)
        transmission = self.cuvette.transmission(contents, self.true_nm, self.world.species)
        mean_t = float(np.sum(self._lamp * transmission) / np.sum(self._lamp))
        seen = self._lamp * (transmission + self._stray * mean_t)
        return _convolve(seen, self._kernel)


def _drawn(world: World, name: str) -> Callable[[np.random.Generator], float]:
    return world.profile[f"spectrometer.{name}"].draw


def _slit_kernel(fwhm_nm: float, nm_per_pixel: float) -> np.ndarray:
    sigma = fwhm_nm / (2.0 * math.sqrt(2.0 * math.log(2.0))) / nm_per_pixel
    half = max(1, math.ceil(4 * sigma))
    x = np.arange(-half, half + 1, dtype=float)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return kernel / kernel.sum()


def _convolve(values: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    half = kernel.size // 2
    padded = np.pad(values, half, mode="edge")
    return np.convolve(padded, kernel, mode="valid")
