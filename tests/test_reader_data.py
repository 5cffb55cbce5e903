"""reader_get_data: windows of a kept spectrum or kinetic read, the values a result too large to
hold inline gives only as a handle; every window is the kept read's own numbers, and a window
the read cannot give is refused, naming the argument, with nothing changed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labtools import Lab

ROWS = "ABCDEFGH"


def _nm(value: float) -> dict[str, object]:
    return {"value": value, "unit": "nanometer"}


@pytest.fixture(scope="module")
def lab():
    with Lab.virtual(seed=3) as lab:
        assert lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).ok
        yield lab


def _kinetic(lab: Lab, reads: int) -> dict:
    result = lab.call(
        "reader_read_absorbance_kinetic",
        {
            "plate": "plate_1",
            "wells": [],
            "wavelength": _nm(405),
            "interval": {"value": 30, "unit": "second"},
            "reads": reads,
        },
    )
    assert result.ok, result.error
    return result.data


def test_windows_of_a_kinetic_read_too_large_to_inline_rebuild_it(lab: Lab) -> None:
    read = _kinetic(lab, 8)  # 96 wells x 8 reads = 768 values, over the 600 inline
    assert read["values"] == {} and read["times"] == []
    kept = lab.data(read["data"])
    rebuilt: dict[str, list] = {}
    for row in ROWS:  # 12 wells x 8 points = 96 values a call
        wells = [f"{row}{col}" for col in range(1, 13)]
        got = lab.call(
            "reader_get_data", {"data": read["data"], "wells": wells, "first": 0, "points": 8}
        )
        assert got.ok, got.error
        assert got.data["axis"] == "time" and got.data["axis_unit"] == "second"
        assert got.data["axis_values"] == kept["times_s"] and got.data["points"] == 8
        assert list(got.data["values"]) == wells
        rebuilt |= got.data["values"]
    assert rebuilt == kept["absorbance"] and len(rebuilt) == 96
    assert set(read["slopes"]) == set(rebuilt)


def test_a_window_of_an_inline_spectrum_is_what_the_result_showed(lab: Lab) -> None:
    spectrum = lab.call(
        "reader_read_absorbance_spectrum",
        {
            "plate": "plate_1",
            "wells": ["A1", "B2"],
            "start": _nm(400),
            "stop": _nm(600),
            "step": _nm(20),
        },
    )
    assert spectrum.ok, spectrum.error
    shown = spectrum.data
    got = lab.call(
        "reader_get_data", {"data": shown["data"], "wells": ["B2"], "first": 3, "points": 4}
    )
    assert got.ok, got.error
    assert got.data["axis"] == "wavelength" and got.data["axis_unit"] == "nanometer"
    assert got.data["axis_values"] == [460.0, 480.0, 500.0, 520.0] == shown["wavelengths"][3:7]
    assert got.data["values"] == {"B2": shown["values"]["B2"][3:7]}
    assert got.data["points"] == 11 and got.data["plate"] == "plate_1"


def _refusal(lab: Lab, arguments: dict) -> dict:
    reader = lab.instruments["reader"]
    before = (reader.data.snapshot(), lab.state())
    result = lab.call("reader_get_data", arguments)
    assert not result.ok
    assert (reader.data.snapshot(), lab.state()) == before
    return result.error


def test_windows_the_read_cannot_give_are_refused_by_argument(lab: Lab) -> None:
    handle = _kinetic(lab, 8)["data"]
    cases = [
        ({"data": "reader/999", "wells": [], "first": 0, "points": 1}, "unknown_resource", "/data"),
        ({"data": "spec/1", "wells": [], "first": 0, "points": 1}, "unknown_resource", "/data"),
        (
            {"data": handle, "wells": ["A1", "Z9"], "first": 0, "points": 1},
            "unknown_resource",
            "/wells/1",
        ),
        (
            {"data": handle, "wells": ["A1", "A1", "Z9"], "first": 0, "points": 1},
            "unknown_resource",
            "/wells/2",  # its place in the argument, a repeated well before it
        ),
        ({"data": handle, "wells": [], "first": 8, "points": 1}, "out_of_range", "/first"),
        ({"data": handle, "wells": ["A1"], "first": 6, "points": 3}, "out_of_range", "/points"),
        ({"data": handle, "wells": [], "first": 0, "points": 7}, "out_of_range", "/points"),
        ({"data": handle, "wells": [], "first": -1, "points": 1}, "out_of_range", "/first"),
        ({"data": handle, "wells": [], "first": 0, "points": 601}, "out_of_range", "/points"),
        ({"data": handle, "wells": [], "first": 0, "points": "2"}, "invalid_arguments", "/points"),
        ({"data": handle, "wells": [], "first": 0.5, "points": 1}, "invalid_arguments", "/first"),
        ({"data": handle, "wells": [], "first": 0, "points": 1, "x": 1}, "invalid_arguments", "/x"),
    ]
    for arguments, code, field in cases:
        error = _refusal(lab, arguments)
        assert (error["code"], error["field"]) == (code, field), (arguments, error)
        assert error["hint"]
    # the largest window a full plate can take is 6 points: 96 x 6 = 576 values
    error = _refusal(lab, {"data": handle, "wells": [], "first": 0, "points": 7})
    assert "at most 6 points of 96 wells" in error["hint"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.integers(-5, 20),
    points=st.integers(-2, 700),
    wells=st.lists(st.sampled_from(["A1", "H12", "C7", "I1", "A13", ""]), max_size=4),
)
def test_any_window_is_the_kept_slice_or_a_refusal_that_changes_nothing(
    lab: Lab, first: int, points: int, wells: list[str]
) -> None:
    reader = lab.instruments["reader"]
    handle = reader.data.handles()[-1] if reader.data.handles() else _kinetic(lab, 8)["data"]
    kept = lab.data(handle)
    before = reader.data.snapshot()
    result = lab.call(
        "reader_get_data", {"data": handle, "wells": wells, "first": first, "points": points}
    )
    assert reader.data.snapshot() == before
    chosen = list(dict.fromkeys(wells)) or list(kept["absorbance"])
    axis = kept.get("times_s", kept.get("wavelengths_nm"))
    fits = (
        all(w in kept["absorbance"] for w in chosen)
        and 0 <= first < len(axis)
        and 1 <= points <= len(axis) - first
        and points * len(chosen) <= 600
    )
    assert result.ok == fits, (result.error, first, points, wells)
    if fits:
        assert result.data["values"] == {
            w: kept["absorbance"][w][first : first + points] for w in chosen
        }
        assert result.data["axis_values"] == axis[first : first + points]
