"""The OpenEnv environment, served by OpenEnv's own app and driven by OpenEnv's own client.

One server for the module (uvicorn on a free local port, in a thread), at most four
connections at once, and one for 32; OpenEnv is imported in the tests, not at collection (it
takes seconds). Every wait has a ceiling for a loaded machine, and neither end pings: the
server and its clients share this process, so a busy spell would go unanswered.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from episodes import expert_episode
from served import PATIENCE_S, served

from labtools.session import Session

TASK = "dye_quantification"
SECRET = "test-openenv"
MAX_SESSIONS = 4
ZERO = {"value": 0, "unit": "micromolar"}
SUBMIT = {
    "concentrations": {
        d: ZERO for d in ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
    }
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    from labtools.session.openenv import app

    with served(app(TASK, secret=SECRET, max_sessions=MAX_SESSIONS)) as address:
        yield address


def _client(url: str) -> Any:
    from openenv.core.mcp_client import MCPToolClient  # type: ignore[import-untyped]

    return MCPToolClient(
        base_url=url,
        connect_timeout_s=PATIENCE_S,
        message_timeout_s=PATIENCE_S,
        websocket_ping_interval_s=None,
    )


def test_an_episode_through_openenvs_client(url: str) -> None:
    from openenv.core.env_server import CallToolAction  # type: ignore[import-untyped]

    with _client(url).sync() as env:
        first = env.reset(seed=3, episode_id="ep-3")
        assert not first.done and first.reward is None
        assert first.observation.metadata["episode_id"] == "ep-3"
        assert "submit_dye_quantification" in first.observation.tool_names
        assert first.observation.budget["calls"] > 0 and first.observation.task

        tools = env.list_tools()
        assert {t.name for t in tools} == set(first.observation.tool_names)
        submit = next(t for t in tools if t.name == "submit_dye_quantification")
        assert submit.input_schema["required"] == ["concentrations"]

        deck = env.call_tool("lh_get_deck")  # the data, as OpenEnv's client returns it
        assert "labware" in deck and "labels" in deck
        refused = env.call_tool("lh_move_plate", plate="no_such_plate", destination="reader")
        assert refused["ok"] is False and refused["error"]["code"] == "unknown_resource"
        assert refused["error"]["field"] and refused["error"]["message"]

        ended = env.step(CallToolAction(tool_name="submit_dye_quantification", arguments=SUBMIT))
        assert ended.done and ended.observation.result["ok"]
        assert ended.observation.metadata["terminated"]
        after = env.step(CallToolAction(tool_name="lh_get_deck", arguments={}))
        assert after.done and after.reward is None  # the reward comes once
        assert after.observation.result["error"]["code"] == "precondition_failed"
        state = env.state()
        assert state.episode_id == "ep-3" and state.step_count == 4

    with Session(TASK, secret=SECRET) as session:  # the same episode in process
        session.reset(3)
        for name, arguments in [
            ("lh_get_deck", {}),
            ("lh_move_plate", {"plate": "no_such_plate", "destination": "reader"}),
            ("submit_dye_quantification", SUBMIT),
        ]:
            session.call_tool(name, arguments)
        assert ended.reward == session.score().total


def test_a_reset_starts_a_new_episode_on_the_same_connection(url: str) -> None:
    with _client(url).sync() as env:
        env.reset(seed=5)
        env.call_tool("submit_dye_quantification", **SUBMIT)
        again = env.reset(seed=6, episode_id="ep-6")
        assert not again.done and again.observation.metadata == {
            "episode_id": "ep-6",
            "steps": 0,
            "terminated": False,
            "truncated": False,
        }
        assert "labware" in env.call_tool("lh_get_deck")


def test_concurrent_sessions_are_independent_and_one_more_is_refused(url: str) -> None:
    async def episode(i: int, opened: asyncio.Barrier, done: asyncio.Event) -> tuple[str, int]:
        async with _client(url) as env:
            await env.reset(seed=10 + i, episode_id=f"ep-{i}")
            await opened.wait()  # all four are open at once
            for _ in range(i + 1):
                await env.call_tool("lh_get_deck")
            state = await env.state()
            await done.wait()
            return state.episode_id, state.step_count

    async def refused() -> dict[str, Any]:
        env = _client(url)
        # OpenEnv's client raises the server's error, or, when the server's close comes before
        # the client's first message, websockets' ConnectionClosed
        with pytest.raises((RuntimeError, websockets.ConnectionClosed)) as caught:
            await env.connect()
            await env.reset(seed=1)
        await env.close()
        ws = url.replace("http://", "ws://") + "/ws"
        # the wire: a structured error, then close
        async with websockets.connect(ws, open_timeout=PATIENCE_S) as raw:
            message = json.loads(await raw.recv())
        if isinstance(caught.value, RuntimeError):
            assert "CAPACITY_REACHED" in str(caught.value)
        return message

    async def main() -> tuple[list[tuple[str, int]], dict[str, Any]]:
        opened, done = asyncio.Barrier(MAX_SESSIONS + 1), asyncio.Event()
        running = [asyncio.create_task(episode(i, opened, done)) for i in range(MAX_SESSIONS)]
        await opened.wait()
        try:
            refusal = await refused()
        finally:
            done.set()
        return list(await asyncio.gather(*running)), refusal

    states, message = asyncio.run(main())
    assert states == [(f"ep-{i}", i + 1) for i in range(MAX_SESSIONS)]
    assert message["type"] == "error"
    assert message["data"]["code"] == "CAPACITY_REACHED"
    assert message["data"]["active_sessions"] == message["data"]["max_sessions"] == MAX_SESSIONS


CROWD = 32


def test_32_concurrent_episodes_each_equal_its_seed_run_alone() -> None:
    """32 connections to one server play the expert's calls at once, every one open before any
    starts; each result and each reward is the one the same seed gives alone, in process."""
    from openenv.core.env_server import CallToolAction  # type: ignore[import-untyped]

    from labtools.session.openenv import app

    alone = {seed: expert_episode(TASK, seed, SECRET) for seed in range(CROWD)}

    async def episode(seed: int, url: str, opened: asyncio.Barrier) -> tuple[list[Any], Any]:
        async with _client(url) as env:
            await env.reset(seed=seed)
            await opened.wait()
            steps = [
                await env.step(CallToolAction(tool_name=name, arguments=arguments))
                for name, arguments in alone[seed].calls
            ]
        return [step.observation.result for step in steps], steps[-1]

    async def main(url: str) -> list[tuple[list[Any], Any]]:
        opened = asyncio.Barrier(CROWD)
        return list(await asyncio.gather(*(episode(s, url, opened) for s in range(CROWD))))

    with served(app(TASK, secret=SECRET, max_sessions=CROWD)) as url:
        played = asyncio.run(main(url))
    for seed, (results, last) in enumerate(played):
        assert results == [r.to_dict() for r in alone[seed].results], seed
        assert last.done and last.reward == alone[seed].reward.total, seed


def test_a_warm_app_puts_its_labs_on_the_shelf_for_the_first_connections() -> None:
    """``app(warm=n)`` builds ``n`` labs in the background and shelves them (logging when it
    has): the next sessions of its task take them instead of building."""
    import logging
    import threading

    from labtools.session.openenv import app
    from labtools.session.shelf import SHELF

    SHELF.clear()
    shelved = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "built and shelved" in record.getMessage():
                shelved.set()

    logger = logging.getLogger("labtools.session.openenv")
    handler, level = Seen(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        app(TASK, secret=SECRET, max_sessions=2, warm=3)
        assert shelved.wait(PATIENCE_S)
        assert len(SHELF) == 3 and SHELF.capacity >= 3
        with Session(TASK, secret=SECRET) as session:
            assert len(SHELF) == 2 and session.reset(0)["tools"]
        assert len(SHELF) == 3
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        SHELF.clear()
