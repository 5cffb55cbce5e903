"""Long tool calls as MCP tasks, in both protocol generations, over one store of jobs.

A tool declared ``long_running`` lists ``execution.taskSupport: "optional"`` (``"required"``:
only as a task). Run as a task, the call is a :class:`labtools.jobs.Job` on the server's event
loop, beside the server's other calls (same instrument locks), kept in one :class:`TaskStore`
whichever protocol created it:

- protocol 2025-11-25, where tasks are core (here): a ``tools/call`` carrying ``task`` is
  answered at once with a ``CreateTaskResult``. ``tasks/get`` gives ``working``,
  ``completed``, ``failed`` (the tool refused or failed: ``isError``) or ``cancelled``, with the
  instrument's latest progress report as ``statusMessage`` (``read 3 of 10``);
  ``notifications/tasks/status`` follow every change, and ``notifications/progress`` the
  call's ``progressToken`` if it had one. ``tasks/result`` waits until the work has stopped,
  then gives the ``CallToolResult``; ``tasks/cancel`` makes the task ``cancelled`` at once; the
  work stops as :mod:`labtools.jobs` says (a kinetic read between reads, keeping its reads:
  ``tasks/result`` then returns them). ``tasks/list`` gives the tasks kept, newest first;
- protocol 2026-07-28, where tasks are the ``io.modelcontextprotocol/tasks`` extension:
  :mod:`labtools.server.tasks_extension`.

Both share :mod:`labtools.server.task_store` (limits, TTLs, starting a call as a job).

The SDK (2.3.0) has the 2025-11-25 task types, and for extensions the
:class:`~mcp.server.extension.Extension` interface (methods bound to protocol versions, a
``tools/call`` interceptor) that its high-level server applies. Here, on the low-level server:
a 2025-11-25 task-augmented call is answered by a server middleware before the handler (a
low-level handler cannot return a ``CreateTaskResult``: the runner validates it as a
``CallToolResult``), which also adds ``capabilities.tasks`` to the ``initialize`` result; the
extension's interceptor wraps the ``tools/call`` handler; the ``tasks/*`` methods of both
generations are bound with ``Server.add_request_handler`` behind one router per method that
picks the binding by the request's protocol version.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.extension import MethodBinding, RequestHandler, compose_tool_call_handler
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from labtools.errors import NotSupported, ToolError
from labtools.jobs import Job
from labtools.result import ToolResult
from labtools.server.catalogue import Catalogue, TaskSupport
from labtools.server.confirm import Confirmation
from labtools.server.slot import LabSlot
from labtools.server.task_store import (
    DEFAULT_TTL_MS,
    MAX_TTL_MS,
    ResultOf,
    TaskEntry,
    Tasks,
    TaskView,
)
from labtools.server.tasks_extension import TasksExtension

if TYPE_CHECKING:
    pass

__all__ = ["install", "support_of"]

log = logging.getLogger(__name__)

#: the one protocol version with tasks in its core (later: the tasks extension)
TASKS_VERSION = "2025-11-25"
RELATED_TASK = "io.modelcontextprotocol/related-task"
LEGACY_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


def support_of(lab: object, exposed: set[str]) -> dict[str, TaskSupport]:
    """The long-running tools among ``exposed`` that may run as tasks, and how. A
    :class:`~labtools.lab.Lab` only: a session's calls go through its budget, so it has none."""
    from labtools.lab import Lab  # built already when this is asked

    if not isinstance(lab, Lab):
        return {}
    return {
        s.name: "required" if s.hints.task_required else "optional"
        for s in lab.tool_specs()
        if s.hints.long_running and s.name in exposed
    }


def install(
    server: Server[Any],
    slot: LabSlot,
    catalogue: Catalogue,
    result_of: ResultOf,
    confirmation: Confirmation | None = None,
) -> None:
    """Serve tasks on ``server`` (both generations) if the catalogue has tools that may run
    as tasks (``execution.taskSupport``). ``result_of`` shapes a tool result as the server
    does."""
    if not catalogue.support:
        return
    tasks = Tasks(slot, catalogue, result_of, confirmation)
    server.middleware.append(_Middleware(tasks))
    extension = TasksExtension(tasks)
    call = server.get_request_handler("tools/call")
    if call is not None:
        handler = compose_tool_call_handler([extension], call.handler)
        server.add_request_handler("tools/call", call.params_type, handler)
    server.extensions[extension.identifier] = extension.settings()
    _bind(server, [*_methods(tasks), *extension.methods()])


def _bind(server: Server[Any], bindings: Iterable[MethodBinding]) -> None:
    """Serve each method through the binding for the request's protocol version (a method
    not served at that version: method not found, as the SDK's own gate answers). The
    bindings of one method share its params model."""
    by_method: dict[str, list[MethodBinding]] = {}
    for binding in bindings:
        by_method.setdefault(binding.method, []).append(binding)
    for method, chosen in by_method.items():
        if len({binding.params_type for binding in chosen}) > 1:
            raise ValueError(f"the bindings of {method} take different params")
        server.add_request_handler(method, chosen[0].params_type, _router(method, chosen))


