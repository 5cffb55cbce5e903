"""Maximum-likelihood fit of the spectrometer's dark parameters from :func:`spectrometer_run`.

The model is the simulator's own (``simulators/spectrometer/ccd.py``): a dark pixel of one scan
of integration ``t`` reads ``floor(offset + g · Poisson(R t / g) + N(0, noise²))`` counts, ``R``
the dark rate in counts per second and ``g`` the gain (counts per photoelectron). With tens of
photoelectrons or more and a read noise of tens of counts, each pixel is normal to well within
the noise:

    mean = offset + R t − ½ (the floor),   variance = noise² + g R t + 1/12 (the floor's step)

and every pixel of a dark spectrum is one draw (no fixed pattern is modelled). ``offset``,
``R``, ``noise`` and the nuisance ``g`` are fitted jointly by ML over every pixel of every
integration time (:func:`scipy.optimize.minimize`), intervals from the observed information
(the numerical Hessian), the noise on the log scale.

Not identified by a dark series, left out: ``spectrometer.wavelength_offset``,
``wavelength_tilt`` (they need a line source or a holmium standard) and ``stray_light_600nm``
(it needs a cut-off sample).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import optimize

from labtools.simulators.calibration.estimates import (
    entry,
    log_ci,
    normal_ci,
    observed_covariance,
)
from labtools.simulators.published import detector_key

__all__ = ["fit_spectrometer"]


def fit_spectrometer(record: Mapping[str, Any]) -> dict[str, Any]:
    """``{"parameters": {key: estimate}, "derived": {...}, "not_identified": {...}}``."""
    times, counts, scans = [], [], []
    for dark in record["darks"]:
        values = np.asarray(dark["counts"], dtype=float)
        full = float(dark["full_scale"])
        values = values[(values > 0) & (values < full)]  # clipped pixels say nothing
        times.append(float(dark["integration_ms"]) / 1000.0)
        counts.append(values)
        scans.append(int(dark["scans"]))
    n = np.array([c.size for c in counts], dtype=float)
    mean = np.array([c.mean() for c in counts])
    square = np.array([np.sum((c - c.mean()) ** 2) for c in counts])
    t = np.array(times)
    k = np.array(scans, dtype=float)

    def nll(x: np.ndarray) -> float:
        offset, rate, log_noise, log_gain = x
        mu = offset + rate * t - 0.5
        var = (math.exp(2 * log_noise) + math.exp(log_gain) * max(rate, 0.0) * t) / k + 1 / 12
        # Σ over pixels of the normal NLL, from each series' mean and scatter
        return float(np.sum(0.5 * (square + n * (mean - mu) ** 2) / var + 0.5 * n * np.log(var)))

    slope, intercept = np.polyfit(t, mean, 1)
    start = np.array([intercept + 0.5, slope, math.log(max(np.sqrt(square[0] / n[0]), 1.0)), 0.0])
    best = optimize.minimize(
        nll, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 4000}
    )
    best = optimize.minimize(nll, best.x, method="BFGS")
    cov = observed_covariance(nll, best.x)
    sd = np.sqrt(np.diag(cov))
    offset, rate, log_noise, log_gain = (float(v) for v in best.x)
    how = "observed information (Hessian), joint with the detector gain"
    model = str(record["model"])

    def key(field: str) -> str:
        return detector_key(model, field)

    noise, n_lo, n_hi = log_ci(log_noise, sd[2])
    gain, g_lo, g_hi = log_ci(log_gain, sd[3])
    return {
        "parameters": {
            key("offset"): entry(offset, "dimensionless", *normal_ci(offset, sd[0]), how),
            key("dark_rate"): entry(rate, "1/second", *normal_ci(rate, sd[1]), how),
            key("dark_noise"): entry(noise, "dimensionless", n_lo, n_hi, how + ", log"),
        },
        "derived": {
            "gain_counts_per_electron": entry(gain, "dimensionless", g_lo, g_hi, how + ", log"),
        },
        "not_identified": {
            "spectrometer.wavelength_offset": "needs a line source or a wavelength standard",
            "spectrometer.wavelength_tilt": "needs a line source or a wavelength standard",
            "spectrometer.stray_light_600nm": "needs a cut-off sample in the light path",
        },
    }
