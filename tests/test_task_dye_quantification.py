"""T2 dye quantification: the nested concentrations get every check a top-level quantity gets."""

from __future__ import annotations

import json
import math

import pytest

from labtools.session import Session
from labtools.simulators.tasks.dye_quantification import DYES
from labtools.units import qty

TOOL = "submit_dye_quantification"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    journals = tmp_path_factory.mktemp("journals")
    with Session("dye_quantification", secret="dye tests", journal_dir=journals) as session:
        session.journals = journals
        yield session


def _answer(tartrazine: object, unit: str = "micromolar") -> dict[str, object]:
    amounts = {dye: qty(1.0, "micromolar") for dye in DYES}
    amounts["tartrazine"] = {"value": tartrazine, "unit": unit}
    return {"concentrations": amounts}


@pytest.mark.parametrize(
    ("value", "unit", "code", "field"),
    [
        (math.nan, "micromolar", "invalid_arguments", "/concentrations/tartrazine/value"),
        (math.inf, "molar", "invalid_arguments", "/concentrations/tartrazine/value"),
        (-math.inf, "molar", "invalid_arguments", "/concentrations/tartrazine/value"),
        (10**400, "nanomolar", "invalid_arguments", "/concentrations/tartrazine/value"),
        (1e300, "molar", "out_of_range", "/concentrations/tartrazine"),
        (11, "molar", "out_of_range", "/concentrations/tartrazine"),
        (-1, "micromolar", "out_of_range", "/concentrations/tartrazine"),
        (-1e-12, "nanomolar", "out_of_range", "/concentrations/tartrazine"),
    ],
)
def test_nested_quantities_are_checked_like_top_level_ones(
    session, value, unit, code, field
) -> None:
    # these were all accepted (a 400-digit integer raised OverflowError in the submit tool)
    session.reset(0)
    before = session.lab.state()
    result = session.call_tool(TOOL, _answer(value, unit))
    assert not result.ok and result.error["code"] == code, result.error
    assert result.error["field"] == field
    assert result.error["hint"]
    assert not session.done and session.task.submission is None
    assert session.lab.state() == before


def test_a_range_error_names_the_range_in_the_callers_unit(session) -> None:
    session.reset(0)
    error = session.call_tool(TOOL, _answer(-5, "millimolar")).error
    assert error["hint"] == "allowed: 0–10000 millimolar"
    assert "concentrations.tartrazine -5 millimolar" in error["message"]


def test_journals_of_refused_nested_values_are_strict_json(session) -> None:
    session.reset(7)
    for value in (math.nan, math.inf, 1e300, -1.0):
        assert not session.call_tool(TOOL, _answer(value)).ok
    assert session.call_tool(TOOL, _answer(0.0)).ok
    path = session.journals / f"{session.episode_id}.jsonl"

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the journal")

    events = [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]
    assert [e.get("event", e.get("tool")) for e in events] == ["reset", *[TOOL] * 5, "end"]
    assert events[1]["arguments"]["concentrations"]["tartrazine"]["value"] == "NaN"


def test_a_zero_or_vanishing_answer_scores_honestly(session) -> None:
    # ln(5e-324 / c) used to underflow to ln(0) before the log
    session.reset(2)
    truth = session.lab.shared["world"].hidden_truth()["task/dye_quantification"]
    answer = {dye: qty(5e-324 if dye in truth else 0.0, "micromolar") for dye in DYES}
    assert session.call_tool(TOOL, {"concentrations": answer}).ok
    reward = session.score()
    assert reward.components["f1"] == 0.0 and reward.components["accuracy"] == 0.0
    assert reward.components["outcome"] == 0.0
    assert reward.total == 0.0


def test_python_callers_may_give_nested_quantities_as_strings_or_pint(session) -> None:
    from labtools.units import Quantity

    session.reset(3)
    amounts = {"tartrazine": "5 uM", "sunset_yellow": Quantity(2, "nM"), "allura_red": "0 M"}
    amounts["brilliant_blue"] = {"value": 1, "unit": "mM"}
    arguments = session.lab.tool_spec(TOOL).normalize((), {"concentrations": amounts})
    assert arguments["concentrations"]["tartrazine"] == {"value": 5, "unit": "micromolar"}
    assert session.call_tool(TOOL, arguments).ok
    assert session.task.submission == {
        "tartrazine": pytest.approx(5.0),
        "sunset_yellow": pytest.approx(2e-3),
        "allura_red": 0.0,
        "brilliant_blue": pytest.approx(1000.0),
    }
