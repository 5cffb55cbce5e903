"""A task offers the lab's tools its experiment needs (``Task.lab_tools``, the groups of
``simulators/tasks/offers.py``): the catalogue in every format holds those and the task's own,
a call to another is an unknown tool that changes nothing, and every tool a statement names
is offered."""

from __future__ import annotations

import json
import re

import pytest

from labtools.lab import Lab
from labtools.session import Session
from labtools.session.registry import family_ids, load_family, task_ids
from labtools.simulators.tasks.offers import ABSORBANCE, KINETIC, LIQUID

SECRET = "test-offers"
#: the tools a statement may name
NAMED = re.compile(r"\b((?:lh|reader|spec|balance|library|submit|state)_[a-z0-9_]+)")


def _instances() -> list[str]:
    out = list(task_ids())
    for family in family_ids():
        first = load_family(family).structures()[0]
        out.append(f"{family}/3/{first}")
    return out


@pytest.mark.parametrize("task", _instances())
def test_a_task_offers_its_groups_and_its_statement_names_only_those(task: str) -> None:
    with Session(task, secret=SECRET) as session:
        statement = session.reset(0)["task"]
        offered = set(session.tool_names())
        own = {spec.name for spec in session.lab.tool_specs() if spec.instrument == "task"}
        assert offered - own == set(type(session.task).lab_tools or offered - own)
        assert offered >= LIQUID and any(n.startswith("submit_") for n in own)
        for format in ("json-schema", "openai-chat", "anthropic", "mcp"):
            listed = json.dumps(session.tools(format))
            assert all(f'"{name}"' in listed for name in offered)
            assert "balance_weigh" in offered or '"balance_weigh"' not in listed
        assert set(NAMED.findall(statement)) <= offered


def test_a_tool_the_task_does_not_offer_is_unknown_and_changes_nothing() -> None:
    with Session("standard_curve", secret=SECRET) as session:
        session.reset(1)
        assert set(session.tool_names()) == LIQUID | ABSORBANCE | {"submit_standard_curve"}
        before = session.lab.state()
        for name, arguments in [
            ("balance_weigh", {}),
            ("spec_acquire_dark", {}),
            ("reader_set_temperature", {"temperature": {"value": 37, "unit": "degC"}}),
            ("reader_read_absorbance_kinetic", {}),
        ]:
            result = session.call_tool(name, arguments)
            assert not result.ok and result.error is not None
            assert result.error["code"] == "unknown_tool", result.error
            assert "lh_transfer" in result.error["hint"]
        assert session.lab.state() == before
    with Session("enzyme_kinetics", secret=SECRET) as session:
        assert set(session.tool_names()) >= KINETIC


def test_offering_a_tool_no_instrument_has_is_refused() -> None:
    with Lab.virtual(seed=0) as lab:
        with pytest.raises(ValueError, match="no_such_tool"):
            lab.offer(["lh_get_deck", "no_such_tool"])
        assert "balance_weigh" in lab.tool_names()  # nothing changed
        lab.offer(LIQUID)
        assert set(lab.tool_names()) == LIQUID
        assert [t["name"] for t in lab.tools("mcp")] == lab.tool_names()


#: the most characters of a task's catalogue in the OpenAI Chat format (compact JSON)
CATALOGUE_CHARS = 8000


def _spread(family: str, count: int = 4) -> list[str]:
    """``count`` of the family's structures spread over its list, and its last."""
    structures = load_family(family).structures()
    step = max(1, len(structures) // count)
    return [*structures[::step][:count], structures[-1]]


@pytest.mark.parametrize(
    "task",
    [*task_ids(), *(f"{f}/5/{s}" for f in family_ids() for s in _spread(f))],
)
def test_a_tasks_catalogue_fits_its_size(task: str) -> None:
    """Every tool, every parameter and every limit in at most 8,000 characters, which the
    offered groups and descriptions that say each thing once allow."""
    with Session(task, secret=SECRET) as session:
        catalogue = session.tools("openai-chat")
    size = len(json.dumps(catalogue, separators=(",", ":"), ensure_ascii=False))
    assert size <= CATALOGUE_CHARS, (task, size)
    for tool in catalogue:
        text = json.dumps(tool["function"]["parameters"])
        assert '"value": {"type": "number"}' in text or "value" not in text