def _router(method: str, bindings: list[MethodBinding]) -> RequestHandler:
    async def route(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        for binding in bindings:
            versions = binding.protocol_versions
            if versions is None or ctx.protocol_version in versions:
                return await binding.handler(ctx, params)
        raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=method)

    return route


# -- protocol 2025-11-25 ---------------------------------------------------------------------
def _methods(tasks: Tasks) -> list[MethodBinding]:
    """``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/list`` (2025-11-25 and
    the handshake versions before it)."""
    store, result_of = tasks.store, tasks.result_of

    async def get(ctx: ServerRequestContext, params: types.GetTaskRequestParams) -> HandlerResult:
        task = _task(store.get(params.task_id).view())
        return _dump(types.GetTaskResult.model_validate(task.model_dump()))

    async def result(
        ctx: ServerRequestContext, params: types.GetTaskPayloadRequestParams
    ) -> HandlerResult:
        entry = store.get(params.task_id)
        payload = _dump(await entry.result(result_of))
        payload["_meta"] = {**payload.get("_meta", {}), RELATED_TASK: {"taskId": entry.task_id}}
        return payload

    async def cancel(
        ctx: ServerRequestContext, params: types.CancelTaskRequestParams
    ) -> HandlerResult:
        entry = store.get(params.task_id)
        if not entry.job.cancel():
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"task {entry.task_id} is already {entry.job.state}",
            )
        return _dump(types.CancelTaskResult.model_validate(_task(entry.view()).model_dump()))

    async def listing(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams
    ) -> HandlerResult:
        return _dump(types.ListTasksResult(tasks=[_task(e.view()) for e in store.entries()]))

    return [
        MethodBinding("tasks/get", types.GetTaskRequestParams, get, LEGACY_VERSIONS),
        MethodBinding("tasks/result", types.GetTaskPayloadRequestParams, result, LEGACY_VERSIONS),
        MethodBinding("tasks/cancel", types.CancelTaskRequestParams, cancel, LEGACY_VERSIONS),
        MethodBinding("tasks/list", types.PaginatedRequestParams, listing, LEGACY_VERSIONS),
    ]


class _Middleware:
    """Adds ``capabilities.tasks`` to ``initialize``; answers task-augmented ``tools/call``
    (handshake versions only)."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

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
        ):
            return await call_next(ctx)
        name = params.get("name")
        support = self.tasks.support(name)
        if support is None:
            return await call_next(ctx)
        task = params.get("task")
        if not isinstance(task, Mapping):
            if task is None and support == "required":
                return self._refuse(
                    NotSupported(
                        f"{name} runs only as a task",
                        hint="call it with a 'task' field (MCP tasks, protocol 2025-11-25)",
                    )
                )
            return await call_next(ctx)  # an ordinary call, or a malformed one to refuse
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        outcome = await self.tasks.begin(ctx, cast(str, name), arguments)
        if isinstance(outcome, ToolResult):
            return _dump(self.tasks.result_of(outcome))
        if isinstance(outcome, types.InputRequiredResult):  # 2026-07-28 only, not here
            return _dump(outcome)
        entry = self.tasks.store.add(outcome, _ttl(task.get("ttl")))
        outcome.watch(_Reporter(ctx, entry, _progress_token(params)))
        return _dump(types.CreateTaskResult(task=_task(entry.view())))

    def _refuse(self, error: ToolError) -> dict[str, Any]:
        return _dump(self.tasks.result_of(ToolResult.failure(error)))


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

    def __init__(self, ctx: ServerRequestContext[Any, Any], entry: TaskEntry, token: Any) -> None:
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
                    _task(self.entry.view()).model_dump()
                )
            )
            await self.session.send_notification(cast(types.ServerNotification, notice))
        except Exception as exc:  # the client has gone; the task goes on
            log.debug("task %s: status not delivered (%s)", job.id, exc)


def _task(view: TaskView) -> types.Task:
    return types.Task(
        task_id=view.task_id,
        status=view.status,
        status_message=view.message,
        created_at=view.created_at,
        last_updated_at=view.updated_at,
        ttl=view.ttl_ms,
        poll_interval=view.poll_interval_ms,
    )


def _ttl(requested: object) -> int:
    if isinstance(requested, bool) or not isinstance(requested, int | float) or requested <= 0:
        return DEFAULT_TTL_MS
    return int(min(requested, MAX_TTL_MS))


def _progress_token(params: Mapping[str, Any]) -> Any:
    meta = params.get("_meta")
    return meta.get("progressToken") if isinstance(meta, Mapping) else None


def _dump(model: types.Result | types.ServerTasksCapability) -> dict[str, Any]:
    dumped = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    if "ttl" in type(model).model_fields and "ttl" not in dumped:
        dumped["ttl"] = None  # required on the wire, even when unlimited
    dumped.pop("resultType", None)  # a 2025-11-25 result has none
    return dumped
