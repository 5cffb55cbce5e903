"""The MCP server's cost beside bare servers on the official SDK, measured in one run.

Anchors: the bare server's no-op tool, and the bare server returning the very result our read
tool returns, under the same ``outputSchema`` (the official client validates structured results
with jsonschema on every call, so the result's size costs the same through any server). Goal:
``labtools serve`` ≤ 1.2× the bare server. Also the time from spawning to the first ``tools/list``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.core import NullHandler
from bench.mcp_bare import bare_server
from bench.timing import restore_sigint, row
from labtools import Lab
from labtools.server import build_server

ROUNDS = 400
TOOL = "lh_get_deck"


async def _round_trip_us(client: Client, name: str) -> float:
    for _ in range(30):
        await client.call_tool(name, {})
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        result = await client.call_tool(name, {})
        times.append(time.perf_counter() - start)
        if result.is_error:
            raise RuntimeError(result.content)
    return statistics.median(times) * 1e6


def _stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=list(args))


def _echo_of(lab: Lab) -> dict[str, Any]:
    """The read tool's result and output schema, for the bare server to return verbatim."""
    return {
        "output_schema": lab.tool_spec(TOOL).output_schema,
        "payload": lab.call(TOOL, {}).unwrap(),
    }


async def _in_process(echo_null: dict, echo_virtual: dict) -> dict[str, float]:
    out = {}
    async with Client(bare_server()) as client:
        out["bare noop"] = await _round_trip_us(client, "noop")
    async with Client(bare_server(echo_null)) as client:
        out["bare echo null"] = await _round_trip_us(client, "echo")
    async with Client(bare_server(echo_virtual)) as client:
        out["bare echo virtual"] = await _round_trip_us(client, "echo")
    with Lab([NullHandler("lh")]) as lab:
        async with Client(build_server(lab)) as client:
            out["ours null"] = await _round_trip_us(client, TOOL)
    with Lab.virtual(seed=0) as lab:
        async with Client(build_server(lab)) as client:
            out["ours virtual"] = await _round_trip_us(client, TOOL)
    return out


async def _over_stdio(echo_path: str) -> dict[str, float]:
    out = {}
    async with Client(_stdio("-m", "bench.mcp_bare", echo_path)) as client:
        out["bare noop"] = await _round_trip_us(client, "noop")
        out["bare echo virtual"] = await _round_trip_us(client, "echo")
    async with Client(_stdio("-m", "labtools", "serve")) as client:
        out["ours virtual"] = await _round_trip_us(client, TOOL)
    return out


async def _spawn_ms(params: StdioServerParameters, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        async with Client(params) as client:
            await client.list_tools()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def _main() -> None:
    with Lab([NullHandler("lh")]) as lab:
        echo_null = _echo_of(lab)
    with Lab.virtual(seed=0) as lab:
        echo_virtual = _echo_of(lab)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(echo_virtual, handle)
    local = await _in_process(echo_null, echo_virtual)
    piped = await _over_stdio(handle.name)

    def ratio(ours: float, anchor: float, goal: bool = True) -> str:
        return f"{ours / anchor:.2f}× {'(goal ≤ 1.2)' if goal else ''}"

    print(f"MCP round trip of the read tool {TOOL}, median of {ROUNDS} calls")
    print(" in process")
    print(row("bare SDK server, no-op tool", local["bare noop"]))
    print(row("bare SDK server, the same small result + outputSchema", local["bare echo null"]))
    print(
        row(
            "labtools server, instrument doing nothing",
            local["ours null"],
            note=ratio(local["ours null"], local["bare echo null"])
            + f"; {local['ours null'] / local['bare noop']:.2f}× the no-op",
        )
    )
    print(
        row(
            "bare SDK server, the virtual lab's deck result + outputSchema",
            local["bare echo virtual"],
        )
    )
    print(
        row(
            "labtools server, virtual lab (PyLabRobot deck view)",
            local["ours virtual"],
            note=ratio(local["ours virtual"], local["bare echo virtual"]),
        )
    )
    print(" over stdio")
    print(row("bare SDK server, no-op tool", piped["bare noop"]))
    print(
        row(
            "bare SDK server, the virtual lab's deck result + outputSchema",
            piped["bare echo virtual"],
        )
    )
    print(
        row(
            "labtools serve, virtual lab",
            piped["ours virtual"],
            note=ratio(piped["ours virtual"], piped["bare echo virtual"])
            + f"; {piped['ours virtual'] / piped['bare noop']:.2f}× the no-op",
        )
    )
    bare = await _spawn_ms(_stdio("-m", "bench.mcp_bare"))
    ours = await _spawn_ms(_stdio("-m", "labtools", "serve"))
    print("spawn to the first tools/list answer, median of 5")
    print(row("bare SDK server", bare, "ms"))
    print(
        row(
            "labtools serve (builds the virtual lab first)",
            ours,
            "ms",
            note=ratio(ours, bare, goal=False),
        )
    )


def main() -> None:
    restore_sigint()
    anyio.run(_main)


if __name__ == "__main__":
    main()
