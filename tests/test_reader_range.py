"""Over-range absorbance: no number past the reader's stated range, ever; such wells are listed.

The range is 0–4.0 OD ("readers report up to ~4.0 OD" [V: Biochrom FAQ, physics reference
§4]). Readers send out-of-range wells as a marker, not a value (Bio-Rad 680: asterisks above
3.500 OD [V: Model 680 manual §1-3-1]); PLR's BioTek backend parses starred values as NaN.
"""

from __future__ import annotations

import math
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.resources import cor_96_wellplate_360uL_Fb
from reader_rig import nm, plr_path_cm, rig

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.instruments.plate_reader import OD_MAX

#: tartrazine's ε at 426 nm in the species data (M⁻¹ cm⁻¹)
EPS_426 = 28321.08
#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"


#: reader_rig's ``rig`` on :data:`PHYSICS`
_rig = partial(rig, profile=PHYSICS)


def _molar(true_od: float) -> float:
    return true_od / (EPS_426 * plr_path_cm(200.0))


@pytest.mark.parametrize("seed", range(8))
def test_a_true_7_od_well_is_over_range_on_every_reader(seed: int) -> None:
    """The issue's case: a true 7 OD well (read 3.45–3.93 before) is reported over-range."""
    setup = rig(seed=seed)
    setup.fill("A1", 200.0, tartrazine=_molar(7.0))
    setup.fill("A2", 200.0, tartrazine=_molar(1.0))
    result = setup.lab().call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": nm(426), "wells": ["A1", "A2"]},
    )
    assert result.ok, result.error
    assert result.data["over_range"] == ["A1"]
    assert list(result.data["values"]) == ["A2"]


def test_true_3_od_reads_within_the_synergy_ht_accuracy_spec() -> None:
    """±3.0 % ±0.010 OD for 2–3 OD [V: Synergy HT operator's manual], plus noise."""
    for seed in range(6):
        setup = _rig(seed=seed)
        setup.fill("B1", 200.0, tartrazine=_molar(3.0))
        setup.fill("B2", 200.0)
        result = setup.lab().call(
            "reader_read_absorbance",
            {"plate": "plate_1", "wavelength": nm(426), "wells": ["B1", "B2"]},
        )
        values = result.data["values"]
        assert abs(values["B1"] - values["B2"] - 3.0) < 0.03 * 3.0 + 0.010 + 0.03


def test_spectrum_and_kinetic_reads_give_null_and_list_the_well() -> None:
    setup = rig(seed=3)
    setup.fill("C1", 200.0, tartrazine=_molar(6.0))
    setup.fill("C2", 200.0, tartrazine=_molar(0.5))
    lab = setup.lab()
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {
            "plate": "plate_1",
            "wells": ["C1", "C2"],
            "start": nm(400),
            "stop": nm(450),
            "step": nm(10),
        },
    )
    assert spectrum.ok, spectrum.error
    assert spectrum.data["over_range"] == ["C1"]
    assert None in spectrum.data["values"]["C1"]
    assert None not in spectrum.data["values"]["C2"]
    kinetic = lab.call(
        "reader_read_absorbance_kinetic",
        {
            "plate": "plate_1",
            "wells": ["C1", "C2"],
            "wavelength": nm(426),
            "interval": {"value": 10, "unit": "second"},
            "reads": 3,
        },
    )
    assert kinetic.ok, kinetic.error
    assert kinetic.data["over_range"] == ["C1"]
    assert kinetic.data["values"]["C1"] == [None, None, None]
    assert kinetic.data["slopes"]["C1"] is None


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10_000),
    true_od=st.floats(3.0, 8.0),
    volume=st.floats(50.0, 340.0),
)
def test_no_reading_ever_exceeds_the_stated_range(seed: int, true_od: float, volume: float) -> None:
    setup = rig(seed=seed)
    wells = ["D1", "D2", "D3"]
    for well, od in zip(wells, (true_od, true_od - 0.3, true_od + 0.3), strict=True):
        setup.fill(well, volume, tartrazine=_molar(od))
    lab = setup.lab()
    single = lab.call(
        "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(426), "wells": wells}
    )
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": wells, "start": nm(420), "stop": nm(430), "step": nm(5)},
    )
    assert single.ok and spectrum.ok
    assert all(v <= OD_MAX for v in single.data["values"].values())
    assert set(single.data["values"]) | set(single.data["over_range"]) == set(wells)
    for series in spectrum.data["values"].values():
        assert all(v is None or v <= OD_MAX for v in series)


def _chatterbox_lab(grid: list[list[float | None]]) -> Lab:
    backend = PlateReaderChatterboxBackend()
    backend.dummy_absorbance = grid
    reader = PlateReader(name="reader", size_x=130.0, size_y=90.0, size_z=30.0, backend=backend)
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    return Lab([PLRPlateReader("reader", reader)])


def test_a_real_backends_markers_and_numbers_past_the_range_are_over_range() -> None:
    """NaN (PLR's BioTek starred value) and a number above 4.0 OD from any backend are listed
    over-range, never passed on; ``inf`` stays saturated."""
    grid: list[list[float | None]] = [[0.1] * 12 for _ in range(8)]
    grid[0][0], grid[0][1], grid[0][2] = math.nan, 4.7, math.inf
    result = _chatterbox_lab(grid).call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": nm(450), "wells": ["A1", "A2", "A3", "A4"]},
    )
    assert result.ok, result.error
    assert result.data["over_range"] == ["A1", "A2"]
    assert result.data["saturated"] == ["A3"]
    assert result.data["values"] == {"A4": 0.1}
