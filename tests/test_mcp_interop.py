"""Interoperability with MCP clients this project did not write, over stdio and streamable HTTP:

- the MCP Inspector CLI (``@modelcontextprotocol/inspector``), which validates every result
  against the tool's ``outputSchema`` as the TypeScript SDK does;
- the TypeScript SDK's own client (``@modelcontextprotocol/client``, what Claude Desktop, Claude
  Code, Cursor and VS Code are built on), for a call the Inspector refuses before sending;
- the tasks extension's TypeScript requester (``@modelcontextprotocol/ext-tasks``) on that
  client at protocol 2026-07-28, for long tool calls as tasks (a lab of its own: a real-time
  plate reader and the ``Slow`` test instrument).

All are pinned in ``tests/interop/package.json`` and installed by ``make`` with the machine's
npm. The lab is the virtual lab with ``plate_2`` starting in the reader (so that one call can
read it), both plates believed full (so that the deck view is summarised) and the ``faults``
test instrument, for the error codes a fresh virtual lab does not produce from one call.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from faults import RAISED
from mcp_helpers import SERVER_START_S, free_port, virtual_lab_file, wait_for_port

from labtools.errors import ERROR_CODES

TESTS = Path(__file__).parent
INTEROP = TESTS / "interop"
INSPECTOR = INTEROP / "node_modules" / ".bin" / "mcp-inspector"
LABTOOLS = Path(sys.executable).with_name("labtools")
NM = "nanometer"
UL = {"value": 50, "unit": "microliter"}
#: the longest a client's run may take on a loaded machine (s; 4–10 s idle)
RUN_S = 600


@pytest.fixture(scope="module", autouse=True)
def clients() -> None:
    if INSPECTOR.exists() and shutil.which("node"):
        return
    reason = "the Node MCP clients are not installed (make test installs them with npm)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return virtual_lab_file(
        tmp_path_factory.mktemp("interop") / "interop_lab.toml",
        in_reader="plate_2",
        full_plates=("plate_1", "plate_2"),  # the deck view is then too long to give inline
        extra='\n[instruments.faults]\nclass = "faults:Faults"\n',
    )


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(TESTS)}


@pytest.fixture(scope="module")
def http_url(lab_file: Path) -> Iterator[str]:
    with _http_server(lab_file) as url:
        yield url


@contextmanager
def _http_server(lab_file: Path) -> Iterator[str]:
    """``labtools serve --transport http`` for ``lab_file``, while in the block: its URL."""
    port = free_port()
    command = [str(LABTOOLS), "serve", "--lab", str(lab_file), "--transport", "http"]
    with tempfile.TemporaryFile("w+") as log:  # a file: a pipe nobody reads fills and blocks
        server = subprocess.Popen([*command, "--port", str(port)], env=_env(), stderr=log)
        try:
            wait_for_port(port, server, log)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.terminate()
            server.wait(timeout=RUN_S)


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, lab_file: Path) -> list[str]:
    """How a client reaches the server: the command it spawns, or the URL."""
    if request.param == "http":
        return [request.getfixturevalue("http_url")]
    return [str(LABTOOLS), "serve", "--lab", str(lab_file)]


def inspector(target: list[str], method: str, *options: str) -> tuple[int, Any, str]:
    """Run the Inspector CLI once: its exit code, its stdout as JSON (or None), its stderr."""
    environment = ["-e", f"PYTHONPATH={TESTS}"] if len(target) > 1 else []
    # its own ceiling for the server's start (15 s) is too short for a loaded machine
    options = (*options, "--connect-timeout", f"{SERVER_START_S * 1000:.0f}", *environment)
    run = subprocess.run(
        [str(INSPECTOR), "--cli", "--method", method, *options, "--", *target],
        capture_output=True,
        text=True,
        timeout=RUN_S,
        env=_env(),
        cwd=INTEROP,
    )
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else None, run.stderr


def call(target: list[str], name: str, arguments: dict[str, Any]) -> tuple[int, Any, str]:
    return inspector(
        target, "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(arguments)
    )


# -- what every host lists -------------------------------------------------------------------
def test_tools_list_is_portable_and_complete(target: list[str]) -> None:
    code, listed, stderr = inspector(target, "tools/list", "--strict")
    assert code == 0, stderr  # --strict: exit 6 on any schema-portability error
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert len(tools) == 28 and {"lh_aspirate", "reader_read_absorbance", "faults_fail"} <= set(
        tools
    )
    assert all(t["inputSchema"]["additionalProperties"] is False for t in tools.values())
    assert all("outputSchema" in t for t in tools.values())


# -- a valid call per instrument: the client validated the result against its outputSchema ---
VALID = {
    "lh": ("lh_get_deck", {}, "labware"),
    "reader": (
        "reader_read_absorbance",
        {"plate": "plate_2", "wavelength": {"value": 450, "unit": NM}, "wells": ["A1", "B1"]},
        "values",
    ),
    "spec": (
        "spec_set_integration_time",
        {"time": {"value": 20, "unit": "millisecond"}},
        "integration_time",
    ),
    "balance": ("balance_weigh", {"mode": "immediate"}, "mass"),
}


@pytest.mark.parametrize("instrument", sorted(VALID))
def test_a_valid_call_per_instrument(target: list[str], instrument: str) -> None:
    name, arguments, key = VALID[instrument]
    code, result, stderr = call(target, name, arguments)
    assert code == 0, stderr
    assert not result.get("isError")
    assert key in result["structuredContent"]
    text = result["content"][0]["text"]
    if instrument == "lh":  # a deck with a full plate: a summary and a link to the whole
        link = result["content"][1]
        assert link["type"] == "resource_link" and link["uri"].startswith("labtools://result/")
        summary = json.loads(text[: text.index(" (summarised")])
        assert [lw["name"] for lw in summary["labware"]] == [
            lw["name"] for lw in result["structuredContent"]["labware"]
        ]
    else:
        assert json.loads(text) == result["structuredContent"]


# -- one refusal of each error code: seen as an error, with code, field and hint in the text ---
REFUSALS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "invalid_arguments": ("lh_get_deck", {"plate": "plate_1"}, "/plate"),
    "unit_error": (
        "lh_aspirate",
        {
            "items": [
                {"channel": 0, "well": "reservoir:A2", "volume": {"value": 5, "unit": "liter"}}
            ]
        },
        "/items/0/volume/unit",
    ),
    "out_of_range": (
        "lh_aspirate",
        {
            "items": [
                {"channel": 0, "well": "reservoir:A2", "volume": {"value": 5, "unit": "milliliter"}}
            ]
        },
        "/items/0/volume",
    ),
    "unknown_resource": ("lh_pick_up_tips", {"tip_rack": "tips_5ul", "channels": [0]}, None),
    "precondition_failed": (
        "lh_aspirate",
        {"items": [{"channel": 0, "well": "reservoir:A2", "volume": UL}]},
        None,
    ),
    "interlock": ("lh_move_plate", {"plate": "plate_1", "destination": "reader"}, "/destination"),
    **{code: ("faults_fail", {"code": code}, None) for code in (*RAISED, "instrument_error")},
}


def test_the_refusals_cover_every_error_code() -> None:
    assert set(REFUSALS) | {"unknown_tool"} == ERROR_CODES


@pytest.mark.parametrize("expected", sorted(REFUSALS))
def test_each_refusal_reaches_the_client_as_a_tool_error(target: list[str], expected: str) -> None:
    name, arguments, field = REFUSALS[expected]
    code, result, stderr = call(target, name, arguments)
    assert code == 5, stderr  # the Inspector's exit code for a tool result with isError
    assert "tool_is_error" in stderr and "Structured content" not in stderr
    assert result["isError"] is True and "structuredContent" not in result
    error = result["_meta"]["labtools/error"]
    assert error["code"] == expected
    text = result["content"][0]["text"]
    assert text.startswith(f"{expected}: {error['message']}")
    if field is not None:
        assert error["field"] == field and f"(field {field})" in text
    assert error["hint"] and text.endswith(f"Hint: {error['hint']}")


def test_an_unknown_tool_reaches_the_typescript_client_as_a_tool_error(target: list[str]) -> None:
    # The Inspector checks names against tools/list and never sends this call; the SDK does.
    run = subprocess.run(
        ["node", str(INTEROP / "call_tool.mjs"), "lh_aspirat", "{}", *target],
        capture_output=True,
        text=True,
        timeout=RUN_S,
        env=_env(),
        cwd=INTEROP,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["isError"] is True and "structuredContent" not in result
    assert result["_meta"]["labtools/error"]["code"] == "unknown_tool"
    assert result["content"][0]["text"].startswith(
        "unknown_tool: no tool named 'lh_aspirat'. Hint: did you mean lh_aspirate"
    )
    code, _, stderr = call(target, "lh_aspirat", {})
    assert code == 5 and "tool_not_found" in stderr  # what the Inspector says instead


# -- resources -------------------------------------------------------------------------------
def test_resources_list_and_read(target: list[str]) -> None:
    code, listed, stderr = inspector(target, "resources/list")
    assert code == 0, stderr
    uris = {r["uri"] for r in listed["resources"]}
    assert {"labtools://state", "labtools://instrument/lh"} <= uris
    code, read, stderr = inspector(target, "resources/read", "--uri", "labtools://state")
    assert code == 0, stderr
    state = json.loads(read["contents"][0]["text"])
    assert "lh" in state and "clock_s" in state


def test_an_unknown_resource_is_a_protocol_error(target: list[str]) -> None:
    code, _, stderr = inspector(target, "resources/read", "--uri", "labtools://nothing")
    assert code == 1
    assert json.loads(stderr.strip().splitlines()[-1])["error"]["message"] == (
        "Resource not found: labtools://nothing"
    )


# -- long calls as tasks (protocol 2026-07-28, the io.modelcontextprotocol/tasks extension) ----
TASKS_LAB = """
[shared.world]
class = "labtools.simulators.world:World"

