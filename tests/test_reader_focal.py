"""Top-read fluorescence: focal-volume geometry, the inner filter and rollover.

The model (``labtools.simulators.plate_reading.fluorescence``): collection weight
``w(z) = 1/(1 + ((z − f)/σ)²)`` along the well axis about the focal point ``f``, attenuation
``10^−(α_ex + α_em)(L − z)`` from the surface. Expected values are computed here by the trapezoid
rule from that documented form, the species data and PLR's liquid height, never from the
backend's code. Fluorescein's top-read curve in 96-well plates rises, peaks in the tens of µM
and falls [L]; focal height changes the signal [V: PLR's BioTek backends take a focal height
within 4.5–13.88 mm].
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest
from reader_rig import nm, plr_path_cm, rig

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.simulators.plate_reading import ReaderConstants
from labtools.simulators.published import published

#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"


def _constants(**given: Any) -> ReaderConstants:
    return ReaderConstants.from_profile(published(PHYSICS), **given)


SIGMA_MM = _constants().focal_half_width_mm
BOTTOM_MM = 3.03 + 0.5  # PLR's well offset and bottom thickness, Corning 96 flat
COLUMN_MM = plr_path_cm(200.0) * 10.0
WELLS = [f"B{i}" for i in range(1, 13)]


def _collected(alpha_per_cm: float, focus_mm: float, column_mm: float = COLUMN_MM) -> float:
    z = np.linspace(0.0, column_mm, 40001)
    weight = 1.0 / (1.0 + ((z - focus_mm) / SIGMA_MM) ** 2)
    return float(np.trapezoid(weight * 10.0 ** (-alpha_per_cm * (column_mm - z) / 10.0), z))


#: reader_rig's ``rig`` on :data:`PHYSICS`
_rig = partial(rig, profile=PHYSICS)


def _read(
    conc: list[float], focal_height: float, constants: ReaderConstants | None = None, seed: int = 30
) -> np.ndarray:
    setup = _rig(seed=seed)
    if constants is not None:
        setup.backend.constants = constants
    wells = WELLS[: len(conc)]
    for well, c in zip(wells, conc, strict=True):
        setup.fill(well, 200.0, fluorescein=c)
    lab = Lab([PLRPlateReader("reader", setup.reader, focal_height=focal_height)])
    result = lab.call(
        "reader_read_fluorescence",
        {
            "gain": 0,
            "focal_height": {"value": 0, "unit": "millimeter"},
            "plate": "plate_1",
            "wells": wells,
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
        },
    )
    assert result.ok, result.error
    return np.array([result.data["values"].get(w, np.inf) for w in wells])


def _eps_sum() -> float:
    species = _rig().world.species["fluorescein"]
    return float(species.absorptivity(490.0) + species.absorptivity(515.0))


def test_linear_to_100_nm() -> None:
    conc = [0.0, 1e-9, 10e-9, 30e-9, 100e-9]
    quiet = _constants(rfu_cv=0.0, rfu_noise_floor=0.0)
    values = _read(conc, 8.5, quiet)
    per_nm = (values[1:] - values[0]) / (np.array(conc[1:]) * 1e9)
    assert per_nm == pytest.approx(per_nm[0], rel=0.01)  # < 1 % inner-filter loss at 100 nM
    assert 150.0 < per_nm[0] < 250.0  # ~200 RFU per nM at the calibration geometry


def test_inner_filter_loss_at_total_absorbance_0_092() -> None:
    """A_ex + A_em = 0.092 over the column: a uniform column loses 10 %; the focal weight, which
    favours the layers near the surface, loses less, as computed here."""
    eps = _eps_sum()
    molar = 0.092 / (eps * COLUMN_MM / 10.0)
    focus = 8.5 - BOTTOM_MM
    expected = _collected(eps * molar, focus) / _collected(0.0, focus)
    uniform = (1 - 10**-0.092) / (0.092 * np.log(10))
    assert uniform == pytest.approx(0.90, abs=0.002)
    assert uniform < expected < 1.0
    quiet = _constants(rfu_cv=0.0, rfu_noise_floor=0.0)
    low, high = _read([2e-9, molar], 8.5, quiet)
    background = _read([0.0], 8.5, quiet)[0]
    ratio = ((high - background) / molar) / ((low - background) / 2e-9)
    assert ratio == pytest.approx(expected, rel=0.005)


def test_fluorescein_rolls_over_in_the_tens_of_micromolar() -> None:
    """Without the detector ceiling: the signal rises, peaks at 10–100 µM and falls ≥ 10 %."""
    conc = list(np.logspace(-7, -2, 11))
    unlimited = _constants(rfu_ceiling=1e15, rfu_cv=0.0, rfu_noise_floor=0.0)
    values = _read([*conc, 0.0], 8.5, unlimited)
    values = values[:-1] - values[-1]
    peak = int(np.argmax(values))
    assert 10e-6 <= conc[peak] <= 100e-6
    assert np.all(np.diff(values[: peak + 1]) > 0)
    assert values[-1] < 0.9 * values[peak]
    # and the independent integral agrees at every point
    eps, focus = _eps_sum(), 8.5 - BOTTOM_MM
    shape = np.array([c * _collected(eps * c, focus) for c in conc])
    assert values / values[peak] == pytest.approx(shape / shape[peak], rel=0.01)


def test_focal_height_matters() -> None:
    """Dilute wells follow ∫w (best with the focus inside the liquid); a deep focus turns over
    harder, so a concentrated well reads below the detector ceiling (a trap: dilute to check)."""
    quiet = _constants(rfu_cv=0.0, rfu_noise_floor=0.0)
    dilute = {}
    for h in (4.5, 6.5, 8.5, 11.0):
        signal, blank = _read([10e-9, 0.0], h, quiet)
        dilute[h] = signal - blank
    for h, value in dilute.items():
        expected = dilute[8.5] * _collected(0.0, h - BOTTOM_MM) / _collected(0.0, 8.5 - BOTTOM_MM)
        assert value == pytest.approx(expected, rel=0.02)
    assert dilute[11.0] < dilute[8.5]
    deep = _read([1e-3], 4.5)
    assert np.isfinite(deep[0]) and deep[0] < _constants().rfu_ceiling
    assert not np.isfinite(_read([10e-6], 8.5)[0])  # saturated at the default focus
