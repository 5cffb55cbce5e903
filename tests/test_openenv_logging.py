"""What the OpenEnv server logs: a client that leaves is no error; a real error still is.

Served by uvicorn with its own logging left to the root logger (``log_config=None``), so caplog
sees what a user's console would.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

import pytest
from served import served
from starlette.websockets import WebSocket

TASK = "dye_quantification"
#: generous: the machine may be busy
CEILING_S = 120


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + CEILING_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {CEILING_S} s for {what}"
        time.sleep(0.02)


def _errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_client_that_leaves_first_is_logged_quietly(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openenv.core.mcp_client import MCPToolClient  # type: ignore[import-untyped]

    from labtools.session.openenv import LabEnvironment, app

    caplog.set_level(logging.DEBUG)
    left = threading.Event()
    close = LabEnvironment.close

    def close_after_the_client_left(self: LabEnvironment) -> None:
        # the server closes its socket after this: the client is surely gone by then
        assert left.wait(CEILING_S)
        close(self)

    monkeypatch.setattr(LabEnvironment, "close", close_after_the_client_left)
    with served(app(TASK, secret="logging"), log_config=None, log_level="debug") as url:
        client = MCPToolClient(
            base_url=url, connect_timeout_s=CEILING_S, message_timeout_s=CEILING_S
        )
        with client.sync() as env:
            env.reset(seed=1)
            assert env.call_tool("lh_get_deck")["labware"]
        left.set()

        def ended() -> bool:
            quiet = [r for r in caplog.records if r.name == "labtools.session.openenv"]
            return bool(quiet or _errors(caplog))

        _wait(ended, "the server to end the connection")
    assert _errors(caplog) == []
    (quiet,) = [r for r in caplog.records if r.name == "labtools.session.openenv"]
    assert quiet.levelno == logging.DEBUG and quiet.exc_info is None
    assert "left before the server closed" in quiet.getMessage()


def test_a_real_error_on_a_connection_still_logs_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import websockets.sync.client

    from labtools.session.openenv import app

    caplog.set_level(logging.DEBUG)
    application = app(TASK, secret="logging")

    async def broken(websocket: WebSocket) -> None:
        await websocket.accept()
        raise RuntimeError("the disk is full")

    application.add_api_websocket_route("/broken", broken)
    with served(application, log_config=None, log_level="debug") as url:
        address = url.replace("http", "ws") + "/broken"
        with (
            contextlib.suppress(websockets.exceptions.ConnectionClosed),
            websockets.sync.client.connect(address) as ws,
        ):
            ws.recv(timeout=CEILING_S)
        _wait(lambda: bool(_errors(caplog)), "the error to be logged")
    (error,) = _errors(caplog)
    assert error.exc_info is not None and "the disk is full" in str(error.exc_info[1])
