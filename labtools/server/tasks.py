"""Long tool calls as MCP tasks (protocol 2025-11-25), served with what the SDK provides.

A tool declared ``long_running`` lists ``execution.taskSupport: "optional"`` (``"required"``:
only as a task). A ``tools/call`` carrying ``task`` is answered at once with a
``CreateTaskResult``; the call runs as a :class:`labtools.jobs.Job` on the server's event loop,
beside the server's other calls (same instrument locks). Then:

- ``tasks/get`` — the task: ``working``, ``completed``, ``failed`` (the tool refused or failed:
  ``isError``) or ``cancelled``; ``statusMessage`` is the instrument's latest progress report
  (``read 3 of 10``). ``notifications/tasks/status`` on every change, and
  ``notifications/progress`` against the call's ``progressToken`` if it had one;
- ``tasks/result`` — waits until the work has stopped, then the ``CallToolResult``;
- ``tasks/cancel`` — ``cancelled`` at once; the work stops as :mod:`labtools.jobs` says (a
  kinetic read between reads, keeping its reads: ``tasks/result`` then returns them);
- ``tasks/list`` — the tasks kept, newest first.

A task is kept for its ``ttl`` (requested, clamped to :data:`MAX_TTL_MS`; default
:data:`DEFAULT_TTL_MS`) from its creation, and never deleted while it runs; at most
:data:`KEEP_FINISHED` finished tasks are kept (oldest dropped first), and at most
:data:`MAX_RUNNING` run at once (more are refused with ``busy``).

The SDK (2.3.0) has the task types only. A low-level ``tools/call`` handler cannot return a
``CreateTaskResult`` (the runner validates it as a ``CallToolResult``), so a server middleware
answers task-augmented calls before the handler, and also adds ``capabilities.tasks`` to the
``initialize`` result; the ``tasks/*`` methods are added with ``Server.add_request_handler``.
On 2026-07-28 connections (where tasks are the ``io.modelcontextprotocol/tasks`` extension,
not served here) a ``task`` field is ignored and the call runs as an ordinary call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, cast

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from labtools.errors import Busy, NotSupported, ToolError
from labtools.jobs import Job, start_job
from labtools.lab import Lab
from labtools.result import ToolResult
from labtools.server.confirm import Confirmation

__all__ = [
    "DEFAULT_TTL_MS",
    "KEEP_FINISHED",
    "MAX_RUNNING",
    "MAX_TTL_MS",
    "POLL_INTERVAL_MS",
    "TaskStore",
    "install",
]

log = logging.getLogger(__name__)

DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 24 * 3_600_000
POLL_INTERVAL_MS = 1000
KEEP_FINISHED = 64
MAX_RUNNING = 16
#: the one protocol version with tasks in its core (later: the tasks extension)
TASKS_VERSION = "2025-11-25"
RELATED_TASK = "io.modelcontextprotocol/related-task"

ResultOf = Callable[[ToolResult], types.CallToolResult]
TaskSupport = Literal["optional", "required"]


class _Entry:
    def __init__(self, job: Job, ttl_ms: int) -> None:
        self.job = job
        self.ttl_ms = ttl_ms
        self.created = time.time()


class TaskStore:
    """The server's tasks, bounded: kept for their TTL, at most ``keep`` finished ones."""

    def __init__(self, *, keep: int = KEEP_FINISHED, max_running: int = MAX_RUNNING) -> None:
        self.keep = keep
        self.max_running = max_running
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def add(self, job: Job, ttl_ms: int) -> _Entry:
        entry = self._entries[job.id] = _Entry(job, ttl_ms)
        self.prune()
        return entry

    def running(self) -> int:
        return sum(not e.job.status().finished for e in self._entries.values())

    def get(self, task_id: str) -> _Entry:
        self.prune()
        entry = self._entries.get(task_id)
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"no task {task_id[:80]!r} (or it expired)")
        return entry

    def entries(self) -> list[_Entry]:
        self.prune()
        return list(reversed(self._entries.values()))

    def prune(self) -> None:
        now = time.time()
        finished = [e for e in self._entries.values() if e.job.status().finished]
        expired = {e.job.id for e in finished if now - e.created > e.ttl_ms / 1000}
        surplus = [e.job.id for e in finished if e.job.id not in expired]
        expired.update(surplus[: max(len(surplus) - self.keep, 0)])
        for task_id in expired:
            del self._entries[task_id]


def install(
    server: Server[Any],
    lab: object,
    tools: list[types.Tool],
    exposed: set[str],
    result_of: ResultOf,
    confirmation: Confirmation | None = None,
) -> list[types.Tool]:
    """Serve tasks on ``server`` for the long-running tools among ``exposed`` (a :class:`Lab`
    only: a session's calls go through its budget, so it serves none) and return ``tools``
    with their ``execution`` set. ``result_of`` shapes a tool result as the server does."""
    if not isinstance(lab, Lab):
        return tools
    support: dict[str, TaskSupport] = {
        s.name: "required" if s.hints.task_required else "optional"
        for s in lab.tool_specs()
        if s.hints.long_running and s.name in exposed
    }
    if not support:
        return tools
    store = TaskStore()
    server.middleware.append(_Middleware(lab, store, support, result_of, confirmation))

    async def get(ctx: ServerRequestContext, params: types.GetTaskRequestParams) -> HandlerResult:
        return _dump(
            types.GetTaskResult.model_validate(_task(store.get(params.task_id)).model_dump())
        )

    async def result(
        ctx: ServerRequestContext, params: types.GetTaskPayloadRequestParams
    ) -> HandlerResult:
        entry = store.get(params.task_id)
        outcome = await entry.job.wait()
        payload = _dump(result_of(outcome))
        payload["_meta"] = {**payload.get("_meta", {}), RELATED_TASK: {"taskId": entry.job.id}}
        return payload

    async def cancel(
        ctx: ServerRequestContext, params: types.CancelTaskRequestParams
    ) -> HandlerResult:
        entry = store.get(params.task_id)
        if not entry.job.cancel():
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"task {entry.job.id} is already {entry.job.state}",
            )
        return _dump(types.CancelTaskResult.model_validate(_task(entry).model_dump()))

    async def listing(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams
    ) -> HandlerResult:
        return _dump(types.ListTasksResult(tasks=[_task(e) for e in store.entries()]))

    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, listing)
    return [
        tool.model_copy(update={"execution": types.ToolExecution(task_support=support[tool.name])})
        if tool.name in support
        else tool
        for tool in tools
    ]


