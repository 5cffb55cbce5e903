"""reader_read_absorbance_kinetic: repeated reads while virtual time passes and wells react.

Expected slopes are computed here from the species data (p-nitrophenolate's ε at 405 nm and
pH 10), PLR's height–volume table of the Corning well and the Michaelis–Menten rate law with the
seed's hidden constants, never from the backend's code.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from functools import partial

import numpy as np
import pytest
from fakes import FakeLiquidHandler, FakePlateReader
from reader_rig import nm, plr_path_cm, rig

from labtools import Lab
from labtools.errors import ToolError

ALP = "alkaline_phosphatase"
#: the height-volume table's path (published-2's path offset and defect wells, which move it
#: by design, are tested in test_item8_*)
PHYSICS = "published-1"


#: reader_rig's ``rig`` on :data:`PHYSICS`
_rig = partial(rig, profile=PHYSICS)


def _kinetic(lab, wells: list[str], interval_s: float, reads: int, plate: str = "plate_1"):
    return lab.call(
        "reader_read_absorbance_kinetic",
        {
            "plate": plate,
            "wells": wells,
            "wavelength": nm(405),
            "interval": {"value": interval_s, "unit": "second"},
            "reads": reads,
        },
    )


def test_product_appears_with_the_initial_slope_epsilon_path_v0() -> None:
    setup = _rig(seed=8)
    truth = setup.world.kinetics.at_work(ALP)  # the constants the wells run on
    eps = float(setup.world.species["p_nitrophenol"].absorptivity(405.0, 10.0))
    path = plr_path_cm(200.0)
    s = 10.0 * truth["km_molar"]
    target = 0.05 / 60.0 / (eps * path)  # 0.05 OD/min: well above noise, < 1 % converted
    enzyme = target * (truth["km_molar"] + s) / (truth["kcat_per_s"] * s)
    setup.fill("A1", 200.0, pnpp=s, alkaline_phosphatase=enzyme, buffer_ph10=0.02)
    setup.fill("A2", 200.0, pnpp=s, buffer_ph10=0.02)  # no enzyme: flat
    lab = setup.lab()
    result = _kinetic(lab, ["A1", "A2"], 15.0, 21)
    assert result.ok, result.error
    data = result.data
    assert data["times"] == [15.0 * i for i in range(21)]
    assert data["time_unit"] == "second" and data["unit"] == "OD" and data["slope_unit"] == "OD/min"
    od = np.array(data["values"]["A1"])
    slope = np.polyfit(np.array(data["times"]) / 60.0, od, 1)[0]
    v0 = truth["kcat_per_s"] * enzyme * s / (truth["km_molar"] + s)
    assert slope == pytest.approx(eps * path * v0 * 60.0, rel=0.02)
    assert data["slopes"]["A1"] == pytest.approx(slope, abs=1e-5)
    assert abs(data["slopes"]["A2"]) < 0.001  # noise and ~1e-4 OD/min of spontaneous hydrolysis
    assert data["saturated"] == []


def test_a_kinetic_read_lets_time_pass_and_reports_progress() -> None:
    setup = rig(seed=1)
    setup.fill("B1", 200.0)
    lab = setup.lab()
    before = setup.world.clock.now()
    seen: list[tuple[float, float | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total))

    arguments = {
        "plate": "plate_1",
        "wells": ["B1"],
        "wavelength": nm(405),
        "interval": {"value": 2, "unit": "minute"},
        "reads": 4,
    }
    result = asyncio.run(lab.acall("reader_read_absorbance_kinetic", arguments, progress=progress))
    assert result.ok, result.error
    assert result.data["times"] == [0.0, 120.0, 240.0, 360.0]
    assert setup.world.clock.now() - before >= 360.0
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_reads_slower_than_the_interval_follow_back_to_back() -> None:
    """A whole-plate read takes longer than 1 s: the times say when each read happened."""
    setup = rig(seed=2)
    result = _kinetic(setup.lab(), [], 1.0, 3)
    assert result.ok, result.error
    times = result.data["times"]
    assert times[0] == 0.0 and all(b - a > 1.0 for a, b in itertools.pairwise(times))


def test_large_runs_come_as_a_handle_with_the_slopes_inline() -> None:
    setup = rig(seed=3)
    lab = setup.lab()
    result = _kinetic(lab, [], 10.0, 7)  # 96 wells × 7 reads = 672 values > 600
    assert result.ok, result.error
    data = result.data
    assert data["values"] == {} and data["times"] == []
    assert len(data["slopes"]) == 96
    full = lab.data(data["data"])
    assert full["times_s"][0] == 0.0 and len(full["times_s"]) == 7
    assert len(full["absorbance"]) == 96 and len(full["absorbance"]["H12"]) == 7


class _Saturating(FakePlateReader):
    """Well A1 saturates the detector from the third read on."""

    async def _read_absorbance_kinetic(self, plate, wells, nm, interval_s, reads):
        times, series = await super()._read_absorbance_kinetic(plate, wells, nm, interval_s, reads)
        series["A1"] = [0.5, 1.0] + [math.inf] * (reads - 2)
        return times, series


def test_saturated_reads_are_null_and_the_slope_uses_the_others() -> None:
    handler = FakeLiquidHandler()
    handler.plate_location = "reader"
    with Lab([handler, _Saturating(lh=handler)]) as lab:
        result = _kinetic(lab, ["A1", "A2"], 30.0, 4)
    assert result.ok, result.error
    assert result.data["values"]["A1"] == [0.5, 1.0, None, None]
    assert result.data["saturated"] == ["A1"]
    assert result.data["slopes"]["A1"] == pytest.approx(1.0)  # 0.5 OD in 30 s
    assert result.data["slopes"]["A2"] == 0.0


@pytest.mark.parametrize(
    "interval, reads, field",
    [
        ({"value": 0.5, "unit": "second"}, 5, "/interval"),
        ({"value": 2, "unit": "hour"}, 5, "/interval"),
        ({"value": 10, "unit": "second"}, 1, "/reads"),
        ({"value": 10, "unit": "second"}, 241, "/reads"),
    ],
)
def test_out_of_range_interval_or_reads_is_refused_before_anything_moves(
    lab, interval, reads, field
) -> None:
    lab.lh.move_plate("plate_1", "reader")
    result = lab.call(
        "reader_read_absorbance_kinetic",
        {
            "plate": "plate_1",
            "wells": ["A1"],
            "wavelength": nm(405),
            "interval": interval,
            "reads": reads,
        },
    )
    assert not result.ok
    assert result.error["code"] == "out_of_range" and result.error["field"] == field


def test_a_plate_outside_the_reader_is_a_precondition() -> None:
    setup = rig(seed=4)
    setup.reader.unassign_child_resource(setup.plate)
    result = _kinetic(setup.lab(), ["A1"], 10.0, 3)
    assert not result.ok and result.error["code"] in ("precondition_failed", "unknown_resource")
    with pytest.raises(ToolError):
        result.unwrap()
