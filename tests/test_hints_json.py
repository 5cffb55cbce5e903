"""What a model reads in a refusal is JSON where it shows a value: hints and echoed input write
objects, arrays, ``null`` and booleans as JSON, never as Python's ``repr``."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import VIRTUAL_LAB_TOOLS, llm_arguments

from labtools import Lab
from labtools.errors import brief
from labtools.session import Session
from labtools.session.registry import task_ids
from labtools.units import DIMENSIONS

#: what only Python writes: a quoted key after ``{`` or ``,``, a list or dict of quoted strings,
#: ``True``/``False``/``None``
PYTHON_ONLY = re.compile(r"[{,]\s*'[^']*'\s*:|\['|\{'|\b(True|False|None)\b")
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def lab():
    with Lab.virtual(seed=0) as instance:
        yield instance


@pytest.fixture(scope="module")
def sessions():
    opened = {task: Session(task, secret="hints-json") for task in task_ids()}
    yield opened
    for session in opened.values():
        session.close()


def _check_hint(error: dict | None) -> None:
    if error is None:
        return
    hint = error["hint"] or ""
    assert not PYTHON_ONLY.search(hint), error


@pytest.mark.parametrize("tool", VIRTUAL_LAB_TOOLS)
@SETTINGS
@given(data=st.data())
def test_no_hint_of_a_lab_tool_holds_a_python_literal(lab: Lab, tool: str, data) -> None:
    arguments = data.draw(llm_arguments(lab.tool_spec(tool).input_schema))
    _check_hint(lab.call(tool, arguments).error)


@pytest.mark.parametrize("task", task_ids())
@SETTINGS
@given(data=st.data())
def test_no_hint_of_a_submit_tool_holds_a_python_literal(sessions, task: str, data) -> None:
    session = sessions[task]
    tool = f"submit_{task}"
    session.reset(0)
    arguments = data.draw(llm_arguments(session.lab.tool_spec(tool).input_schema))
    _check_hint(session.call_tool(tool, arguments).error)


def test_the_pattern_finds_what_python_writes() -> None:
    for text in ("e.g. {'channel': 0}", "['A1', 'B1']", "not None", "a boolean True"):
        assert PYTHON_ONLY.search(text), text
    for text in ('e.g. {"channel":0}', '["A1", "B1"]', "'new': a new tip", "'plate_1'"):
        assert not PYTHON_ONLY.search(text), text


@pytest.mark.parametrize("dimension", sorted(DIMENSIONS))
def test_a_quantity_hint_shows_the_json_to_send(dimension: str) -> None:
    dim = DIMENSIONS[dimension]
    shown = re.search(r"as (\{.*?\});", dim.hint()).group(1)
    assert json.loads(shown) == {"value": 50, "unit": dim.canonical}
    for odd in (float("nan"), float("inf"), 10**400):  # never an example JSON cannot hold
        json.loads(re.search(r"as (\{.*?\});", dim.hint(example=odd)).group(1))
    assert json.loads(re.search(r"as (\{.*?\});", dim.hint(example=2.5)).group(1))["value"] == 2.5


def test_echoed_objects_arrays_null_and_booleans_read_as_json(lab: Lab) -> None:
    assert brief({"value": None, "unit": [True, "nm"]}) == '{"value":null,"unit":[true,"nm"]}'
    assert brief(None) == "null" and brief(False) == "false"
    assert brief("A1") == "'A1'" and brief(1e20) == "1e+20"  # strings and numbers as before
    assert brief({"a": {1, 2}}) == "{'a': {1, 2}}"  # JSON cannot hold a set: Python's words
    error = lab.call("reader_read_absorbance", {None: 1}).error
    assert error["message"] == "object keys must be strings, not null"
    assert error["hint"] == 'JSON object keys are strings: name each argument, e.g. {"channel":0}'
    assert lab.call("lh_get_deck", {True: 1}).error["field"] == "/true"
    wrong = {"plate": "plate_1", "wavelength": {"value": 1, "unit": {"nm": None}}, "wells": []}
    error = lab.call("reader_read_absorbance", wrong).error
    assert error["message"] == '{"nm":null} is not a wavelength unit here'
    error = lab.call("lh_get_deck", {"x": [None]}).error
    assert error["message"] == "unknown argument 'x'"
    error = lab.call("reader_set_temperature", {"temperature": [False, 1.0], "wait": False}).error
    assert error["message"] == "'temperature' must be an object, not an array"
