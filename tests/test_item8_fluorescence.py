"""Fluorescence gain and read height as arguments of ``reader_read_fluorescence``.

0 (the reader's own) reads exactly as before; a gain scales the light by
``(gain / gain_reference)^k`` (``reader.fluorescence.gain_reference`` 100, ``gain_exponent``
7.17: a power law fitted to a Tecan Spark's gain series, fpcountr's conversion factors [C]);
the read height reaches the rollover of concentrated fluorescein the lab's fixed 8.5 mm does
not show as strongly. Limits: gains 0–255 (Tecan's 1–255 [V]), read heights PLR's BioTek
4.5–13.88 mm [V].
"""

from __future__ import annotations

import numpy as np
import pytest
from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.resources import cor_96_wellplate_360uL_Fb
from reader_rig import nm, rig

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.simulators.plate_reading import ReaderConstants
from labtools.simulators.published import published

#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"
WELLS = [f"B{i}" for i in range(1, 8)]
CONC = [1e-6, 10e-6, 30e-6, 56e-6, 100e-6, 300e-6, 1e-3]
QUIET = ReaderConstants.from_profile(published(PHYSICS), rfu_cv=0.0, rfu_noise_floor=0.0)


def mm(value: float) -> dict[str, object]:
    return {"value": value, "unit": "millimeter"}


def _call(lab: Lab, wells: list[str], gain: int = 0, height: float = 0.0) -> dict:
    return lab.call(
        "reader_read_fluorescence",
        {
            "plate": "plate_1",
            "wells": wells,
            "excitation_wavelength": nm(490),
            "emission_wavelength": nm(515),
            "gain": gain,
            "focal_height": mm(height),
        },
    ).to_dict()


def _series(
    gain: int = 0, height: float = 0.0, constants: ReaderConstants | None = None, **lab: float
) -> dict:
    setup = rig(seed=30, profile=PHYSICS)
    if constants is not None:
        setup.backend.constants = constants
    for well, c in zip(WELLS, CONC, strict=True):
        setup.fill(well, 200.0, fluorescein=c)
    reader = PLRPlateReader("reader", setup.reader, **lab)
    return _call(Lab([reader], clock=setup.world.clock), WELLS, gain, height)


def _values(result: dict) -> np.ndarray:
    assert result["ok"], result["error"]
    return np.array([result["data"]["values"].get(w, np.inf) for w in WELLS])


def test_the_readers_own_gain_and_height_read_exactly_as_the_reference_gain_and_lab_height() -> (
    None
):
    own = _series()
    assert _series(gain=100) == own  # gain_reference: the factor is exactly 1
    assert _series(height=8.5) == own  # the driver's default read height
    assert _series(height=9.0) == _series(focal_height=9.0)  # an argument = the lab file's


def test_signal_follows_the_gain_power_law_and_saturates_at_high_gain() -> None:
    at_60, at_120 = (_values(_series(gain=g, constants=QUIET)) for g in (60, 120))
    assert at_120[:1] / at_60[:1] == pytest.approx(2.0**7.17, rel=1e-4)
    assert _series(gain=60)["data"]["saturated"] == []
    result = _series(gain=255)  # 822× the light: even 1 µM reads above the 1e6 RFU ceiling
    assert result["data"]["saturated"] == WELLS and result["data"]["values"] == {}


def test_a_low_read_height_reaches_the_rollover_and_a_high_one_none() -> None:
    """At gain 60 (nothing saturates): at 4.5 mm the curve peaks near 10 µM and falls to ~0.3
    of its peak by 1 mM; at the default 8.5 mm it peaks near 56 µM and keeps 0.79; at
    13.88 mm, focused above the 6.19 mm column, it rises all the way."""
    low, default, high = (_values(_series(60, h)) for h in (4.5, 8.5, 13.88))
    assert int(np.argmax(low)) == 1 and low[-1] / low.max() == pytest.approx(0.30, abs=0.03)
    assert int(np.argmax(default)) == 3 and default[-1] / default.max() == pytest.approx(
        0.79, abs=0.03
    )
    assert np.all(np.diff(high) > 0)


@pytest.mark.parametrize(
    ("gain", "height", "field"),
    [
        (256, 0.0, "/gain"),
        (-1, 0.0, "/gain"),
        (0, 4.4, "/focal_height"),
        (0, 14.0, "/focal_height"),
    ],
)
def test_gains_and_heights_outside_the_limits_are_refused_and_nothing_is_read(
    gain: int, height: float, field: str
) -> None:
    setup = rig(seed=31)
    lab = Lab([PLRPlateReader("reader", setup.reader)], clock=setup.world.clock)
    before = setup.world.clock.now()
    error = _call(lab, ["A1"], gain, height)["error"]
    assert error["code"] == "out_of_range" and error["field"] == field
    assert setup.world.clock.now() == before


def test_a_backend_without_a_gain_refuses_one_and_takes_a_read_height() -> None:
    reader = PlateReader(
        name="reader",
        size_x=130.0,
        size_y=90.0,
        size_z=30.0,
        backend=PlateReaderChatterboxBackend(),
    )
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    lab = Lab([PLRPlateReader("reader", reader)])
    error = _call(lab, ["A1"], gain=100)["error"]
    assert error["code"] == "not_supported" and error["field"] == "/gain"
    assert "gain 0" in error["hint"]
    assert _call(lab, ["A1"], height=6.0)["ok"]
    assert _call(lab, ["A1"])["ok"]


def test_biotek_read_heights_come_from_plr() -> None:
    from pylabrobot.plate_reading.agilent.biotek_synergyh1_backend import SynergyH1Backend

    from labtools.drivers.pylabrobot.plate_reader import limits_for

    heights = limits_for(SynergyH1Backend()).focal_height
    assert (heights.low, heights.high, heights.unit) == (4.5, 10.68, "millimeter")
