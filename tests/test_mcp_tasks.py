"""Long tool calls as MCP tasks (2025-11-25): the official Python client in legacy mode (the
SDK has no task API: task-augmented calls go through its dispatcher, ``tasks/*`` as typed
requests), a real-time plate reader (PyLabRobot's chatterbox) and the ``Slow`` test instrument;
then the MCP Inspector CLI, which runs a ``taskSupport: "required"`` tool as a task itself. On
2026-07-28, tasks are an extension: ``test_mcp_tasks_extension``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from faults import Slow
from mcp import Client, MCPError
from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.resources import cor_96_wellplate_360uL_Fb

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.server import build_server
from labtools.server.task_store import DEFAULT_TTL_MS, MAX_TTL_MS, TaskStore

TESTS = Path(__file__).parent
INSPECTOR = TESTS / "interop" / "node_modules" / ".bin" / "mcp-inspector"
KINETIC = "reader_read_absorbance_kinetic"
NM405 = {"value": 405, "unit": "nanometer"}


def kinetic(interval_s: float, reads: int) -> dict[str, Any]:
    return {
        "plate": "plate_1",
        "wells": ["A1"],
        "wavelength": NM405,
        "interval": {"value": interval_s, "unit": "second"},
        "reads": reads,
    }


def realtime_lab() -> Lab:
    reader = PlateReader(
        name="reader", size_x=1, size_y=1, size_z=1, backend=PlateReaderChatterboxBackend()
    )
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    return Lab([PLRPlateReader("reader", reader), Slow("slow")])


class Tasks:
    """The task requests of one client session."""

    def __init__(self, client: Client) -> None:
        self.session = client.session

    async def call(self, name: str, arguments: dict[str, Any], task: dict | None) -> dict:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if task is not None:
            params["task"] = task
        return await self.session._dispatcher.send_raw_request("tools/call", params, {})

    async def get(self, task_id: str) -> types.GetTaskResult:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return await self.session.send_request(request, types.GetTaskResult)

    async def result(self, task_id: str) -> types.CallToolResult:
        request = types.GetTaskPayloadRequest(
            params=types.GetTaskPayloadRequestParams(task_id=task_id)
        )
        return await self.session.send_request(request, types.CallToolResult)

    async def cancel(self, task_id: str) -> types.CancelTaskResult:
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        return await self.session.send_request(request, types.CancelTaskResult)

    async def list(self) -> types.ListTasksResult:
        return await self.session.send_request(types.ListTasksRequest(), types.ListTasksResult)


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "timed out"
        await anyio.sleep(0.02)


def run_with(test: Callable[[Client, Tasks, Lab], Awaitable[None]]) -> None:
    async def main() -> None:
        lab = realtime_lab()
        try:
            async with Client(build_server(lab), mode="legacy") as client:
                await test(client, Tasks(client), lab)
        finally:
            lab.close()

    anyio.run(main)


def test_capabilities_and_which_tools_run_as_tasks() -> None:
    async def test(client: Client, tasks: Tasks, lab: Lab) -> None:
        assert client.session.protocol_version == "2025-11-25"
        capability = client.session.server_capabilities.tasks
        assert capability is not None and capability.cancel is not None
        assert capability.list is not None and capability.requests.tools.call is not None
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed[KINETIC].execution.task_support == "optional"
        assert listed["slow_count"].execution.task_support == "required"
        assert listed["reader_read_absorbance"].execution is None

    run_with(test)


def test_a_task_answers_at_once_reports_progress_and_is_cancelled_between_reads() -> None:
    async def test(client: Client, tasks: Tasks, lab: Lab) -> None:
        created = await tasks.call(KINETIC, kinetic(1, 240), {"ttl": 60_000})
        task = types.CreateTaskResult.model_validate(created).task
        assert task.status == "working" and task.ttl == 60_000 and task.poll_interval
        reads: list[int] = []

        async def advanced() -> bool:
            got = await tasks.get(task.task_id)
            assert got.status == "working"
            done = int(got.status_message.rsplit("read ", 1)[-1].split(" of")[0] or 0)
            if got.status_message.endswith("of 240") and (not reads or done > reads[-1]):
                reads.append(done)
            return len(reads) >= 2

        await until(advanced)
        listed = (await tasks.list()).tasks
        assert [t.task_id for t in listed] == [task.task_id]
        cancelled = await tasks.cancel(task.task_id)
        assert cancelled.status == "cancelled"  # at once, as the protocol requires
        with pytest.raises(MCPError):
            await tasks.cancel(task.task_id)  # already cancelled
        result = await tasks.result(task.task_id)  # once the read under way has finished
        assert not result.is_error
        times = result.structured_content["times"]
        assert 2 <= len(times) < 240
        assert result.meta["io.modelcontextprotocol/related-task"] == {"taskId": task.task_id}
        final = await tasks.get(task.task_id)
        assert final.status == "cancelled"
        assert final.status_message.endswith(f"stopped after {len(times)} of 240 reads")
        # the reader is free again
        after = await client.call_tool(
            "reader_read_absorbance", {"plate": "plate_1", "wells": ["A1"], "wavelength": NM405}
        )
        assert not after.is_error

    run_with(test)


def test_a_task_runs_to_completion_and_its_result_is_the_tool_result() -> None:
    async def test(client: Client, tasks: Tasks, lab: Lab) -> None:
        created = await tasks.call("slow_count", {"steps": 5}, {})
        task = types.CreateTaskResult.model_validate(created).task
        assert task.ttl == DEFAULT_TTL_MS
        result = await tasks.result(task.task_id)
        assert result.structured_content == {"counted": 5}
        got = await tasks.get(task.task_id)
        assert got.status == "completed" and got.status_message == "slow_count: step 5 of 5"

    run_with(test)


def test_refused_and_unknown_tasks() -> None:
    async def test(client: Client, tasks: Tasks, lab: Lab) -> None:
        refused = await tasks.call(KINETIC, kinetic(1, 1), {"ttl": 10**12})
        task = types.CreateTaskResult.model_validate(refused).task
        assert task.status == "failed" and task.ttl == MAX_TTL_MS  # nothing ran
        result = await tasks.result(task.task_id)
        assert result.is_error and result.meta["labtools/error"]["field"] == "/reads"
        with pytest.raises(MCPError):
            await tasks.get("job-404")
        # a tool that runs only as a task, called without one
        plain = await client.call_tool("slow_count", {"steps": 1})
        assert plain.is_error and plain.meta["labtools/error"]["code"] == "not_supported"
        # an optional one, called without a task, is an ordinary call
        ordinary = await client.call_tool(KINETIC, kinetic(1, 2))
        assert not ordinary.is_error and len(ordinary.structured_content["times"]) == 2
        assert len(lab.journal.events()) == 2

    run_with(test)


def test_the_store_keeps_tasks_for_their_ttl_and_a_bounded_number_finished() -> None:
    lab = realtime_lab()
    try:
        store = TaskStore(keep=3)
        jobs = [lab.start("slow_count", {"steps": "many"}) for _ in range(5)]  # refused: done
        for job in jobs:
            store.add(job, 60_000)
        assert [e.job for e in store.entries()] == jobs[:1:-1]  # the newest three
        store.entries()[0].created -= 61
        assert [e.job for e in store.entries()] == jobs[3:1:-1]
        running = lab.start("slow_count", {"steps": 100_000})
        store.add(running, 1)
        store.entries()[0].created -= 10
        assert store.entries()[0].job is running  # never dropped while it runs
        running.cancel()
        running.result(timeout=30)
        assert running not in [e.job for e in store.entries()]
    finally:
        lab.close()


def test_a_2026_client_calls_long_tools_as_ordinary_calls() -> None:
    async def main() -> None:
        lab = realtime_lab()
        try:
            async with Client(build_server(lab)) as client:
                assert client.session.protocol_version == "2026-07-28"
                result = await client.call_tool(KINETIC, kinetic(1, 2))
                assert not result.is_error and len(result.structured_content["times"]) == 2
        finally:
            lab.close()

    anyio.run(main)


@pytest.mark.skipif(
    not (INSPECTOR.exists() and shutil.which("node")), reason="the Inspector is not installed"
)
def test_the_inspector_runs_a_required_task_tool_as_a_task(tmp_path: Path) -> None:
    lab_file = tmp_path / "slow_lab.toml"
    lab_file.write_text('[instruments.slow]\nclass = "faults:Slow"\n', encoding="utf-8")
    labtools = Path(sys.executable).with_name("labtools")
    run = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            "--method",
            "tools/call",
            "--tool-name",
            "slow_count",
            "--tool-args-json",
            json.dumps({"steps": 30}),
            "-e",
            f"PYTHONPATH={TESTS}",
            "--",
            str(labtools),
            "serve",
            "--lab",
            str(lab_file),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=INSPECTOR.parents[2],
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["structuredContent"] == {"counted": 30}
    assert not answer.get("isError")
