"""No input breaks a call: every tool of the virtual lab and every task's submit tool, given what
an LLM (or a careless Python caller) sends — wrong units, unknown wells, extra fields, strings for
numbers, NaN and infinities, huge numbers, 400-digit integers, non-string keys, deep nesting, well
names with newlines or a megabyte long.

For every generated input:

- no exception escapes ``lab.call``, ``session.call_tool`` or ``session.score()``;
- nothing is an ``instrument_error`` (that code means a driver fault, never bad input);
- a refusal has a code, a message, a field and a hint, its message and hint short;
- a refused call changes nothing (``lab.state()`` before and after; no submission taken);
- every journal line is strict JSON (no ``NaN``/``Infinity``), and so is every reward.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import VIRTUAL_LAB_TOOLS as LAB_TOOLS
from strategies import deeply_nested, extreme_numbers, foreign_keys, llm_arguments, long_strings

from labtools import Lab
from labtools.errors import ERROR_CODES, ToolError
from labtools.journal import Journal
from labtools.result import ToolResult
from labtools.session import Session
from labtools.session.registry import task_ids

#: message + hint of a refusal, at most (an LLM reads them; caller input is echoed cut short)
SHORT = 500
ARGUMENT_CODES = {"invalid_arguments", "unit_error", "out_of_range"}
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

#: every task, and an instance of each family (their submit tools are built per instance)
TASKS = [
    *task_ids(),
    "quantify/3/tartrazine+sunset_yellow",
    "mixture/2/tartrazine+brilliant_blue+methylene_blue",
    "equilibrium/3/phenol_red+sunset_yellow+ph3-10",
    "hypothesis/2/tartrazine+brilliant_blue+methylene_blue",
    "identify/3/tartrazine+sunset_yellow+quinoline_yellow",
    "inhibition/3/alp+l_phenylalanine+sunset_yellow",
    "ic50/3/alp+levamisole+tartrazine",
    "kinetics/3/beta_gal+sunset_yellow",
    "activity/3/chymotrypsin+sunset_yellow",
    "arrhenius/3/chymotrypsin+29to41",
    "thermal/3/chymotrypsin+49C",
    "screen/3/2+sunset_yellow+p50",
    "pipette/3/channel3+tip10+10ul",
    "ph/3/phenol_red+sunset_yellow+ph4-10+acid",
    "isosbestic/3/bromothymol_blue+ph4-10",
    "target/3/sunset_yellow+brilliant_blue+peaks",
    "stability/3/tartrazine+sunset_yellow+quinoline_yellow",
    "fluorimetry/3/fluorescein+sunset_yellow",
    "range/3/tartrazine+200ul",
    "fluor_pka/3/pyranine+tartrazine+ph3-10",
    "detection_limit/3/tartrazine+shoulder+200ul",
    "cuvette/3/tartrazine",
    "luminescence/3/n4+edge+dec2",
    "wide_range/3/nadh+4+even+nad",
]


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not strict JSON")


def strict_json_lines(path: Path) -> list[dict[str, Any]]:
    """The journal's lines, each parsed as strict JSON (``NaN``/``Infinity`` refused)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line, parse_constant=_refuse_constant) for line in lines if line]


def check_refusal(result: ToolResult) -> None:
    assert result.ok == (result.error is None)
    if result.ok:
        return
    error = result.error
    assert set(error) == {"code", "message", "field", "hint"}, error
    assert error["code"] in ERROR_CODES
    assert error["code"] != "instrument_error", error
    assert isinstance(error["message"], str) and error["message"]
    assert error["field"] is None or isinstance(error["field"], str)
    assert len(error["field"] or "") <= SHORT, error["field"][:100]
    if error["code"] in ARGUMENT_CODES:
        assert isinstance(error["field"], str), error
        assert isinstance(error["hint"], str) and error["hint"], error
    assert len(error["message"]) + len(error["hint"] or "") <= SHORT, error


#: families answering with another family's submit tool (a concentration and its uncertainty)
BORROWED_SUBMIT = {"cuvette": "submit_quantify", "fluorimetry": "submit_quantify"}


@pytest.fixture(scope="module")
def virtual_lab():
    with Lab.virtual(seed=0) as lab:
        yield lab


@pytest.fixture(scope="module")
def sessions():
    opened = {task: Session(task, secret="no-input-breaks") for task in TASKS}
    yield opened
    for session in opened.values():
        session.close()