class _Middleware:
    """Adds ``capabilities.tasks`` to ``initialize``; answers task-augmented ``tools/call``."""

    def __init__(
        self,
        lab: Lab,
        store: TaskStore,
        support: dict[str, TaskSupport],
        result_of: ResultOf,
        confirmation: Confirmation | None,
    ) -> None:
        self.lab = lab
        self.store = store
        self.support = support
        self.result_of = result_of
        self.confirmation = confirmation

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method == "initialize":
            answer = await call_next(ctx)
            if isinstance(answer, dict) and answer.get("protocolVersion") == TASKS_VERSION:
                capabilities = answer.setdefault("capabilities", {})
                capabilities["tasks"] = _dump(CAPABILITY)
            return answer
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            or not isinstance(params, Mapping)
            or params.get("name") not in self.support
        ):
            return await call_next(ctx)
        name = cast(str, params["name"])
        task = params.get("task")
        if not isinstance(task, Mapping):
            if task is None and self.support[name] == "required":
                return self._refuse(
                    NotSupported(
                        f"{name} runs only as a task",
                        hint="call it with a 'task' field (MCP tasks, protocol 2025-11-25)",
                    )
                )
            return await call_next(ctx)  # an ordinary call, or a malformed one to refuse
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        if self.store.running() >= self.store.max_running:
            return self._refuse(
                Busy(
                    f"{self.store.max_running} tasks are running already",
                    hint="wait for one to finish (tasks/get) or cancel one (tasks/cancel)",
                )
            )
        if self.confirmation is not None:
            refusal = await self.confirmation.ask(ctx, name, arguments)
            if isinstance(refusal, ToolResult):
                return _dump(self.result_of(refusal))
            if refusal is not None:  # an InputRequiredResult: 2026-07-28 only, not here
                return _dump(refusal)
        job = start_job(self.lab, name, arguments, asyncio.get_running_loop())
        entry = self.store.add(job, _ttl(task.get("ttl")))
        job.watch(_Reporter(ctx, entry, _progress_token(params)))
        return _dump(types.CreateTaskResult(task=_task(entry)))

    def _refuse(self, error: ToolError) -> dict[str, Any]:
        return _dump(self.result_of(ToolResult.failure(error)))


CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)


class _Reporter:
    """Tells the client of a task's progress and changes of state (best effort: a client that
    went away misses them)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], entry: _Entry, token: Any) -> None:
        self.session = ctx.session
        self.entry = entry
        self.token = token
        self.last: tuple[Any, ...] | None = None

    async def __call__(self, job: Job) -> None:
        status = job.status()
        seen = (status.state, status.done, status.message, status.finished)
        if seen == self.last:
            return
        self.last = seen
        try:
            if self.token is not None and status.done is not None:
                await self.session.send_progress_notification(
                    self.token, status.done, status.total, status.message
                )
            notice = types.TaskStatusNotification(
                params=types.TaskStatusNotificationParams.model_validate(
                    _task(self.entry).model_dump()
                )
            )
            await self.session.send_notification(cast(types.ServerNotification, notice))
        except Exception as exc:  # the client has gone; the task goes on
            log.debug("task %s: status not delivered (%s)", job.id, exc)


def _task(entry: _Entry) -> types.Task:
    job = entry.job
    status = job.status()
    if status.state == "cancelled" and not status.finished:
        message = "cancelled; stopping at the next safe point"
    elif status.message is not None:
        message = status.message
    else:
        message = {"working": "running", "completed": "done", "failed": "failed"}.get(
            status.state, status.state
        )
    return types.Task(
        task_id=job.id,
        status=status.state,
        status_message=f"{job.name}: {message}",
        created_at=_iso(job.created_at),
        last_updated_at=_iso(job.updated_at),
        ttl=entry.ttl_ms,
        poll_interval=POLL_INTERVAL_MS,
    )


def _ttl(requested: object) -> int:
    if isinstance(requested, bool) or not isinstance(requested, int | float) or requested <= 0:
        return DEFAULT_TTL_MS
    return int(min(requested, MAX_TTL_MS))


def _progress_token(params: Mapping[str, Any]) -> Any:
    meta = params.get("_meta")
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _dump(model: types.Result | types.ServerTasksCapability) -> dict[str, Any]:
    dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    if "ttl" in type(model).model_fields and "ttl" not in dumped:
        dumped["ttl"] = None  # required on the wire, even when unlimited
    dumped.pop("resultType", None)  # a 2025-11-25 result has none
    return dumped
