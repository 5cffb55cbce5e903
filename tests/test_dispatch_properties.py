"""Property tests: whatever JSON arrives, lab.call answers with a structured result.

- no exception escapes ``lab.call``;
- every rejection has a code from the closed set, a message, and a field where one applies;
- ``lab.state()`` is identical before and after each rejected call;
- the dispatcher's schema check accepts exactly what jsonschema accepts on the exported schema.
"""

from __future__ import annotations

import copy

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import VIRTUAL_LAB_TOOLS, conforming, json_values, mutated

from labtools.errors import ERROR_CODES, ToolError

SCHEMA_CODES = {"invalid_arguments", "unit_error"}
ARGUMENT_CODES = SCHEMA_CODES | {"out_of_range"}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module", params=["fake", "virtual"])
def module_lab(request):
    """The test-only lab, and the default virtual lab (real drivers over physics backends)."""
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
    assert isinstance(error["message"], str) and error["message"]
    if error["code"] in ARGUMENT_CODES:
        assert isinstance(error["field"], str), error
    assert lab.state() == before, f"rejected {name} changed state: {error}"
    assert arguments == sent or arguments != arguments, "the call must not modify its arguments"


@pytest.mark.parametrize(
    "tool",
    VIRTUAL_LAB_TOOLS,
)
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