def test_the_tool_lists_cover_every_tool(virtual_lab, sessions) -> None:
    assert virtual_lab.tool_names() == LAB_TOOLS
    for task, session in sessions.items():
        # one submit tool: a task's own; a family's instances share their family's, or the
        # family whose question and answer it shares
        family = task.partition("/")[0]
        submit = BORROWED_SUBMIT.get(family, f"submit_{family}")
        assert [t for t in session.tool_names() if t.startswith("submit_")] == [submit]


def call_lab(lab: Lab, name: str, arguments: object, journal: Path) -> ToolResult:
    lab.journal = Journal(journal)
    before = lab.state()
    try:
        result = lab.call(name, arguments)
    finally:
        lab.journal.close()
    check_refusal(result)
    if not result.ok:
        assert lab.state() == before, f"refused {name} changed state: {result.error}"
    (event,) = strict_json_lines(journal)
    assert event["tool"] == name and event["ok"] == result.ok
    return result


@pytest.mark.parametrize("tool", LAB_TOOLS)
@SETTINGS
@given(data=st.data())
def test_no_input_breaks_a_lab_tool(virtual_lab, tmp_path, tool: str, data) -> None:
    arguments = data.draw(llm_arguments(virtual_lab.tool_spec(tool).input_schema))
    call_lab(virtual_lab, tool, arguments, tmp_path / "journal.jsonl")


@pytest.mark.parametrize("task", TASKS)
@SETTINGS
@given(data=st.data())
def test_no_input_breaks_a_submit_tool(sessions, tmp_path, task: str, data) -> None:
    session = sessions[task]
    tool = next(name for name in session.tool_names() if name.startswith("submit_"))
    arguments = data.draw(llm_arguments(session.lab.tool_spec(tool).input_schema))
    journal = tmp_path / "episode.jsonl"
    session.reset(0)
    session.lab.journal = Journal(journal)
    before = session.lab.state()
    try:
        result = session.call_tool(tool, arguments)
        reward = session.score()
    finally:
        session.lab.journal.close()
    check_refusal(result)
    assert session.terminated == result.ok
    if not result.ok:
        assert session.task.submission is None
        assert session.lab.state() == before, f"refused {tool} changed state: {result.error}"
    json.dumps(reward.as_dict(), allow_nan=False)
    assert 0.0 <= reward.total <= 1.0
    assert "unscorable" not in reward.components, reward.components  # every accepted one scores
    events = strict_json_lines(journal)
    assert events[0]["tool"] == tool
    if result.ok:
        assert events[-1]["event"] == "end"


@SETTINGS
@given(data=st.data())
def test_no_input_breaks_a_stated_hypothesis_or_its_verdict(sessions, data) -> None:
    """The hypothesis family's two tools: a refused claim leaves the stated one and the world
    as they were; with a claim stated, its verdict is refused or ends the episode, as any
    submission."""
    session = sessions[next(t for t in TASKS if t.startswith("hypothesis/"))]
    session.reset(0)
    session.call_tool("state_hypothesis", {"claim": "at least 2 present"}).unwrap()
    before, stated = session.lab.state(), "at least 2 present"
    for tool in ("state_hypothesis", "submit_hypothesis"):
        arguments = data.draw(llm_arguments(session.lab.tool_spec(tool).input_schema))
        result = session.call_tool(tool, arguments)
        check_refusal(result)
        if result.ok and tool == "state_hypothesis":
            stated = result.data["claim"]
        if not result.ok:
            assert session.task.state()["hypothesis"] == stated
            assert session.task.submission is None and not session.done
            assert session.lab.state() == before, f"refused {tool} changed state: {result.error}"
    reward = session.score()
    assert 0.0 <= reward.total <= 1.0 and "unscorable" not in reward.components


@pytest.mark.parametrize("tool", ["lh_aspirate", "reader_read_absorbance", "spec_acquire_dark"])
@SETTINGS
@given(value=st.one_of(extreme_numbers, long_strings, deeply_nested, foreign_keys, st.just("37 C")))
def test_the_python_path_raises_only_tool_errors(virtual_lab, tool: str, value) -> None:
    """``lab.<instrument>.<tool>(...)`` raises the typed error, never anything else."""
    instrument, _, method = tool.partition("_")
    spec = virtual_lab.tool_spec(tool)
    for param in spec.params:
        try:
            getattr(getattr(virtual_lab, instrument), method)(**{param.name: value})
        except ToolError as error:
            assert error.code != "instrument_error", error
            assert len(error.message) + len(error.hint or "") <= SHORT