[shared.reader_backend]
class = "pylabrobot.plate_reading:PlateReaderChatterboxBackend"

[shared.deck]
class = "labtools.simulators.deck:virtual_deck"
world = "@world"
reader_backend = "@reader_backend"
in_reader = "plate_1"

[instruments.reader]
class = "labtools.drivers.pylabrobot.plate_reader:PLRPlateReader"
reader = "@deck.reader"

[instruments.slow]
class = "faults:Slow"
"""


@pytest.fixture(scope="module")
def tasks_lab_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab in real time (no virtual clock): the reader's kinetic read takes its seconds."""
    path = tmp_path_factory.mktemp("interop_tasks") / "tasks_lab.toml"
    path.write_text(TASKS_LAB, encoding="utf-8")
    return path


@pytest.fixture(params=["stdio", "http"])
def tasks_target(request: pytest.FixtureRequest, tasks_lab_file: Path) -> Iterator[list[str]]:
    if request.param == "http":
        with _http_server(tasks_lab_file) as url:
            yield [url]
    else:
        yield [str(LABTOOLS), "serve", "--lab", str(tasks_lab_file)]


def test_the_tasks_extension_requester_runs_follows_and_cancels_long_calls(
    tasks_target: list[str],
) -> None:
    run = subprocess.run(
        ["node", str(INTEROP / "tasks_extension.mjs"), *tasks_target],
        capture_output=True,
        text=True,
        timeout=RUN_S,
        env=_env(),
        cwd=INTEROP,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["protocolVersion"] == "2026-07-28" and seen["extension"] == {}
    # a kinetic read of 240 reads: a task, seen working with its progress, then cancelled
    long = seen["long"]
    assert long["kind"] == "task" and long["outcome"] == "cancelled"
    progress = [p for p in long["progress"] if re.fullmatch(r"working: \S+: read \d+ of 240", p)]
    assert len(set(progress)) >= 2, long["progress"]
    final = long["final"]
    times = final["result"]["structuredContent"]["times"]
    assert final["status"] == "cancelled" and not final["result"]["isError"]
    assert 2 <= len(times) < 240
    assert final["statusMessage"].endswith(f"stopped after {len(times)} of 240 reads")
    # run to completion: their results, as the tools give them
    short, count = seen["short"], seen["count"]
    assert short["kind"] == "task" and short["status"] == "completed"
    assert short["statusMessage"].endswith("read 2 of 2")
    assert len(short["result"]["structuredContent"]["times"]) == 2
    assert count["kind"] == "task" and count["status"] == "completed"
    assert count["result"]["structuredContent"] == {"counted": 10}
    # refused: no task, a tool error at once
    refused = seen["refused"]
    assert refused["kind"] == "immediate" and refused["result"]["isError"] is True
    assert refused["result"]["_meta"]["labtools/error"]["field"] == "/reads"
