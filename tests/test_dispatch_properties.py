"""Property tests: whatever JSON arrives, lab.call answers with a structured result.

- no exception escapes ``lab.call``;
- every rejection has a code from the closed set, a message, and a field where one applies, and
  none is an ``instrument_error`` (the driver never sees input it cannot handle);
- ``lab.state()`` is identical before and after each rejected call;
- the dispatcher's schema check accepts exactly what jsonschema accepts on the exported schema;
- an integral number where an integer is declared (``2.0``, which JSON Schema counts an integer)
  reaches the instrument as that exact ``int``, nested ones too, and binds as the integer does.
"""

from __future__ import annotations

import copy

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    VIRTUAL_LAB_TOOLS,
    conforming,
    integer_paths,
    integers_as_floats,
    json_values,
    mutated,
)

from labtools.errors import ERROR_CODES, ToolError

SCHEMA_CODES = {"invalid_arguments", "unit_error"}
ARGUMENT_CODES = SCHEMA_CODES | {"out_of_range"}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


#: the labs the properties hold on: the test-only lab, and the default virtual lab (real
#: drivers over physics backends)
LABS = ["fake", "virtual"]
#: every tool of each lab (the test-only lab has no balance)
CASES = [
    pytest.param(kind, tool, id=f"{kind}-{tool}")
    for kind in LABS
    for tool in VIRTUAL_LAB_TOOLS
    if kind == "virtual" or not tool.startswith("balance_")
]


@pytest.fixture(scope="module")
def module_lab(request):
    """The lab named by the test's ``module_lab`` parameter (one of :data:`LABS`)."""
    from fakes import fake_lab

    from labtools import Lab

    with fake_lab() if request.param == "fake" else Lab.virtual(seed=0) as lab:
        yield lab


def check_call(lab, name: str, arguments: object) -> None:
    before = lab.state()
    sent = copy.deepcopy(arguments)
    result = lab.call(name, arguments)
    assert result.ok == (result.error is None)
    if result.ok:
        return
    error = result.error
    assert error["code"] in ERROR_CODES
    assert error["code"] != "instrument_error", f"{name}: bad input reached the driver: {error}"
    assert isinstance(error["message"], str) and error["message"]
    if error["code"] in ARGUMENT_CODES:
        assert isinstance(error["field"], str), error
    assert lab.state() == before, f"rejected {name} changed state: {error}"
    assert arguments == sent or arguments != arguments, "the call must not modify its arguments"


@pytest.mark.parametrize(("module_lab", "tool"), CASES, indirect=["module_lab"])
class TestEveryTool:
    @SETTINGS
    @given(data=st.data())
    def test_arbitrary_json_never_raises(self, module_lab, tool: str, data) -> None:
        arguments = data.draw(json_values)
        check_call(module_lab, tool, arguments)

    @SETTINGS
    @given(data=st.data())
    def test_near_valid_arguments_never_raise(self, module_lab, tool: str, data) -> None:
        schema = module_lab.tool_spec(tool).input_schema
        check_call(module_lab, tool, data.draw(mutated(schema)))

    @SETTINGS
    @given(data=st.data())
    def test_schema_check_agrees_with_jsonschema(self, module_lab, tool: str, data) -> None:
        spec = module_lab.tool_spec(tool)
        validator = jsonschema.Draft202012Validator(spec.input_schema)
        arguments = data.draw(
            st.one_of(json_values, mutated(spec.input_schema), conforming(spec.input_schema))
        )
        expected = validator.is_valid(arguments)
        assert spec.accepts(arguments) == expected
        if not expected:
            result = module_lab.call(tool, arguments)
            assert not result.ok and result.error["code"] in SCHEMA_CODES, result

    @SETTINGS
    @given(data=st.data())
    def test_conforming_arguments_pass_the_schema_stage(self, module_lab, tool: str, data) -> None:
        spec = module_lab.tool_spec(tool)
        arguments = data.draw(conforming(spec.input_schema))
        jsonschema.validate(arguments, spec.input_schema)
        try:
            spec.bind(arguments)
        except ToolError as error:  # only the limits stage may refuse schema-valid arguments
            assert error.code == "out_of_range" or error.message.endswith("not a finite number")


#: the virtual lab's tools that declare integers (channels, cycles, reads, scans, a PMT gain,
#: a data window)
INTEGER_TOOLS = [
    "lh_pick_up_tips",
    "lh_drop_tips",
    "lh_aspirate",
    "lh_dispense",
    "lh_transfer",
    "lh_mix",
    "reader_read_absorbance_kinetic",
    "reader_get_data",
    "reader_read_fluorescence",
    "spec_acquire_dark",
    "spec_acquire_reference",
    "spec_acquire_spectrum",
    "spec_measure_absorbance",
]


@pytest.mark.parametrize("module_lab", LABS, indirect=True)
def test_integer_tools_are_those_declaring_integers(module_lab) -> None:
    declaring = [
        name
        for name in module_lab.tool_names()
        if integer_paths(module_lab.tool_spec(name).input_schema)
    ]
    assert declaring == INTEGER_TOOLS


def _bound_at(value: object, path: tuple) -> list[object]:
    """The bound values at an :func:`integer_paths` path (every item for ``None``)."""
    if not path:
        return [value]
    key, rest = path[0], path[1:]
    if key is None:
        return [v for item in value for v in _bound_at(item, rest)]  # type: ignore[attr-defined]
    return _bound_at(value[key], rest) if isinstance(value, dict) and key in value else []


@pytest.mark.parametrize("module_lab", LABS, indirect=True)
@pytest.mark.parametrize("tool", INTEGER_TOOLS)
@SETTINGS
@given(data=st.data())
def test_integral_numbers_bind_to_exact_integers(module_lab, tool: str, data) -> None:
    spec = module_lab.tool_spec(tool)
    arguments = data.draw(conforming(spec.input_schema))
    floated = integers_as_floats(spec.input_schema, arguments)
    assert spec.accepts(floated)
    try:
        expected = spec.bind(arguments)
    except ToolError as error:
        with pytest.raises(ToolError) as caught:
            spec.bind(floated)
        assert (caught.value.code, caught.value.field) == (error.code, error.field)
        return
    bound = spec.bind(floated)
    assert bound == expected
    for path in integer_paths(spec.input_schema):
        for value in _bound_at(bound, path):
            assert type(value) is int, (path, value)


def test_an_integral_channel_in_a_batch_is_that_channel() -> None:
    """``{"channel": 2.0}`` among other items once passed the schema and failed in the backend
    (``instrument_error``) after the other channels had moved; it is channel 2."""
    from labtools import Lab

    with Lab.virtual(seed=0) as lab:
        assert lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0.0, 2.0]}).ok
        items = [
            {"channel": ch, "well": "reservoir:A1", "volume": {"value": 20, "unit": "microliter"}}
            for ch in (0, 2.0)
        ]
        for tool, extra in (("lh_aspirate", {}), ("lh_mix", {"cycles": 2.0}), ("lh_dispense", {})):
            result = lab.call(tool, {"items": items, **extra})
            assert result.ok, result.error
            assert [type(it["channel"]) for it in result.data["items"]] == [int, int]
        channels = lab.state()["lh"]["channels"]
        assert [c["tip"] is not None for c in channels[:3]] == [True, False, True]
        backend = lab.instruments["lh"].plr.backend
        assert backend.tip_contents(2).volume_ul < 1.0  # only the film: it dispensed what it drew
