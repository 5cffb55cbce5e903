"""The detector: photoelectrons → counts for one or more scans.

counts = offset + g · Poisson((rate + dark) · t) + Normal(0, read noise), digitised and clipped to
the ADC range [0, full scale]; a pixel whose charge exceeds the range reads exactly full scale.
The gain g (counts per photoelectron) and the read noise (counts) come from the model's profile:
single-scan dark noise and S:N at full signal as published (:mod:`.profiles`). Averaged scans are
each digitised first, then averaged and rounded to whole counts, as a device that returns 16-bit
averages would.
"""

from __future__ import annotations

import numpy as np

from labtools.simulators.spectrometer.profiles import DetectorProfile

__all__ = ["CCD"]


class CCD:
    """One detector described by ``profile``, drawing noise from ``rng``."""

    def __init__(self, profile: DetectorProfile, rng: np.random.Generator) -> None:
        self.profile = profile
        self.rng = rng

    def expose(self, rate_e_per_s: np.ndarray, seconds: float, scans: int) -> np.ndarray:
        """Counts (uint16) averaged over ``scans`` exposures of ``seconds`` each."""
        p = self.profile
        mean_e = (rate_e_per_s + p.dark_rate_e_per_s) * seconds
        shape = (scans, mean_e.size)
        electrons = self.rng.poisson(mean_e, size=shape).astype(float)
        analog = p.offset_counts + p.gain * electrons
        analog += self.rng.normal(0.0, p.dark_noise_counts, size=shape)
        digital = np.clip(np.floor(analog), 0.0, float(p.model.full_scale))
        return np.rint(digital.mean(axis=0)).astype(np.uint16)
