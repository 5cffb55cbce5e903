"""The MCP server's cost beside bare servers on the official SDK, measured in one run.

Round trips of the read tool, in process and over stdio. The goal anchor is the bare SDK server
over the same lab (:func:`bench.mcp_bare.bare_lab_server`: same tools and schemas, each call
straight to ``lab.acall``): what labtools' server adds (refusal text, result summaries,
confirmation, tasks) is the ratio, goal ≤ 1.2×. The echo anchors (a fixed result under the same
``outputSchema``) show what the result's size costs through any server. Servers are timed in
interleaved rounds, so load on the machine falls on all of them alike.

Also the time from spawning to the first ``tools/list`` answer: ``labtools serve`` answers from
the catalogue it cached on an earlier run and builds the lab after (goal ≤ 1.2× the bare
server's), warm and cold (cold: no compiled bytecode, as after an install — both interpreters
look for it under an empty ``PYTHONPYCACHEPREFIX`` and write none); without the cache, and to
the first tool call answered, for comparison.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.core import NullHandler
from bench.mcp_bare import bare_lab_server, bare_server
from bench.timing import few, restore_sigint, row
from labtools import Lab
from labtools.server import build_server

TOOL = "lh_get_deck"
ROUNDS = 15
CALLS = 40  # per server per round
GOAL = "(goal ≤ 1.2)"


async def _interleaved_us(clients: dict[str, tuple[Client, str]]) -> dict[str, float]:
    """Median over rounds of each client's mean round trip (µs); one round calls each in turn."""
    calls = few(CALLS, 5)
    for client, tool in clients.values():
        for _ in range(few(20, 1)):
            await client.call_tool(tool, {})
    means: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(few(ROUNDS, 2)):
        for name, (client, tool) in clients.items():
            start = time.perf_counter()
            for _ in range(calls):
                result = await client.call_tool(tool, {})
            means[name].append((time.perf_counter() - start) / calls * 1e6)
            if result.is_error:
                raise RuntimeError(result.content)
    return {name: statistics.median(values) for name, values in means.items()}


def _stdio(*args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=list(args), env={**os.environ, **env} if env else None
    )


def _echo_of(lab: Lab) -> dict[str, Any]:
    """The read tool's result and output schema, for the bare server to return verbatim."""
    return {
        "output_schema": lab.tool_spec(TOOL).output_schema,
        "payload": lab.call(TOOL, {}).unwrap(),
    }


def _client(server: Any) -> Client:
    """A client of an in-process server, or of one spawned over stdio from its parameters (as a
    ``stdio_client`` transport: every mcp 2.x takes one; only 2.3 and later the parameters)."""
    if isinstance(server, StdioServerParameters):
        return Client(stdio_client(server))
    return Client(server)


async def _open(stack: AsyncExitStack, server: Any, tool: str = TOOL) -> tuple[Client, str]:
    return await stack.enter_async_context(_client(server)), tool


async def _in_process(echo_null: dict, echo_virtual: dict) -> dict[str, float]:
    async with AsyncExitStack() as stack:
        null_lab = stack.enter_context(Lab([NullHandler("lh")]))
        bare_null = stack.enter_context(Lab([NullHandler("lh")]))
        virtual = stack.enter_context(Lab.virtual(seed=0))
        bare_virtual = stack.enter_context(Lab.virtual(seed=0))
        clients = {
            "bare noop": await _open(stack, bare_server(), "noop"),
            "bare echo null": await _open(stack, bare_server(echo_null), "echo"),
            "bare echo virtual": await _open(stack, bare_server(echo_virtual), "echo"),
            "bare lab null": await _open(stack, bare_lab_server(bare_null)),
            "ours null": await _open(stack, build_server(null_lab)),
            "bare lab virtual": await _open(stack, bare_lab_server(bare_virtual)),
            "ours virtual": await _open(stack, build_server(virtual)),
        }
        return await _interleaved_us(clients)


async def _over_stdio(echo_path: str, cache: str) -> dict[str, float]:
    async with AsyncExitStack() as stack:
        clients = {
            "bare noop": await _open(stack, _stdio("-m", "bench.mcp_bare"), "noop"),
            "bare echo virtual": await _open(
                stack, _stdio("-m", "bench.mcp_bare", echo_path), "echo"
            ),
            "bare lab virtual": await _open(stack, _stdio("-m", "bench.mcp_bare", "--virtual")),
            "ours virtual": await _open(
                stack, _stdio("-m", "labtools", "serve", LABTOOLS_CACHE_DIR=cache)
            ),
        }
        return await _interleaved_us(clients)


async def _spawns_ms(servers: dict[str, tuple[StdioServerParameters, str]], runs: int) -> dict:
    """Median over interleaved runs of spawn → first ``tools/list`` answer, and → first call
    of the given tool answered (ms)."""
    listed: dict[str, list[float]] = {name: [] for name in servers}
    called: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(runs):
        for name, (params, tool) in servers.items():
            start = time.perf_counter()
            async with _client(params) as client:
                await client.list_tools()
                listed[name].append(time.perf_counter() - start)
                await client.call_tool(tool, {})
                called[name].append(time.perf_counter() - start)
    return {
        name: (statistics.median(listed[name]) * 1e3, statistics.median(called[name]) * 1e3)
        for name in servers
    }


