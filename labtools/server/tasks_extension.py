"""MCP tasks on protocol 2026-07-28: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

The server advertises it under ``capabilities.extensions`` (``server/discover``). When a request
declares it in its own capabilities (``_meta["io.modelcontextprotocol/clientCapabilities"]``),
a ``tools/call`` of a long-running tool is answered at once with a task handle
(``resultType: "task"``) and runs as a job, as in 2025-11-25 (:mod:`labtools.server.tasks`:
the same store, limits and TTL; a ``task`` field in the call is ignored, as the extension
requires). Then:

- ``tasks/get`` — the task: ``working``, with the instrument's latest progress as
  ``statusMessage``; ``completed``, with the ``CallToolResult`` as ``result`` (also when the
  tool refused or failed: ``isError``; the extension keeps ``failed`` for JSON-RPC errors);
  or ``cancelled``;
- ``tasks/cancel`` — acknowledged, and the task is ``cancelled`` at once; the work stops as
  :mod:`labtools.jobs` says. A kinetic read stops between reads and keeps its reads: once the
  work has stopped, the cancelled task carries that result under ``_meta["labtools/result"]``;
- ``tasks/update`` — acknowledged; no task here waits for input (a confirmation the lab needs
  is asked before the task exists, through the call's own ``input_required`` round trip).

A call that cannot start (arguments refused, too many tasks running, lab not built, not
confirmed) is answered at once as a tool error, with no task. A request that does not declare
the extension gets an ordinary call, except of a tool that runs only as a task: error
``-32021`` (missing required client capability), as for ``tasks/*``. Task status is not pushed
(``notifications/tasks``): clients poll, every ``pollIntervalMs``.

The SDK provides the extension interface (:class:`~mcp.server.extension.Extension`, methods
bound to protocol versions, the ``tools/call`` interceptor) and the capability check; the task
shapes, which ``mcp_types`` lacks for this protocol, are written here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from labtools.result import ToolResult

if TYPE_CHECKING:
    from labtools.server.task_store import TaskEntry, Tasks, TaskView

__all__ = ["EXTENSION", "RESULT_META", "TasksExtension", "UpdateTaskRequestParams"]

EXTENSION = "io.modelcontextprotocol/tasks"
#: the ``_meta`` key of a cancelled task's result (a kinetic read's reads taken)
RESULT_META = "labtools/result"
VERSIONS = frozenset(MODERN_PROTOCOL_VERSIONS)


class UpdateTaskRequestParams(types.RequestParams):
    """``tasks/update``: responses to a task's outstanding input requests."""

    task_id: str
    input_responses: dict[str, Any] = Field(default_factory=dict)


class TasksExtension(Extension):
    """The tasks extension over the jobs of ``tasks``."""

    identifier = EXTENSION

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", types.GetTaskRequestParams, self.get, VERSIONS),
            MethodBinding("tasks/update", UpdateTaskRequestParams, self.update, VERSIONS),
            MethodBinding("tasks/cancel", types.CancelTaskRequestParams, self.cancel, VERSIONS),
        ]

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        support = self.tasks.support(params.name)
        if support is None or ctx.protocol_version not in VERSIONS:
            return await call_next(ctx)
        if not _declared(ctx):
            if support == "required":
                require_client_extension(ctx, EXTENSION)
            return await call_next(ctx)
        arguments = params.arguments if params.arguments is not None else {}
        outcome = await self.tasks.begin(ctx, params.name, arguments, params)
        if isinstance(outcome, types.InputRequiredResult):
            return outcome
        if isinstance(outcome, ToolResult):
            return self.tasks.result_of(outcome)
        if outcome.status().finished:  # refused: nothing ran, so there is no task to keep
            return self.tasks.result_of(await outcome.wait())
        entry = self.tasks.store.add(outcome, modern=True)
        return {**_task(entry.view()), "resultType": "task"}

    async def get(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> HandlerResult:
        entry = self._entry(ctx, params.task_id)
        view = entry.view()
        task = _task(view)
        if view.finished:
            result = _wire(ctx, await entry.result(self.tasks.result_of))
            if task["status"] == "completed":
                task["result"] = result
            else:
                task["_meta"] = {RESULT_META: result}
        return task

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskRequestParams
    ) -> HandlerResult:
        self._entry(ctx, params.task_id)  # no input is ever outstanding: responses are ignored
        return {}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
    ) -> HandlerResult:
        self._entry(ctx, params.task_id).job.cancel()  # a task already over stays as it is
        return {}

    def _entry(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskEntry:
        require_client_extension(ctx, EXTENSION)
        return self.tasks.store.get(task_id, modern=True)


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's capabilities declare the extension."""
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return extensions is not None and EXTENSION in extensions


def _task(view: TaskView) -> dict[str, Any]:
    """The extension's ``Task``. A job that ``failed`` returned a tool error: ``completed``."""
    return {
        "taskId": view.task_id,
        "status": "completed" if view.status == "failed" else view.status,
        "statusMessage": view.message,
        "createdAt": view.created_at,
        "lastUpdatedAt": view.updated_at,
        "ttlMs": view.ttl_ms,
        "pollIntervalMs": view.poll_interval_ms,
    }


def _wire(ctx: ServerRequestContext[Any, Any], result: types.CallToolResult) -> dict[str, Any]:
    """``result`` as the ``tools/call`` itself would have answered at this protocol version."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return serialize_server_result("tools/call", ctx.protocol_version, dumped)
