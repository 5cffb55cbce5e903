"""The MCP server, driven by the official mcp client in process, over stdio and over HTTP."""

from __future__ import annotations

import json
import subprocess

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import free_port, refusal, serve_command, server_env, stdio_server, wait_for_port

from labtools.demo.protocol import with_tip
from labtools.server import build_server

UL = {"value": 50, "unit": "microliter"}
BAD_CALLS = {
    "bad unit": (
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "stock:A1", "volume": {"value": 50, "unit": "gallon"}}]},
        "unit_error",
    ),
    "bare number": (
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "stock:A1", "volume": 50}]},
        "unit_error",
    ),
    "out of range": (
        "lh_aspirate",
        {
            "items": [
                {"channel": 0, "well": "stock:A1", "volume": {"value": 5, "unit": "milliliter"}}
            ]
        },
        "out_of_range",
    ),
    "unknown argument": (
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "stock:A1", "volume": UL}], "volume_ml": 5},
        "invalid_arguments",
    ),
    "unknown tool": ("lh_teleport", {}, "unknown_tool"),
    "wrong type": (
        "lh_aspirate",
        {"items": [{"channel": "zero", "well": "stock:A1", "volume": UL}]},
        "invalid_arguments",
    ),
}


async def state_of(client: Client) -> dict:
    contents = (await client.read_resource("labtools://state")).contents
    return json.loads(contents[0].text)


