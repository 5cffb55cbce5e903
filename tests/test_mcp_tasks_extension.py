"""Long tool calls as MCP tasks on protocol 2026-07-28: the ``io.modelcontextprotocol/tasks``
extension, from the official Python client (its default protocol). The client declares the
extension with the SDK's ``advertise`` (stamped into every request's capabilities by the SDK);
``tools/call`` and ``tasks/*`` go through the session's ``send_request`` and come back as JSON,
since the SDK has no types for this extension. A real-time plate reader (PyLabRobot's
chatterbox) and the ``Slow`` test instrument, as in ``test_mcp_tasks``; the TypeScript
requester ``@modelcontextprotocol/ext-tasks`` runs in ``test_mcp_interop``."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from faults import Slow
from mcp import Client, MCPError
from mcp.client import ClaimContext, ClientExtension, ResultClaim, advertise
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import TypeAdapter
from test_mcp_tasks import KINETIC, NM405, kinetic, realtime_lab, until

from labtools import Lab
from labtools.server import build_server
from labtools.server.task_store import DEFAULT_TTL_MS, POLL_INTERVAL_MS
from labtools.server.tasks_extension import EXTENSION, RESULT_META, UpdateTaskRequestParams

JSON = TypeAdapter(dict[str, Any])
READ = {"plate": "plate_1", "wells": ["A1"], "wavelength": NM405}


class UpdateTaskRequest(types.Request[UpdateTaskRequestParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskRequestParams


class Tasks:
    """The extension's requests, through one client session."""

    def __init__(self, client: Client) -> None:
        self.session = client.session

    async def call(self, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        params = types.CallToolRequestParams(name=name, arguments=arguments, **extra)
        return await self.session.send_request(types.CallToolRequest(params=params), JSON)

    async def get(self, task_id: str) -> dict[str, Any]:
        params = types.GetTaskRequestParams(task_id=task_id)
        return await self.session.send_request(types.GetTaskRequest(params=params), JSON)

    async def cancel(self, task_id: str) -> dict[str, Any]:
        params = types.CancelTaskRequestParams(task_id=task_id)
        return await self.session.send_request(types.CancelTaskRequest(params=params), JSON)

    async def update(self, task_id: str) -> dict[str, Any]:
        params = UpdateTaskRequestParams(task_id=task_id, input_responses={})
        return await self.session.send_request(UpdateTaskRequest(params=params), JSON)

    async def settled(self, task_id: str) -> dict[str, Any]:
        """The task once it is over (polled)."""
        task: dict[str, Any] = {}

        async def over() -> bool:
            nonlocal task
            task = await self.get(task_id)
            return task["status"] != "working"

        await until(over)
        return task


Test = Callable[[Tasks, Client, Lab], Awaitable[None]]


def run_with(test: Test, *, declare: bool = True, lab: Lab | None = None, **options: Any) -> None:
    """Run ``test`` with a 2026-07-28 client that declares the extension (unless not
    ``declare``), on a server for ``lab`` (default: the real-time lab)."""

    async def main() -> None:
        served = lab if lab is not None else realtime_lab()
        options.setdefault("extensions", [advertise(EXTENSION)] if declare else None)
        try:
            async with Client(build_server(served), **options) as client:
                assert client.session.protocol_version == "2026-07-28"
                await test(Tasks(client), client, served)
        finally:
            served.close()

    anyio.run(main)


def missing_extension(error: MCPError) -> bool:
    required = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    return error.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY and error.error.data == required


def test_the_extension_is_advertised_and_the_core_tasks_are_not() -> None:
    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        capabilities = client.session.server_capabilities
        assert capabilities.extensions == {EXTENSION: {}}
        for method in ("tasks/result", "tasks/list"):  # 2025-11-25 only
            with pytest.raises(MCPError) as raised:
                await tasks.session._dispatcher.send_raw_request(method, {"taskId": "x"}, {})
            assert raised.value.error.code == types.METHOD_NOT_FOUND

    run_with(test)

    async def legacy() -> None:
        lab = realtime_lab()
        try:
            async with Client(build_server(lab), mode="legacy") as client:
                capabilities = client.session.server_capabilities
                assert capabilities.tasks is not None and not capabilities.extensions
                with pytest.raises(MCPError) as raised:
                    await client.session._dispatcher.send_raw_request(
                        "tasks/update", {"taskId": "x", "inputResponses": {}}, {}
                    )
                assert raised.value.error.code == types.METHOD_NOT_FOUND
        finally:
            lab.close()

    anyio.run(legacy)
    with Lab([]) as empty:  # no long-running tool: no tasks at all
        assert build_server(empty).extensions == {}


def test_a_task_only_when_the_request_declares_the_extension() -> None:
    async def declared(tasks: Tasks, client: Client, lab: Lab) -> None:
        task = await tasks.call(KINETIC, kinetic(1, 2), task={"ttl": 5})  # "task": ignored
        assert task["resultType"] == "task" and task["status"] == "working"
        assert task["ttlMs"] == DEFAULT_TTL_MS and task["pollIntervalMs"] == POLL_INTERVAL_MS
        assert len(task["taskId"]) > 32  # unguessable
        plain = await tasks.call("reader_read_absorbance", READ)  # not long-running
        assert plain["resultType"] == "complete" and not plain["isError"]
        assert (await tasks.settled(task["taskId"]))["status"] == "completed"

    async def undeclared(tasks: Tasks, client: Client, lab: Lab) -> None:
        ordinary = await client.call_tool(KINETIC, kinetic(1, 2))
        assert not ordinary.is_error and len(ordinary.structured_content["times"]) == 2
        with pytest.raises(MCPError) as raised:  # a tool that runs only as a task
            await client.call_tool("slow_count", {"steps": 1})
        assert missing_extension(raised.value)
        for request in (tasks.get, tasks.cancel, tasks.update):
            with pytest.raises(MCPError) as raised:
                await request("job-1")
            assert missing_extension(raised.value)
        assert len(lab.journal.events()) == 1  # the ordinary read only

    run_with(declared)
    run_with(undeclared, declare=False)


def test_a_task_is_polled_to_its_result() -> None:
    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        created = await tasks.call("slow_count", {"steps": 5})
        task = await tasks.settled(created["taskId"])
        assert task["status"] == "completed" and task["resultType"] == "complete"
        assert task["statusMessage"] == "slow_count: step 5 of 5"
        result = types.CallToolResult.model_validate(task["result"])
        assert result.structured_content == {"counted": 5} and not result.is_error
        assert task["result"]["resultType"] == "complete"  # as the call itself would answer
        assert await tasks.get(created["taskId"]) == task  # the result is kept, shaped once
        with pytest.raises(MCPError) as raised:
            await tasks.get("job-404")
        assert raised.value.error.code == types.INVALID_PARAMS
        assert (await tasks.update(created["taskId"]))["resultType"] == "complete"  # ignored

    run_with(test)


def test_a_cancelled_kinetic_read_stops_between_reads_and_keeps_its_reads() -> None:
    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        created = await tasks.call(KINETIC, kinetic(1, 240))
        task_id = created["taskId"]
        reads: set[int] = set()

        async def advanced() -> bool:
            task = await tasks.get(task_id)
            assert task["status"] == "working"
            if (read := re.search(r"read (\d+) of 240$", task["statusMessage"])) is not None:
                reads.add(int(read[1]))
            return len(reads) >= 2

        await until(advanced)
        assert (await tasks.cancel(task_id))["resultType"] == "complete"
        assert (await tasks.get(task_id))["status"] == "cancelled"  # at once
        task: dict[str, Any] = {}

        async def stopped() -> bool:
            nonlocal task
            task = await tasks.get(task_id)
            assert task["status"] == "cancelled" and "result" not in task
            return RESULT_META in task["_meta"]

        await until(stopped)
        result = types.CallToolResult.model_validate(task["_meta"][RESULT_META])
        times = result.structured_content["times"]
        assert not result.is_error and 2 <= len(times) < 240
        assert task["statusMessage"].endswith(f"stopped after {len(times)} of 240 reads")
        await tasks.cancel(task_id)  # over already: acknowledged, nothing changes
        assert await tasks.get(task_id) == task
        after = await client.call_tool("reader_read_absorbance", READ)  # the reader is free
        assert not after.is_error

    run_with(test)


def test_refusals_are_tool_errors() -> None:
    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        refused = await tasks.call(KINETIC, kinetic(1, 1))  # nothing runs: no task
        assert refused["resultType"] == "complete" and refused["isError"]
        assert refused["_meta"]["labtools/error"]["field"] == "/reads"
        failing = await tasks.call(KINETIC, {**kinetic(1, 2), "plate": "plate_9"})
        assert failing["resultType"] == "task"  # refused by the reader, as it runs
        task = await tasks.settled(failing["taskId"])
        assert task["status"] == "completed" and task["result"]["isError"]  # not "failed"
        assert task["result"]["_meta"]["labtools/error"]["code"] == "unknown_resource"
        assert len(lab.journal.events()) == 2

    run_with(test)


class Host:
    """Answers the confirmation form: ``accept`` or ``decline``."""

    def __init__(self, action: Literal["accept", "decline"]) -> None:
        self.action = action

    def answer(self, required: dict[str, Any]) -> dict[str, Any]:
        (key,) = required["inputRequests"]
        content = {"confirm": True} if self.action == "accept" else None
        return {key: types.ElicitResult(action=self.action, content=content)}

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("2026-07-28 asks in the call's result, not by a request")


def test_a_task_needing_confirmation_is_asked_before_it_exists() -> None:
    host = Host("decline")

    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        arguments = {"steps": 2}
        required = await tasks.call("slow_count", arguments)
        assert required["resultType"] == "input_required"
        state = {"request_state": required["requestState"]}
        refused = await tasks.call(
            "slow_count", arguments, input_responses=host.answer(required), **state
        )
        assert refused["isError"] and "not confirmed" in refused["content"][0]["text"]
        host.action = "accept"
        created = await tasks.call(
            "slow_count", arguments, input_responses=host.answer(required), **state
        )
        assert created["resultType"] == "task"
        task = await tasks.settled(created["taskId"])
        assert task["result"]["structuredContent"] == {"counted": 2}
        assert len(lab.journal.events()) == 1

    run_with(test, lab=Lab([Slow("slow")], confirm=["slow_count"]), elicitation_callback=host)


def test_tasks_are_served_in_the_generation_that_made_them() -> None:
    async def main() -> None:
        lab = realtime_lab()
        server = build_server(lab)
        try:
            async with (
                Client(server, extensions=[advertise(EXTENSION)]) as modern,
                Client(server, mode="legacy") as legacy,
            ):
                tasks = Tasks(modern)
                made = await tasks.call("slow_count", {"steps": 2})
                call = {"name": "slow_count", "arguments": {"steps": 2}, "task": {}}
                old = await legacy.session._dispatcher.send_raw_request("tools/call", call, {})
                listed = await legacy.session._dispatcher.send_raw_request("tasks/list", {}, {})
                assert [t["taskId"] for t in listed["tasks"]] == [old["task"]["taskId"]]
                with pytest.raises(MCPError) as raised:  # the 2026 task, asked on 2025
                    await legacy.session._dispatcher.send_raw_request(
                        "tasks/get", {"taskId": made["taskId"]}, {}
                    )
                assert raised.value.error.code == types.INVALID_PARAMS
                with pytest.raises(MCPError) as raised:  # and the other way round
                    await tasks.get(old["task"]["taskId"])
                assert raised.value.error.code == types.INVALID_PARAMS
                assert (await tasks.settled(made["taskId"]))["status"] == "completed"
        finally:
            lab.close()

    anyio.run(main)


class TaskHandle(types.Result):
    """The extension's task handle, as a Python client claims it."""

    result_type: Literal["task"]
    task_id: str


class TasksRequester(ClientExtension):
    """A requester on the SDK's claim hooks: ``call_tool`` polls a task to its result."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    @staticmethod
    async def resolve(handle: TaskHandle, context: ClaimContext) -> types.CallToolResult:
        params = types.GetTaskRequestParams(task_id=handle.task_id)
        task: dict[str, Any] = {}

        async def over() -> bool:
            nonlocal task
            request = types.GetTaskRequest(params=params)
            task = await context.session.send_request(request, JSON)
            return task["status"] != "working"

        await until(over)
        return types.CallToolResult.model_validate(task["result"])


def test_the_sdk_client_resolves_tasks_through_its_extension_hooks() -> None:
    async def test(tasks: Tasks, client: Client, lab: Lab) -> None:
        counted = await client.call_tool("slow_count", {"steps": 3})
        assert counted.structured_content == {"counted": 3}
        read = await client.call_tool(KINETIC, kinetic(1, 2))
        assert len(read.structured_content["times"]) == 2

    run_with(test, declare=False, extensions=[TasksRequester()])
