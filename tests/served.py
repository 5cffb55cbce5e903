"""An ASGI application served by uvicorn in a thread of the test process, on a free port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

#: the longest a server may take to start or stop on a loaded machine (s)
PATIENCE_S = 300


@contextlib.contextmanager
def served(application: Any, **config: Any) -> Iterator[str]:
    """``application`` on ``127.0.0.1`` until the block ends; its URL. ``config`` goes to
    :class:`uvicorn.Config` (neither end pings by default: the server and its clients share
    this process, so a busy spell would go unanswered)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = {"log_level": "critical", "ws_ping_interval": None, **config}
    server = uvicorn.Server(uvicorn.Config(application, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + PATIENCE_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(PATIENCE_S)
        sock.close()
