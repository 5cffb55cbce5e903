"""lab.call: validation order, structured errors, no state change on rejection, the journal."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from labtools import Lab, ToolError, ToolResult
from labtools.errors import ERROR_CODES, InvalidArguments, UnitError
from labtools.journal import Journal, read_journal

UL = {"value": 50, "unit": "microliter"}
NAN, INF = float("nan"), float("inf")


def ok(result: ToolResult) -> dict:
    assert result.ok, result.error
    return result.data


def err(result: ToolResult, code: str, field: str | None = None) -> dict:
    assert not result.ok, result.data
    assert result.error["code"] == code, result.error
    assert result.error["code"] in ERROR_CODES
    if field is not None:
        assert result.error["field"] == field, result.error
    return result.error


def test_a_good_call_acts_and_returns_json_with_units(lab: Lab) -> None:
    ok(lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]}))
    data = ok(
        lab.call("lh_aspirate", {"items": [{"channel": 0, "well": "stock:A1", "volume": UL}]})
    )
    assert data["items"][0]["volume"] == {"value": 50.0, "unit": "microliter"}
    assert data["items"][0]["well_volume"] == {"value": 4950.0, "unit": "microliter"}
    json.dumps(data)


@pytest.mark.parametrize(
    ("arguments", "code", "field"),
    [
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 50, "unit": "Microliter"}},
            "unit_error",
            "/volume/unit",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 50, "unit": "uL"}},
            "unit_error",
            "/volume/unit",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 50, "unit": "nanometer"}},
            "unit_error",
            "/volume/unit",
        ),
        ({"channel": 0, "well": "stock:A1", "volume": 50}, "unit_error", "/volume"),
        ({"channel": 0, "well": "stock:A1", "volume": "50 uL"}, "unit_error", "/volume"),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": "50", "unit": "microliter"}},
            "invalid_arguments",
            "/volume/value",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 50}},
            "invalid_arguments",
            "/volume/unit",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {**UL, "x": 1}},
            "invalid_arguments",
            "/volume/x",
        ),
        ({"channel": "0", "well": "stock:A1", "volume": UL}, "invalid_arguments", "/channel"),
        ({"channel": 0.5, "well": "stock:A1", "volume": UL}, "invalid_arguments", "/channel"),
        ({"channel": True, "well": "stock:A1", "volume": UL}, "invalid_arguments", "/channel"),
        ({"channel": 0, "well": "stock:A1"}, "invalid_arguments", "/volume"),
        (
            {"channel": 0, "well": "stock:A1", "volume": UL, "speed": 3},
            "invalid_arguments",
            "/speed",
        ),
        ({"channel": 0, "wel": "stock:A1", "volume": UL}, "invalid_arguments", "/wel"),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": NAN, "unit": "microliter"}},
            "invalid_arguments",
            "/volume/value",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": INF, "unit": "microliter"}},
            "invalid_arguments",
            "/volume/value",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 10**400, "unit": "microliter"}},
            "invalid_arguments",
            "/volume/value",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": 5, "unit": "milliliter"}},
            "out_of_range",
            "/volume",
        ),
        (
            {"channel": 0, "well": "stock:A1", "volume": {"value": -1, "unit": "microliter"}},
            "out_of_range",
            "/volume",
        ),
        ({"channel": 7, "well": "stock:A1", "volume": UL}, "out_of_range", "/channel"),
        ({"channel": 0, "well": "nowhere:Z9", "volume": UL}, "unknown_resource", "/well"),
        ({"channel": 1, "well": "stock:A1", "volume": UL}, "precondition_failed", "/channel"),
        ([], "invalid_arguments", ""),
        ('{"channel": 0}', "invalid_arguments", ""),
        (None, "invalid_arguments", ""),
    ],
)
def test_bad_arguments_get_a_structured_error_and_change_nothing(
    lab: Lab, arguments: object, code: str, field: str
) -> None:
    ok(lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]}))
    before = lab.state()
    if isinstance(arguments, dict):  # one channel's item: its pointers are inside items/0
        arguments, field = {"items": [arguments]}, "/items/0" + field
    error = err(lab.call("lh_aspirate", arguments), code, field)
    assert error["message"] and isinstance(error["message"], str)
    assert lab.state() == before


def test_out_of_range_hints_the_range_in_the_callers_unit(lab: Lab) -> None:
    ok(lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]}))
    error = err(
        lab.call(
            "lh_aspirate",
            {
                "items": [
                    {"channel": 0, "well": "stock:A1", "volume": {"value": 5, "unit": "milliliter"}}
                ]
            },
        ),
        "out_of_range",
        "/items/0/volume",
    )
    assert error["hint"] == "allowed: 0.001–0.2 milliliter"


def test_a_batch_with_two_bad_items_names_the_first_argument_checked_in_order(lab: Lab) -> None:
    """Each nested argument is checked across all items before the next: the channels, then
    the volumes — so a too-large channel in item 1 is named before a negative volume in item 0,
    and the other way round with the channels fine."""
    ok(lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0, 1]}))
    before = lab.state()
    negative = {"channel": 0, "well": "stock:A1", "volume": {"value": -5, "unit": "microliter"}}
    huge = {"channel": 10**400, "well": "stock:A1", "volume": UL}
    error = err(lab.call("lh_aspirate", {"items": [negative, huge]}), "invalid_arguments")
    assert error["field"] == "/items/1/channel"
    assert "too large" in error["message"]
    fine = {**huge, "channel": 1, "volume": {"value": -1, "unit": "milliliter"}}
    error = err(lab.call("lh_aspirate", {"items": [fine, negative]}), "out_of_range")
    assert error["field"] == "/items/0/volume"
    assert error["message"] == "items.0.volume -1 milliliter is outside the allowed range"
    assert lab.state() == before


def test_binding_converts_every_nested_value_and_leaves_the_arguments_as_given(lab: Lab) -> None:
    from labtools.units import Quantity

    spec = lab.tool_spec("lh_aspirate")
    items = [
        {"channel": 1.0, "well": "stock:A1", "volume": {"value": 0.05, "unit": "milliliter"}},
        {"channel": 0, "well": "plate_1:A1", "volume": {"value": 20, "unit": "microliter"}},
    ]
    given = json.loads(json.dumps({"items": items}))
    bound = spec.bind(given)
    assert given == {"items": items}  # untouched
    assert bound == {
        "items": [
            {"channel": 1, "well": "stock:A1", "volume": Quantity(0.05, "milliliter")},
            {"channel": 0, "well": "plate_1:A1", "volume": Quantity(20, "microliter")},
        ]
    }
    assert [type(item["channel"]) for item in bound["items"]] == [int, int]


def test_unit_enum_errors_suggest_the_right_spelling(lab: Lab) -> None:
    error = err(
        lab.call(
            "lh_aspirate",
            {
                "items": [
                    {"channel": 0, "well": "stock:A1", "volume": {"value": 5, "unit": "Microliter"}}
                ]
            },
        ),
        "unit_error",
    )
    assert "did you mean 'microliter'" in error["hint"]


def test_misspelled_argument_suggests_the_real_one(lab: Lab) -> None:
    error = err(
        lab.call("lh_aspirate", {"items": [{"channel": 0, "wel": "stock:A1", "volume": UL}]}),
        "invalid_arguments",
        "/items/0/wel",
    )
    assert "did you mean 'well'" in error["hint"]


def test_unknown_tool_suggests_close_names(lab: Lab) -> None:
    error = err(lab.call("lh_aspirat", {}), "unknown_tool")
    assert "lh_aspirate" in error["hint"]
    err(lab.call(42, {}), "unknown_tool")  # type: ignore[arg-type]


def test_an_interlock_from_the_instrument_changes_nothing(lab: Lab) -> None:
    ok(lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]}))
    before = lab.state()
    err(
        lab.call("lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": UL}]}),
        "interlock",
        "/items/0/volume",
    )
    assert lab.state() == before


def test_python_proxy_accepts_strings_and_quantities_and_raises_typed_errors(lab: Lab) -> None:
    from labtools.units import Quantity

    lab.lh.pick_up_tips("tips", [0])

    def one(volume: object) -> list[dict[str, object]]:
        return [{"channel": 0, "well": "plate_1:A1", "volume": volume}]

    drawn = lab.lh.aspirate([{"channel": 0, "well": "stock:A1", "volume": "0.05 mL"}])
    assert drawn["items"][0]["volume"] == {"value": 50.0, "unit": "microliter"}
    logged = lab.journal.events()[-1]["arguments"]["items"][0]["volume"]
    assert logged == {"value": 0.05, "unit": "milliliter"}
    lab.lh.dispense(items=one(Quantity(20, "microliter")))
    with pytest.raises(UnitError):
        lab.lh.dispense(one(20))
    with pytest.raises(InvalidArguments):
        lab.lh.dispense(one("20 uL"), speed=3)
    with pytest.raises(ToolError) as caught:
        lab.lh.dispense(one("2 mL"))
    assert caught.value.code == "out_of_range"
    lab.lh.move_plate("plate_1", "reader")
    reading = lab.reader.read_absorbance(plate="plate_1", wavelength="600 nm")
    assert len(reading["values"]) == 96  # default: the whole plate
    assert reading["values"]["A1"] == pytest.approx(0.02)


def test_python_path_and_json_path_give_the_same_journal_arguments(lab: Lab) -> None:
    lab.lh.move_plate("plate_1", "reader")
    lab.reader.read_absorbance("plate_1", "0.6 um", ["A1"])
    event = lab.journal.events()[-1]
    assert event["arguments"] == {
        "plate": "plate_1",
        "wavelength": {"value": 0.6, "unit": "micrometer"},
        "wells": ["A1"],
    }


def test_acall_and_call_inside_a_running_loop(lab: Lab) -> None:
    async def main() -> tuple[ToolResult, ToolResult]:
        first = await lab.acall("lh_get_deck", {})
        second = lab.call("lh_get_deck", {})  # sync call from inside a loop: helper thread
        return first, second

    first, second = asyncio.run(main())
    assert first.ok and second.ok and first.data == second.data


def test_every_call_is_journaled_one_line_each(tmp_path) -> None:
    from fakes import fake_lab

    path = tmp_path / "journal.jsonl"
    with fake_lab(journal=path) as lab:
        lab.call("lh_get_deck", {})
        lab.call("lh_aspirate", {"channel": "x"})
        lab.call("nope", {"a": float("nan")})
        lab.call("lh_get_deck", {"deep": [[[[[]]]]] * 3})
        lines = path.read_text().splitlines()
        assert len(lines) == 4  # flushed per line, readable while the lab is open
    events = read_journal(path)
    assert [e["ok"] for e in events] == [True, False, False, False]
    assert [e["seq"] for e in events] == [1, 2, 3, 4]
    assert events[1]["error"]["code"] == "invalid_arguments"
    assert events[2]["tool"] == "nope"
    assert {"time", "wall_s", "arguments", "tool"} <= set(events[0])


def test_journal_survives_arguments_json_cannot_walk() -> None:
    journal = Journal()
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    journal.record({"tool": "x", "arguments": deep})
    journal.record({"tool": "y", "arguments": {1, 2}})
    assert journal.count == 2


def test_deeply_nested_arguments_are_rejected_not_raised(lab: Lab) -> None:
    deep: list = []
    for _ in range(20_000):
        deep = [deep]
    err(
        lab.call("lh_aspirate", {"items": [{"channel": 0, "well": deep, "volume": UL}]}),
        "invalid_arguments",
        "/items/0/well",
    )
    err(lab.call("lh_aspirate", deep), "invalid_arguments")


def test_huge_arrays_are_refused_cleanly(lab: Lab) -> None:
    lab.lh.move_plate("plate_1", "reader")
    wells = ["A1"] * 100_000 + ["Z99"]
    err(
        lab.call(
            "reader_read_absorbance",
            {"plate": "plate_1", "wells": wells, "wavelength": {"value": 600, "unit": "nanometer"}},
        ),
        "unknown_resource",
        "/wells/100000",
    )


def test_instrument_names_may_not_shadow_lab_attributes() -> None:
    from fakes import FakeSpectrometer

    with pytest.raises(ValueError, match="may not be named"):
        Lab([FakeSpectrometer(name="state")])


def test_data_handles_return_the_full_spectrum(lab: Lab) -> None:
    lab.spec.set_integration_time("20 ms")
    lab.spec.acquire_dark(1)
    lab.spec.acquire_reference(1)
    result = lab.spec.acquire_spectrum(2)
    full = lab.data(result["data"])
    assert len(full["counts"]) == 512 and len(full["wavelengths_nm"]) == 512
    with pytest.raises(ToolError) as caught:
        lab.data("spec/999")
    assert caught.value.code == "unknown_resource"


# -- no input breaks a call (reproducers) ------------------------------------------------------
@pytest.fixture(scope="module")
def virtual_lab():
    with Lab.virtual(seed=0) as lab:
        yield lab


def test_a_non_string_key_is_invalid_arguments_on_every_tool(virtual_lab: Lab) -> None:
    # was instrument_error, from a TypeError while wording the error (difflib on an int)
    for name in virtual_lab.tool_names():
        for arguments, field in (({1: 2}, "/1"), ({None: 0, "x": 1}, "/null"), ({(1,): 2}, None)):
            before = virtual_lab.state()
            error = err(virtual_lab.call(name, arguments), "invalid_arguments")
            assert "keys must be strings" in error["message"], (name, error)
            assert error["hint"]
            if field is not None:
                assert error["field"] == field, (name, error)
            assert virtual_lab.state() == before


def test_a_non_string_key_deep_inside_is_found_with_its_pointer(virtual_lab: Lab) -> None:
    arguments = {"plate": "plate_1", "wells": ["A1", {2.5: "x"}], "wavelength": UL}
    error = err(virtual_lab.call("reader_read_absorbance", arguments), "invalid_arguments")
    assert error["field"] == "/wells/1/2.5"
    assert "a number 2.5" in error["message"]


def test_a_limit_in_another_unit_is_met_at_its_boundary(virtual_lab: Lab) -> None:
    # 0.23 µm is 229.99999999999997 nm in floating point: was refused against 230 nm
    spec = virtual_lab.tool_spec("reader_read_absorbance")
    args = {"plate": "plate_1", "wells": ["A1"]}
    edge = spec.bind({**args, "wavelength": {"value": 0.23, "unit": "micrometer"}})
    assert edge["wavelength"].m_as("nanometer") == pytest.approx(230)
    spec.bind({**args, "wavelength": {"value": 1, "unit": "micrometer"}})
    with pytest.raises(ToolError) as below:
        spec.bind({**args, "wavelength": {"value": 0.2299999, "unit": "micrometer"}})
    assert below.value.code == "out_of_range"
    assert below.value.hint == "allowed: 0.23–1 micrometer"
    with Lab.virtual(seed=0) as lab:
        lab.lh.move_plate("plate_1", "reader")
        wavelength = {"value": 0.23, "unit": "micrometer"}
        data = ok(lab.call("reader_read_absorbance", {**args, "wavelength": wavelength}))
        assert set(data["values"]) == {"A1"}


def test_caller_input_is_echoed_brief_never_whole(virtual_lab: Lab) -> None:
    huge = "A" * (1 << 20)
    cases = [
        ("lh_get_deck", {huge: 1}),
        (
            "lh_aspirate",
            {
                "items": [
                    {"channel": 0, "well": "reservoir:A1", "volume": {"value": 1, "unit": huge}}
                ]
            },
        ),
        ("lh_aspirate", {"items": [{"channel": huge, "well": "reservoir:A1", "volume": UL}]}),
        ("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": huge}]}),
        ("lh_aspirate", {"items": [{"channel": 0, "well": f"reservoir:{huge}", "volume": UL}]}),
        ("spec_acquire_dark", {"scans": 10**400}),
        ("lh_get_deck", {"x" * 10_000: [huge]}),
    ]
    for name, arguments in cases:
        error = virtual_lab.call(name, arguments).error
        assert error is not None and error["code"] != "instrument_error", error
        assert len(error["message"]) + len(error["hint"] or "") < 500, (name, error["message"])
        assert len(error["field"] or "") <= 200


def test_a_huge_integer_is_refused_not_overflowed(virtual_lab: Lab) -> None:
    error = err(virtual_lab.call("spec_acquire_dark", {"scans": 10**400}), "invalid_arguments")
    assert error["field"] == "/scans" and "too large" in error["message"]
    volume = {"value": -(10**400), "unit": "microliter"}
    args = {"items": [{"channel": 0, "well": "reservoir:A1", "volume": volume}]}
    err(virtual_lab.call("lh_aspirate", args), "invalid_arguments", "/items/0/volume/value")


def test_journal_lines_are_strict_json(tmp_path) -> None:
    path = tmp_path / "journal.jsonl"
    with Lab.virtual(seed=0, journal=path) as lab:
        for value in (NAN, INF, -INF, 10**400, 10**5000):
            lab.call(
                "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": value}]}
            )
        lab.call("lh_get_deck", {(1, 2): 3, 4: NAN})
    lines = path.read_text().splitlines()
    assert len(lines) == 6

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in a journal line")

    events = [json.loads(line, parse_constant=refuse) for line in lines]
    assert (
        events[0]["arguments"]["items"][0]["volume"] == "NaN"
    )  # strict JSON cannot hold NaN: as text
    assert events[3]["arguments"]["items"][0]["volume"] == 10**400  # a big int is JSON
    assert events[4]["arguments"]["items"][0]["volume"] == "<int too large to print>"
    assert events[5]["arguments"] == {"[1,2]": 3, "4": "NaN"}  # keys JSON cannot hold, as text


def test_every_error_code_is_declared_once() -> None:
    from labtools import errors

    classes = {cls.code: cls for cls in errors.ToolError.__subclasses__()}
    assert set(classes) == ERROR_CODES == set(errors._BY_CODE)
    for code, cls in classes.items():
        rebuilt = ToolError.of(code, "m", field="/f", hint="h")
        assert type(rebuilt) is cls and rebuilt.to_dict()["code"] == code
    with pytest.raises(TypeError, match="not one of ErrorCode"):
        type("Bogus", (ToolError,), {"code": "bogus"})
    with pytest.raises(TypeError, match="share a code"):
        type("Twice", (ToolError,), {"code": "busy"})


def test_an_argument_sent_to_a_tool_that_takes_none_says_so() -> None:
    with Lab.virtual(seed=0) as virtual:
        error = virtual.call("lh_get_deck", {"plate": "plate_1"}).error
    assert error == {
        "code": "invalid_arguments",
        "message": "unknown argument 'plate'",
        "field": "/plate",
        "hint": "this tool takes no arguments: send {}",
    }


def _method(lab: Lab, spec: object) -> object:
    return getattr(getattr(lab, spec.instrument), spec.method)  # type: ignore[attr-defined]


def test_proxy_methods_carry_each_tools_signature_and_docstring(virtual_lab: Lab) -> None:
    import inspect

    from labtools.units import DIMENSIONS

    aliases = {"volume": "Volume", "wavelength": "Wavelength", "duration": "Duration"}
    aliases |= {"temperature": "Temperature", "length": "Length"}
    seen_quantity = 0
    for spec in virtual_lab.tool_specs():
        method = _method(virtual_lab, spec)
        signature = inspect.signature(method)
        assert method.__name__ == spec.method
        assert method.__doc__.startswith(spec.description)
        assert list(signature.parameters) == [p.name for p in spec.params]
        for param, shown in zip(spec.params, signature.parameters.values(), strict=True):
            assert shown.default is param.default
            assert f"    {param.name}: {param.description}" in method.__doc__
            if param.dimension is not None:
                assert param.dimension in DIMENSIONS.values()
                assert shown.annotation == f"{aliases[param.dimension.name]} | str"
                seen_quantity += 1
    assert seen_quantity >= 10


def _one_line(text: str) -> str:
    """``text`` with its white space folded, as Python 3.11's pydoc prints a signature (3.13's
    puts a long one a parameter a line)."""
    return re.sub(r"\(\s+", "(", re.sub(r",?\s+\)", ")", " ".join(text.split())))


def test_help_shows_argument_names_kinds_units_and_defaults(virtual_lab: Lab) -> None:
    import pydoc

    text = pydoc.render_doc(virtual_lab.lh.transfer, renderer=pydoc.plaintext)
    signature = _one_line(text)
    assert (
        "transfer(transfers: 'Sequence[Transfer]', tip_rack: 'str', "
        "tips: \"Literal['new', 'per_source', 'reuse', 'mounted']\" = 'new', "
        "channels: 'Sequence[int]' = (), mix_cycles: 'int' = 0, "
        "mix_volume: 'Volume | str' = {'value': 0.0, 'unit': 'microliter'}) -> 'TransferDone'"
    ) in signature
    assert "Keys: source (str), destination (str), volume (Volume | str)." in text
    assert "Allowed: 0–1000 microliter." in text
    reading = pydoc.render_doc(virtual_lab.reader.read_absorbance, renderer=pydoc.plaintext)
    assert "read_absorbance(plate: 'str', wavelength: 'Wavelength | str', wells:" in _one_line(
        reading
    )
    assert "a string such as '50 nanometer'" in reading


def test_the_signatures_defaults_are_the_ones_a_call_gets(virtual_lab: Lab) -> None:
    import inspect

    transfers = [{"source": "reservoir:A1", "destination": "plate_1:A1", "volume": "20 uL"}]
    bound = inspect.signature(virtual_lab.lh.transfer).bind(transfers, "tips_300ul")
    bound.apply_defaults()
    virtual_lab.lh.transfer(*bound.args, **bound.kwargs)
    virtual_lab.lh.transfer(transfers, "tips_300ul")
    first, second = (e["arguments"] for e in virtual_lab.journal.events()[-2:])
    assert first == second and first["mix_volume"] == {"value": 0.0, "unit": "microliter"}
    with pytest.raises(TypeError):  # the signature refuses what the call refuses
        inspect.signature(virtual_lab.lh.transfer).bind(transfers, "tips_300ul", speed=3)


def test_dir_lists_the_tools_for_completion(virtual_lab: Lab) -> None:
    for name in ("lh", "reader", "spec"):
        methods = sorted(s.method for s in virtual_lab.tool_specs() if s.instrument == name)
        assert sorted(dir(getattr(virtual_lab, name))) == sorted([*methods, "instrument"])
    assert "transfer" in dir(virtual_lab.lh) and "read_absorbance" in dir(virtual_lab.reader)
    with pytest.raises(AttributeError, match="lh has no tool 'transfers'"):
        virtual_lab.lh.transfers  # noqa: B018
    assert not hasattr(virtual_lab.lh, "__wrapped__")  # dunder lookups are not tools
    import copy

    assert copy.copy(virtual_lab.lh).get_deck.__name__ == "get_deck"  # no lookup loop