def _ratio(ours: float, anchor: float, goal: str = GOAL) -> str:
    return f"{ours / anchor:.2f}× {goal}".rstrip()


async def _main() -> None:
    with Lab([NullHandler("lh")]) as lab:
        echo_null = _echo_of(lab)
    with Lab.virtual(seed=0) as lab:
        echo_virtual = _echo_of(lab)
    cache = tempfile.mkdtemp(prefix="labtools-cache-")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(echo_virtual, handle)
    local = await _in_process(echo_null, echo_virtual)
    piped = await _over_stdio(handle.name, cache)

    print(f"MCP round trip of the read tool {TOOL}; median of {few(ROUNDS, 2)} interleaved rounds")
    print(" in process")
    print(row("bare SDK server, no-op tool", local["bare noop"]))
    print(row("bare SDK server, the same small result + outputSchema", local["bare echo null"]))
    print(row("bare SDK server over an instrument doing nothing", local["bare lab null"]))
    print(
        row(
            "labtools server, instrument doing nothing",
            local["ours null"],
            note=_ratio(local["ours null"], local["bare lab null"])
            + f"; {_ratio(local['ours null'], local['bare echo null'], 'the echo')}",
        )
    )
    print(row("bare SDK server, the deck result + outputSchema", local["bare echo virtual"]))
    print(row("bare SDK server over the virtual lab", local["bare lab virtual"]))
    print(
        row(
            "labtools server, virtual lab (PyLabRobot deck view)",
            local["ours virtual"],
            note=_ratio(local["ours virtual"], local["bare lab virtual"]),
        )
    )
    print(" over stdio")
    print(row("bare SDK server, no-op tool", piped["bare noop"]))
    print(row("bare SDK server, the deck result + outputSchema", piped["bare echo virtual"]))
    print(row("bare SDK server over the virtual lab", piped["bare lab virtual"]))
    print(
        row(
            "labtools serve, virtual lab",
            piped["ours virtual"],
            note=_ratio(piped["ours virtual"], piped["bare lab virtual"])
            + f"; {_ratio(piped['ours virtual'], piped['bare noop'], 'the no-op')}",
        )
    )
    runs = few(7, 1)
    cold = {"PYTHONPYCACHEPREFIX": tempfile.mkdtemp(), "PYTHONDONTWRITEBYTECODE": "1"}
    spawns = await _spawns_ms(
        {
            "bare": (_stdio("-m", "bench.mcp_bare"), "noop"),
            "bare cold": (_stdio("-m", "bench.mcp_bare", **cold), "noop"),
            "cached cold": (
                _stdio("-m", "labtools", "serve", LABTOOLS_CACHE_DIR=cache, **cold),
                TOOL,
            ),
            "bare lab": (_stdio("-m", "bench.mcp_bare", "--virtual"), TOOL),
            "cached": (_stdio("-m", "labtools", "serve", LABTOOLS_CACHE_DIR=cache), TOOL),
            "uncached": (_stdio("-m", "labtools", "serve", LABTOOLS_CACHE_DIR="off"), TOOL),
        },
        runs,
    )
    bare, bare_call = spawns["bare"]
    print(
        f"spawn to the first tools/list answer (and to the first call answered), median of {runs}"
    )
    print(row("bare SDK server", bare, "ms", note=f"first call {bare_call:.0f} ms"))
    lab_list, lab_call = spawns["bare lab"]
    print(
        row(
            "bare SDK server over the virtual lab (built first)",
            lab_list,
            "ms",
            note=f"first call {lab_call:.0f} ms",
        )
    )
    cached, cached_call = spawns["cached"]
    print(
        row(
            "labtools serve, catalogue cached (lab built after)",
            cached,
            "ms",
            note=_ratio(cached, bare) + f"; first call {cached_call:.0f} ms",
        )
    )
    bare_cold, bare_cold_call = spawns["bare cold"]
    print(row("bare SDK server, cold", bare_cold, "ms", note=f"first call {bare_cold_call:.0f} ms"))
    cold_list, cold_call = spawns["cached cold"]
    print(
        row(
            "labtools serve, catalogue cached, cold",
            cold_list,
            "ms",
            note=_ratio(cold_list, bare_cold) + f"; first call {cold_call:.0f} ms",
        )
    )
    uncached, uncached_call = spawns["uncached"]
    print(
        row(
            "labtools serve, no cache (builds the lab first)",
            uncached,
            "ms",
            note=_ratio(uncached, bare, "") + f"; first call {uncached_call:.0f} ms",
        )
    )


def main() -> None:
    restore_sigint()
    anyio.run(_main)


if __name__ == "__main__":
    main()
