"""The virtual spectrometer as an LLM sees it: tools through ``Lab.call`` and a lab config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labtools import Lab
from labtools.drivers.ocean import OBPSpectrometer
from labtools.simulators.spectrometer import virtual_spectrometer
from labtools.simulators.world import Mixture, World

MS = "millisecond"

CONFIG = """
seed = 3

[shared.world]
class = "labtools.simulators.world:World"
seed = "@seed"

[instruments.spec]
class = "labtools.simulators.spectrometer:virtual_spectrometer"
world = "@world"
model = "FLAME-S"
"""


@pytest.fixture
def lab_and_world() -> tuple[Lab, World]:
    world = World(seed=21)
    world.fill("cuvette", Mixture.solution(3000, {}))
    return Lab([virtual_spectrometer("spec", world)]), world


def test_the_factory_builds_the_real_driver_marked_simulated() -> None:
    spec = virtual_spectrometer("spec", World(0))
    assert isinstance(spec, OBPSpectrometer)
    assert spec.simulated
    tools = {t["name"]: t for t in Lab([spec]).tools()}
    assert set(tools) >= {
        "spec_set_integration_time",
        "spec_acquire_dark",
        "spec_acquire_reference",
        "spec_acquire_spectrum",
        "spec_measure_absorbance",
    }
    assert tools["spec_measure_absorbance"]["hints"]["simulated"] is True


def test_lab_config_names_the_virtual_spectrometer(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(CONFIG)
    with Lab.load(path) as lab:
        world = lab.shared["world"]
        world.fill("cuvette", Mixture.solution(3000, {}))
        result = lab.call("spec_set_integration_time", {"time": {"value": 80, "unit": MS}})
        assert result.ok, result.error
        assert lab.call("spec_acquire_dark", {"scans": 2}).ok
        device = lab.instruments["spec"]
        assert lab.state()["spec"]["serial_number"] == device.serial_number  # read from it
        assert re.fullmatch(r"FLMS\d{5}", device.serial_number)


def test_a_typical_session(lab_and_world: tuple[Lab, World]) -> None:
    lab, world = lab_and_world
    set_time = lab.call("spec_set_integration_time", {"time": {"value": 0.1, "unit": "second"}})
    assert set_time.data == {"integration_time": {"value": 100.0, "unit": MS}}
    dark = lab.call("spec_acquire_dark", {"scans": 10}).data
    assert dark["max_counts"] < 3000 and dark["saturated_pixels"] == 0
    reference = lab.call("spec_acquire_reference", {"scans": 10}).data
    # the agent's rule of thumb: keep the reference peak below ~85 % of full scale
    assert 0.5 * 65535 < reference["max_counts"] < 0.85 * 65535
    world.fill("cuvette", Mixture.solution(3000, {"brilliant_blue": 4e-6}))
    result = lab.call("spec_measure_absorbance", {"scans": 20}).data
    compact = dict(zip(result["wavelengths"], result["absorbance"], strict=True))
    assert compact[630.0] == pytest.approx(1630 * 792.85 / 10 * 4e-6, rel=0.05)
    assert result["wavelength_unit"] == "nanometer"
    assert lab.state()["spec"] == {
        "integration_time": {"value": 100.0, "unit": MS},
        "dark": True,
        "reference": True,
        "model": "FLAME-S",
        "serial_number": lab.instruments["spec"].serial_number,
    }


def test_refused_calls_change_nothing(lab_and_world: tuple[Lab, World]) -> None:
    lab, world = lab_and_world
    too_long = lab.call("spec_set_integration_time", {"time": {"value": 70, "unit": "second"}})
    assert too_long.error["code"] == "out_of_range"
    assert too_long.error["hint"] == "allowed: 0.001–65 second"  # the Flame-S datasheet range
    wrong_unit = lab.call("spec_set_integration_time", {"time": {"value": 70, "unit": "meter"}})
    assert wrong_unit.error["code"] == "unit_error"
    no_time = lab.call("spec_acquire_dark", {"scans": 1})
    assert no_time.error["code"] == "precondition_failed"
    lab.call("spec_set_integration_time", {"time": {"value": 10, "unit": MS}})
    before = world.clock.now()
    no_reference = lab.call("spec_measure_absorbance", {"scans": 1})
    assert no_reference.error["code"] == "precondition_failed"
    too_many = lab.call("spec_acquire_spectrum", {"scans": 1000})
    assert too_many.error["code"] == "out_of_range"
    assert world.clock.now() == before  # no exposure happened


def test_changing_the_time_invalidates_dark_and_reference(lab_and_world: tuple[Lab, World]) -> None:
    lab, _ = lab_and_world
    lab.call("spec_set_integration_time", {"time": {"value": 50, "unit": MS}})
    lab.call("spec_acquire_dark", {"scans": 1})
    lab.call("spec_acquire_reference", {"scans": 1})
    lab.call("spec_set_integration_time", {"time": {"value": 60, "unit": MS}})
    assert lab.call("spec_measure_absorbance", {"scans": 1}).error["code"] == "precondition_failed"


def test_state_never_shows_hidden_truth(lab_and_world: tuple[Lab, World]) -> None:
    lab, world = lab_and_world
    lab.call("spec_set_integration_time", {"time": {"value": 10, "unit": MS}})
    hidden = world.hidden_truth()
    assert {"spec/wavelength_offset_nm", "spec/stray_light_600nm"} <= set(hidden)
    text = repr(lab.state())
    assert "stray" not in text and "offset" not in text


def test_python_callers_get_units_too(lab_and_world: tuple[Lab, World]) -> None:
    lab, _ = lab_and_world
    assert lab.spec.set_integration_time(time="25 ms")["integration_time"]["value"] == 25.0
    counts = lab.spec.acquire_spectrum(scans=2)
    assert counts["full_scale"] == 65535.0
    assert len(lab.data(counts["data"])["counts"]) == 2048


def _nm(value: float) -> dict[str, object]:
    return {"value": value, "unit": "nanometer"}


def test_get_data_gives_every_pixel_of_a_window(lab_and_world: tuple[Lab, World]) -> None:
    """A tool, so agents without MCP resources read the full resolution too: the stored
    pixels between start and stop, as Lab.data (and labtools://data) holds them."""
    lab, world = lab_and_world
    assert lab.call("spec_set_integration_time", {"time": {"value": 100, "unit": MS}}).ok
    assert lab.call("spec_acquire_dark", {"scans": 3}).ok
    assert lab.call("spec_acquire_reference", {"scans": 3}).ok  # the blank
    world.fill("cuvette", Mixture.solution(3000, {"tartrazine": 30e-6}))
    measured = lab.call("spec_measure_absorbance", {"scans": 3})
    assert measured.ok, measured.error
    handle = measured.data["data"]
    full = lab.data(handle)
    got = lab.call("spec_get_data", {"data": handle, "start": _nm(420), "stop": _nm(440)})
    assert got.ok, got.error
    inside = [i for i, w in enumerate(full["wavelengths_nm"]) if 420 <= w <= 440]
    assert len(inside) > 40  # ~0.37 nm pixels: far finer than the 10 nm compact form
    assert got.data["values"] == [full["absorbance"][i] for i in inside]
    assert got.data["wavelengths"] == [round(full["wavelengths_nm"][i], 3) for i in inside]
    assert got.data["kind"] == "absorbance" and got.data["unit"] == "absorbance"
    # a window in micrometres is converted; a count spectrum gives counts
    counts = lab.call("spec_acquire_spectrum", {"scans": 1}).data["data"]
    window = {"start": {"value": 0.5, "unit": "micrometer"}, "stop": _nm(505)}
    raw = lab.call("spec_get_data", {"data": counts, **window})
    assert raw.ok and raw.data["kind"] == "counts" and raw.data["wavelengths"][0] >= 500.0


@pytest.mark.parametrize(
    "arguments, code, field",
    [
        ({"data": "spec/999", "start": _nm(400), "stop": _nm(410)}, "unknown_resource", "/data"),
        ({"data": "LAST", "start": _nm(410), "stop": _nm(400)}, "out_of_range", "/stop"),
        ({"data": "LAST", "start": _nm(200), "stop": _nm(900)}, "out_of_range", "/stop"),
        ({"data": "LAST", "start": _nm(950), "stop": _nm(990)}, "out_of_range", "/start"),
        (
            {"data": "LAST", "start": {"value": 1, "unit": "second"}, "stop": _nm(420)},
            "unit_error",
            "/start/unit",
        ),
    ],
)
def test_get_data_refusals_say_what_would_do(
    lab_and_world: tuple[Lab, World], arguments: dict[str, object], code: str, field: str
) -> None:
    lab, _ = lab_and_world
    assert lab.call("spec_set_integration_time", {"time": {"value": 100, "unit": MS}}).ok
    handle = lab.call("spec_acquire_spectrum", {"scans": 1}).data["data"]
    if arguments["data"] == "LAST":
        arguments = {**arguments, "data": handle}
    refused = lab.call("spec_get_data", arguments)
    assert not refused.ok
    assert (refused.error["code"], refused.error["field"]) == (code, field)
    assert refused.error["hint"]
