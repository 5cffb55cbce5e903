"""The PyLabRobot plate-reader driver through ``Lab``: plates, wells, errors, state, determinism."""

from __future__ import annotations

import copy
import json

import pytest
from reader_rig import deck_rig, nm, read, rig

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.drivers.pylabrobot.plr import (
    Greiner_384_wellplate_28ul_Fb,
    PlateReader,
    PlateReaderChatterboxBackend,
    cor_96_wellplate_360uL_Fb,
)


def _snapshot(setup) -> tuple:
    """Everything a rejected call must leave alone."""
    world = setup.world
    contents = {k: world.contents(k).state() for k in world.containers()}
    return (
        world.clock.now(),
        json.dumps(world.stream("reader").bit_generator.state, default=str),
        json.dumps(contents, sort_keys=True),
    )


def test_reads_a_whole_96_well_plate_in_row_major_order() -> None:
    setup = rig(seed=1)
    setup.fill("A1", 200.0, tartrazine=50e-6)
    result = setup.lab().call(
        "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(426), "wells": []}
    )
    assert result.ok, result.error
    wells = list(result.data["values"])
    assert len(wells) == 96 and wells[:3] == ["A1", "A2", "A3"] and wells[-1] == "H12"
    assert result.data["values"]["A1"] > 0.7 > result.data["values"]["A2"]
    assert result.data["unit"] == "OD"


def test_reads_a_384_well_plate() -> None:
    setup = rig(seed=2, factory=Greiner_384_wellplate_28ul_Fb)
    setup.fill("P24", 25.0, allura_red=100e-6)
    lab = setup.lab()
    values = read(lab, 504, [])
    assert len(values) == 384 and list(values)[-1] == "P24"
    assert values["P24"] > values["A1"] + 0.5
    for tool, extra in (
        (
            "reader_read_fluorescence",
            {
                "excitation_wavelength": nm(490),
                "emission_wavelength": nm(515),
                "gain": 0,
                "focal_height": {"value": 0, "unit": "millimeter"},
            },
        ),
        ("reader_read_luminescence", {}),
    ):
        result = lab.call(tool, {"plate": "plate_1", "wells": ["A1", "P24"], **extra})
        assert result.ok, result.error


def test_unknown_well_is_unknown_resource_with_hint_and_changes_nothing() -> None:
    setup = rig(seed=3)
    setup.fill("A1", 200.0, tartrazine=50e-6)
    lab = setup.lab()
    read(lab, 450, ["A1"])  # set up, so the snapshot is taken after setup
    before = _snapshot(setup)
    result = lab.call(
        "reader_read_absorbance",
        {"plate": "plate_1", "wavelength": nm(450), "wells": ["A1", "I13"]},
    )
    assert result.error["code"] == "unknown_resource"
    assert result.error["field"] == "/wells/1"
    assert "A1" in result.error["hint"] and "H12" in result.error["hint"]
    assert _snapshot(setup) == before


def test_plate_outside_the_reader_is_a_precondition_and_changes_nothing() -> None:
    setup, _ = deck_rig(seed=4)
    lab = setup.lab()
    read(lab, 450, ["A1"])
    before = _snapshot(setup)
    result = lab.call(
        "reader_read_absorbance", {"plate": "plate_2", "wavelength": nm(450), "wells": []}
    )
    assert result.error["code"] == "precondition_failed"
    assert result.error["field"] == "/plate"
    assert "lh_move_plate" in result.error["hint"] and "plate_1" in result.error["hint"]
    unknown = lab.call("reader_read_luminescence", {"plate": "plate_9", "wells": []})
    assert unknown.error["code"] == "unknown_resource"
    assert "plate_1" in unknown.error["hint"] and "plate_2" in unknown.error["hint"]
    assert _snapshot(setup) == before


def test_empty_reader_is_a_precondition() -> None:
    setup, _ = deck_rig(seed=5)
    setup.reader.unassign_child_resource(setup.plate)
    result = setup.lab().call(
        "reader_read_absorbance", {"plate": "plate_2", "wavelength": nm(450), "wells": []}
    )
    assert result.error["code"] == "precondition_failed"
    assert "lh_move_plate" in result.error["hint"]


def test_wavelengths_must_be_whole_nanometres() -> None:
    setup = rig(seed=6)
    lab = setup.lab()
    read(lab, 450, ["A1"])
    before = _snapshot(setup)
    result = lab.call(
        "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(450.5), "wells": []}
    )
    assert result.error["code"] == "out_of_range"
    assert result.error["field"] == "/wavelength"
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": ["A1"], "start": nm(400), "stop": nm(410), "step": nm(2.5)},
    )
    assert spectrum.error["code"] == "out_of_range" and spectrum.error["field"] == "/step"
    assert _snapshot(setup) == before


