"""The OpenEnv server under load: many connections at once, and episodes per minute through it.

The server (``labtools.session.openenv.app`` under uvicorn, without per-message deflate, as its
docstring advises on loopback) runs in a process of its own, as a trainer's environment server
does; the clients are OpenEnv's own ``MCPToolClient`` (async), in
this process. Measured in one run:

- **connections to first observation**: 64 clients connect and reset at once; the time until
  the last has its first observation (goal ≤ 2 s), after one connection (the first
  imports the client's and the server's websocket and MCP modules, ~3 s), on a server started
  with ``warm=64`` (its labs built in the background from the start; measured once it logs them
  shelved) and on one that builds each connection's lab;
- **episodes per minute**: 1 and 8 clients, each replaying recorded expert episodes (the calls
  the expert made in process on that seed and secret, which give the same results through the
  server) in a loop, beside the same episodes replayed in process on one core (goal: 8 clients
  ≥ 0.8× in process).

Run: ``python -m bench.openenv``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.timing import few, restore_sigint, row
from labtools.session import Session

TASK = "dye_quantification"
SECRET = "bench-openenv"
CONNECTIONS = 64
GOAL_CONNECT_S = 2.0
GOAL_RATIO = 0.8
#: a connection or message's patience on a loaded machine (s)
PATIENCE_S = 300.0

_SERVE = """
import logging, sys, uvicorn
from labtools.session.openenv import app
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
logging.getLogger("labtools.session.openenv").setLevel(logging.INFO)
application = app({task!r}, secret={secret!r}, max_sessions={sessions}, warm={warm})
uvicorn.run(application, host="127.0.0.1",
            port=int(sys.argv[1]), log_level="critical", ws_ping_interval=None,
            ws_per_message_deflate=False)
"""


@contextmanager
def _server(sessions: int, warm: int = 0) -> Iterator[str]:
    """The OpenEnv app in a subprocess; its URL once it answers and, with ``warm``, once it
    has logged its warm labs shelved."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = _SERVE.format(task=TASK, secret=SECRET, sessions=sessions, warm=warm)
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(port)], stderr=subprocess.PIPE, text=True
    )
    try:
        if warm:
            assert process.stderr is not None
            for line in process.stderr:
                if "built and shelved" in line:
                    break
            else:
                raise RuntimeError("the OpenEnv server ended before its labs were built")
        deadline = time.monotonic() + PATIENCE_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the OpenEnv server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(PATIENCE_S)


def _client(url: str) -> Any:
    from openenv.core.mcp_client import MCPToolClient  # type: ignore[import-untyped]

    return MCPToolClient(
        base_url=url,
        connect_timeout_s=PATIENCE_S,
        message_timeout_s=PATIENCE_S,
        websocket_ping_interval_s=None,
    )


def _recorded(seeds: range) -> dict[int, list[tuple[str, Any]]]:
    """The expert's calls on each seed, in process (same secret: the same episode)."""
    calls: dict[int, list[tuple[str, Any]]] = {}
    with Session(TASK, secret=SECRET) as session:
        call_tool = session.call_tool
        for seed in seeds:
            made: list[tuple[str, Any]] = []

            def recorded(name: str, arguments: Any, made: list[tuple[str, Any]] = made) -> Any:
                made.append((name, json.loads(json.dumps(arguments))))
                return call_tool(name, arguments)

            session.call_tool = recorded  # type: ignore[method-assign]
            session.reset(seed)
            session.task.expert(session)
            calls[seed] = made
    return calls


def _in_process_per_minute(episodes: dict[int, list[tuple[str, Any]]], seconds: float) -> float:
    """Recorded episodes replayed on one session in this process: reset, calls, reward."""
    with Session(TASK, secret=SECRET) as session:
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for seed, calls in episodes.items():
                session.reset(seed)
                for name, arguments in calls:
                    session.call_tool(name, arguments)
                session.score()
                done += 1
        return done / (time.perf_counter() - start) * 60.0


async def _first_observations(url: str, count: int) -> float:
    """Seconds until each of ``count`` clients, connecting at once, has its first observation."""

    async def one(seed: int) -> Any:
        client = _client(url)
        async with client:
            return await client.reset(seed=seed)

    start = time.perf_counter()
    await asyncio.gather(*(one(seed) for seed in range(count)))
    return time.perf_counter() - start


async def _served_per_minute(
    url: str, episodes: dict[int, list[tuple[str, Any]]], clients: int, seconds: float
) -> float:
    """``clients`` connections, each replaying the recorded episodes until ``seconds`` pass."""
    from openenv.core.env_server import CallToolAction  # type: ignore[import-untyped]

    done = [0]
    start = time.perf_counter()

    async def loop() -> None:
        async with _client(url) as env:
            while time.perf_counter() - start < seconds:
                for seed, calls in episodes.items():
                    await env.reset(seed=seed)
                    for name, arguments in calls:
                        await env.step(CallToolAction(tool_name=name, arguments=arguments))
                    done[0] += 1

    await asyncio.gather(*(loop() for _ in range(clients)))
    return done[0] / (time.perf_counter() - start) * 60.0


def main() -> None:
    restore_sigint()
    seconds = few(8.0, 0.5)
    episodes = _recorded(range(few(4, 1)))
    calls = sum(len(c) for c in episodes.values()) / len(episodes)
    print(f"OpenEnv server ({TASK}, its own process, no deflate) and OpenEnv's MCPToolClient")
    with _server(CONNECTIONS, warm=CONNECTIONS) as url:
        asyncio.run(_first_observations(url, 1))  # each side's first connection imports
        waited = asyncio.run(_first_observations(url, CONNECTIONS))
    verdict = "meets" if waited <= GOAL_CONNECT_S else "misses"
    note = f"goal ≤ {GOAL_CONNECT_S:g} s: {verdict}"
    print(row(f"{CONNECTIONS} connections at once, warm={CONNECTIONS}", waited, "s", note))
    with _server(CONNECTIONS) as url:
        asyncio.run(_first_observations(url, 1))  # the imports, the deck template
        waited = asyncio.run(_first_observations(url, CONNECTIONS))
        print(row(f"{CONNECTIONS} connections at once, each lab built", waited, "s"))
        local = _in_process_per_minute(episodes, seconds)
        print(row(f"in process, one core ({calls:.0f} calls an episode)", local, "/min"))
        for clients in (1, 8):
            served = asyncio.run(_served_per_minute(url, episodes, clients, seconds))
            note = f"{served / local:.2f}× in process"
            if clients == 8:
                verdict = "meets" if served >= GOAL_RATIO * local else "misses"
                note += f"; goal ≥ {GOAL_RATIO:g}×: {verdict}"
            print(row(f"through the server, {clients} client(s)", served, "/min", note))


if __name__ == "__main__":
    main()
