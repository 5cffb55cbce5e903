"""A closed session's lab, shelved for the next session of its task: the next session starts
where a freshly built lab starts, and plays the same episodes to the same rewards."""

from __future__ import annotations

import json

import pytest

from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.shelf import SHELF, Shelf, Shelved

TASKS = (
    "dye_quantification",
    "kinetics/3/alp",
    "cuvette/3/tartrazine",
    "pipette/3/channel0+tip10+10ul",
)


@pytest.fixture(autouse=True)
def empty_shelf():
    SHELF.clear()
    yield
    SHELF.clear()


def _episode(session: Session, seed: int) -> tuple[list[str], float]:
    """The expert's calls' results (compact JSON) and its reward."""
    seen: list[str] = []
    call = session.acall_tool

    async def recorded(name, arguments, *, progress=None):
        result = await call(name, arguments, progress=progress)
        seen.append(json.dumps([name, result.to_dict()], sort_keys=True, default=str))
        return result

    session.acall_tool = recorded  # type: ignore[method-assign]
    session.reset(seed)
    AGENTS["expert"](session, seed)
    del session.acall_tool
    return seen, session.score().total


@pytest.mark.parametrize("task", TASKS)
def test_a_shelved_lab_plays_as_a_fresh_one(task: str) -> None:
    with Session(task, secret="shelf") as fresh:
        built = fresh.lab
        before = fresh.lab.state()
        expected = _episode(fresh, 5)
    assert len(SHELF) == 1
    with Session(task, secret="another") as other:  # the shelved lab, dirtied by other draws
        assert other.lab is built and len(SHELF) == 0
        _episode(other, 9)
    with Session(task, secret="shelf") as again:
        assert again.lab is built
        assert again.lab.state() == before  # as built: nothing of the last sessions
        assert _episode(again, 5) == expected


def test_a_closed_session_takes_no_calls_and_gives_its_lab_once() -> None:
    session = Session("dye_quantification", secret="closed")
    session.reset(0)
    session.close()
    session.close()
    assert len(SHELF) == 1
    refused = session.call_tool("lh_get_deck", {})
    assert not refused.ok and refused.error["code"] == "precondition_failed"
    with pytest.raises(RuntimeError, match="closed"):
        session.reset(1)
    first, second = Session("dye_quantification"), Session("dye_quantification")
    assert first.lab is not second.lab  # one shelved lab, one built
    first.close(), second.close()


def test_only_labs_built_from_a_task_id_with_the_published_physics_are_shelved() -> None:
    from labtools.session.registry import load_task

    Session(load_task("dye_quantification")).close()
    assert len(SHELF) == 0


def test_a_full_shelf_closes_its_oldest_labs() -> None:
    shelf = Shelf(capacity=1)
    sessions = [Session("dye_quantification") for _ in range(2)]
    for session in sessions:
        shelf.put("dye_quantification", Shelved(session.lab, session.task, session._pristine))
    assert len(shelf) == 1
    assert sessions[0].lab._loop is None and sessions[1].lab._loop is not None  # closed, kept
    assert shelf.take("dye_quantification").lab is sessions[1].lab
    assert shelf.take("dye_quantification") is None
    sessions[1].lab.close()