def test_same_seed_same_readings_and_another_seed_differs() -> None:
    def session(seed: int) -> list:
        setup = rig(seed=seed)
        setup.fill("A1", 200.0, tartrazine=80e-6)
        setup.fill("B1", 200.0, fluorescein=5e-9)
        setup.fill("C1", 100.0, glow_luciferase=1e-8)
        lab = setup.lab()
        out = [
            lab.call(
                "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(426), "wells": []}
            ).data
        ]
        out.append(
            lab.call(
                "reader_read_fluorescence",
                {
                    "gain": 0,
                    "focal_height": {"value": 0, "unit": "millimeter"},
                    "plate": "plate_1",
                    "wells": ["A1", "B1"],
                    "excitation_wavelength": nm(490),
                    "emission_wavelength": nm(515),
                },
            ).data
        )
        out.append(
            lab.call("reader_read_luminescence", {"plate": "plate_1", "wells": ["C1", "C2"]}).data
        )
        out.append(setup.world.clock.now())
        return out

    assert session(7) == session(7)
    assert session(7) != session(8)


def test_read_advances_the_virtual_clock_and_reports_plausible_temperature() -> None:
    setup = rig(seed=9)
    lab = setup.lab()
    start = setup.world.clock.now()
    read(lab, 450, ["A1"])
    few = setup.world.clock.now() - start
    read(lab, 450, [])
    many = setup.world.clock.now() - start - few
    assert 0 < few < many
    result = setup.backend.plate_truth(setup.plate)  # hidden per-plate optics exist
    assert result.well_offsets_od.shape == (96,)
    grid = lab.run(setup.reader.read_absorbance(450, use_new_return_type=True))
    assert 18.0 <= grid[0]["temperature"] <= 32.0


def test_works_on_plr_chatterbox_backend(capsys: pytest.CaptureFixture[str]) -> None:
    reader = PlateReader(
        name="reader", size_x=1, size_y=1, size_z=1, backend=PlateReaderChatterboxBackend()
    )
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    lab = Lab([PLRPlateReader("reader", reader)])
    values = read(lab, 450, ["A1", "H12"])
    assert values == {"A1": 0.0, "H12": 0.0}
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {"plate": "plate_1", "wells": ["A1"], "start": nm(400), "stop": nm(404), "step": nm(2)},
    )
    assert spectrum.ok and spectrum.data["values"]["A1"] == [0.0, 0.0, 0.0]
    assert lab.instruments["reader"].simulated


def test_chatterbox_384_failure_is_a_tool_error_not_a_crash() -> None:
    reader = PlateReader(
        name="reader", size_x=1, size_y=1, size_z=1, backend=PlateReaderChatterboxBackend()
    )
    reader.assign_child_resource(Greiner_384_wellplate_28ul_Fb(name="plate_1"))
    lab = Lab([PLRPlateReader("reader", reader)])
    result = lab.call(
        "reader_read_absorbance", {"plate": "plate_1", "wavelength": nm(450), "wells": []}
    )
    assert not result.ok and result.error["code"] == "instrument_error"


def test_state_and_schema_export_do_no_io() -> None:
    setup = rig(seed=10)
    driver = PLRPlateReader("reader", setup.reader)
    assert not setup.reader.setup_finished
    lab = Lab([driver])
    names = set(lab.tool_names())
    assert {"reader_read_absorbance", "reader_read_fluorescence"} <= names
    assert lab.state()["reader"] == {"plate": "plate_1", "backend": "PhysicsPlateReaderBackend"}
    assert not setup.reader.setup_finished


def test_driver_rejects_a_bad_focal_height() -> None:
    setup = rig(seed=11)
    with pytest.raises(ValueError):
        PLRPlateReader("reader", setup.reader, focal_height=-1.0)


def test_a_copied_deck_reads_the_same_world() -> None:
    """The plate layout cache follows plate identity, not just names."""
    setup = rig(seed=12)
    setup.fill("A1", 200.0, tartrazine=50e-6)
    lab = setup.lab()
    first = read(lab, 426, ["A1"])["A1"]
    replacement = copy.deepcopy(cor_96_wellplate_360uL_Fb(name="plate_1"))
    setup.reader.unassign_child_resource(setup.plate)
    setup.reader.assign_child_resource(replacement)
    second = read(lab, 426, ["A1"])["A1"]
    assert second == pytest.approx(first, abs=0.01)