async def exercise(client: Client) -> None:
    """The acceptance sequence: list, read, destructive call, every kind of refusal."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert "lh_aspirate" in tools and "reader_read_absorbance" in tools
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None and tool.title
    assert tools["reader_read_absorbance"].annotations.read_only_hint is True
    aspirate = tools["lh_aspirate"].annotations
    assert aspirate.destructive_hint is True and aspirate.idempotent_hint is False

    deck = await client.call_tool("lh_get_deck", {})
    assert not deck.is_error and deck.structured_content["tips_left"] == {"tips": 96}
    assert json.loads(deck.content[0].text) == deck.structured_content

    before = await state_of(client)
    picked = await client.call_tool("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]})
    assert not picked.is_error
    moved = await client.call_tool(
        "lh_aspirate", {"items": [{"channel": 0, "well": "stock:A1", "volume": UL}]}
    )
    assert (
        not moved.is_error
        and moved.structured_content["items"][0]["well_volume"]["value"] == 4950.0
    )
    after_good = await state_of(client)
    assert after_good != before

    for label, (name, arguments, code) in BAD_CALLS.items():
        result = await client.call_tool(name, arguments)
        error = refusal(result)
        assert error["code"] == code, (label, error)
        assert result.content[0].text.startswith(code), label
        assert await state_of(client) == after_good, f"{label} changed the lab"


def test_in_process(tmp_path) -> None:
    from fakes import fake_lab

    async def main() -> None:
        with fake_lab() as lab:
            async with Client(build_server(lab)) as client:
                await exercise(client)
            assert lab.instruments["lh"].wells["stock:A1"] == 4950.0

    anyio.run(main)


def test_over_stdio_with_labtools_serve() -> None:
    async def main() -> None:
        async with Client(stdio_server()) as client:
            await exercise(client)

    anyio.run(main)


def test_read_only_server_lists_and_runs_only_read_tools() -> None:
    from fakes import fake_lab

    async def main() -> None:
        with fake_lab() as lab:
            async with Client(build_server(lab, read_only=True)) as client:
                tools = (await client.list_tools()).tools
                assert tools and all(t.annotations.read_only_hint for t in tools)
                refused = await client.call_tool(
                    "lh_pick_up_tips", {"tip_rack": "tips", "channels": [0]}
                )
                assert "read-only" in refusal(refused)["hint"]
            assert lab.instruments["lh"].tips_left == 96

    anyio.run(main)


def test_progress_notifications_and_data_resources() -> None:
    from fakes import fake_lab

    async def main() -> None:
        with fake_lab() as lab:
            async with Client(build_server(lab)) as client:
                reports: list[tuple] = []

                async def on_progress(done: float, total: float | None, message: str | None):
                    reports.append((done, total, message))

                await client.call_tool(
                    "spec_set_integration_time", {"time": {"value": 10, "unit": "millisecond"}}
                )
                result = await client.call_tool(
                    "spec_acquire_spectrum", {"scans": 4}, progress_callback=on_progress
                )
                assert reports[0][:2] == (0, 4) and reports[-1][:2] == (4, 4)
                handle = result.structured_content["data"]
                full = await client.read_resource(f"labtools://data/{handle}")
                assert len(json.loads(full.contents[0].text)["counts"]) == 512
                templates = (await client.list_resource_templates()).resource_templates
                assert [t.uri_template for t in templates] == [
                    "labtools://result/{number}",
                    "labtools://data/{instrument}/{number}",
                ]
                with pytest.raises(MCPError):
                    await client.read_resource("labtools://data/spec/999")

    anyio.run(main)


def test_streamable_http_on_loopback_with_a_bearer_token() -> None:
    port = free_port()
    process = subprocess.Popen(
        serve_command("--transport", "http", "--port", str(port), "--token", "s3cret"),
        env=server_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        assert process.stderr is not None
        assert process.stderr.readline() == f"labtools: serving MCP on {url}\n"

        async def main() -> None:
            headers = {"Authorization": "Bearer s3cret"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                await exercise(client)
            async with httpx2.AsyncClient() as http:
                response = await http.post(
                    url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                )
                assert response.status_code == 401

        anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=120)


def test_binding_off_loopback_needs_a_token() -> None:
    done = subprocess.run(
        serve_command("--transport", "http", "--host", "0.0.0.0"),
        env={**server_env(), "LABTOOLS_TOKEN": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr


def test_default_virtual_lab_over_stdio() -> None:
    """What an MCP host gets from a bare `labtools serve`: the virtual lab's 27 tools."""

    async def main() -> None:
        async with Client(stdio_server(lab="virtual")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert len(names) == 27 and "spec_measure_absorbance" in names
            before = await state_of(client)
            bad = await client.call_tool(
                "lh_aspirate",
                {
                    "items": [
                        {
                            "channel": 0,
                            "well": "reservoir:A2",
                            "volume": {"value": 5, "unit": "liter"},
                        }
                    ]
                },
            )
            assert refusal(bad)["code"] == "unit_error"
            no_tip = await client.call_tool(
                "lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A2", "volume": UL}]}
            )
            assert refusal(no_tip)["code"] == "precondition_failed"
            assert await state_of(client) == before
            await client.call_tool("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
            moved = await client.call_tool(
                "lh_transfer",
                with_tip(0, "reservoir:A2", "plate_1:A1", UL),
            )
            assert not moved.is_error, moved.content[0].text
            after = await state_of(client)
            plate = next(lw for lw in after["lh"]["labware"] if lw["name"] == "plate_1")
            assert plate["wells"]["A1"] == 50.0

    anyio.run(main)


def test_the_python_client_validates_every_result_against_its_output_schema() -> None:
    """Output validation is on in the official Python client: a success that broke its tool's
    outputSchema would fail there, so the passing calls above were checked against theirs."""
    from faults import Liar

    from labtools import Lab

    async def main() -> None:
        with Lab([Liar("liar")]) as lab:
            async with Client(build_server(lab)) as client:
                refused = await client.call_tool("liar_fail", {"code": "busy"})
                assert refusal(refused)["code"] == "busy"  # errors are not held to the schema
                with pytest.raises(RuntimeError, match="liar_claim"):
                    await client.call_tool("liar_claim", {})

    anyio.run(main)


def test_read_only_serves_only_what_changes_nothing() -> None:
    """The kinetic read holds the reader for hours while reactions run; dark and reference
    acquisitions replace kept spectra: none of them is read-only."""
    from labtools import Lab

    with Lab.virtual(seed=0) as lab:
        served = {t["name"] for t in lab.tools("mcp", read_only=True)}
        hints = {t["name"]: t["annotations"] for t in lab.tools("mcp")}
    assert served == {
        "lh_get_deck",
        "reader_read_absorbance",
        "reader_read_absorbance_spectrum",
        "reader_get_data",
        "reader_read_fluorescence",
        "reader_read_luminescence",
        "reader_get_temperature",
        "spec_acquire_spectrum",
        "spec_measure_absorbance",
        "spec_get_data",
        "balance_weigh",
        "balance_get_info",
    }
    kinetic = hints["reader_read_absorbance_kinetic"]
    assert not kinetic["readOnlyHint"] and not kinetic["idempotentHint"]
    assert not kinetic["destructiveHint"]
    for name in ("spec_acquire_dark", "spec_acquire_reference"):
        assert not hints[name]["readOnlyHint"] and hints[name]["idempotentHint"]
