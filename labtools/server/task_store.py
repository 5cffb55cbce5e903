"""The tasks both protocol generations share: one store of jobs, and starting a call as one.

A task is kept for its ``ttl`` (requested, clamped to :data:`MAX_TTL_MS`; default
:data:`DEFAULT_TTL_MS`) from its creation, and never deleted while it runs; at most
:data:`KEEP_FINISHED` finished tasks are kept (oldest dropped first), and at most
:data:`MAX_RUNNING` run at once (more are refused with ``busy``). A task is served only in the
generation that created it.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp_types import INVALID_PARAMS

from labtools.errors import Busy, ToolError
from labtools.jobs import Job, JobState, start_job
from labtools.result import ToolResult
from labtools.server.catalogue import Catalogue, TaskSupport
from labtools.server.confirm import Confirmation
from labtools.server.slot import LabSlot

if TYPE_CHECKING:
    from labtools.lab import Lab

__all__ = [
    "DEFAULT_TTL_MS",
    "KEEP_FINISHED",
    "MAX_RUNNING",
    "MAX_TTL_MS",
    "POLL_INTERVAL_MS",
    "TaskEntry",
    "TaskStore",
    "TaskView",
    "Tasks",
]

DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 24 * 3_600_000
POLL_INTERVAL_MS = 1000
KEEP_FINISHED = 64
MAX_RUNNING = 16

ResultOf = Callable[[ToolResult], types.CallToolResult]
#: why a call did not start: a refusal, or (2026-07-28) the confirmation to ask for first
Refusal = ToolResult | types.InputRequiredResult


@dataclass(frozen=True)
class TaskView:
    """A task as both generations report it; ``status`` is the job's state."""

    task_id: str
    status: JobState
    message: str
    created_at: str
    updated_at: str
    ttl_ms: int
    poll_interval_ms: int
    #: the work has stopped and its result is ready
    finished: bool


class TaskEntry:
    """One task: its job, how long it is kept, and its result once shaped for the client."""

    def __init__(self, job: Job, ttl_ms: int, *, modern: bool) -> None:
        self.job = job
        self.ttl_ms = ttl_ms
        self.modern = modern
        self.created = time.time()
        # the extension's task ids are bearer tokens: unguessable (its security rules)
        self.task_id = f"{job.id}-{secrets.token_urlsafe(16)}" if modern else job.id
        self._result: types.CallToolResult | None = None

    def view(self) -> TaskView:
        """Where the task stands, with the instrument's latest progress as its message."""
        job = self.job
        status = job.status()
        if status.state == "cancelled" and not status.finished:
            message = "cancelled; stopping at the next safe point"
        elif status.message is not None:
            message = status.message
        else:
            message = {"working": "running", "completed": "done", "failed": "failed"}.get(
                status.state, status.state
            )
        return TaskView(
            task_id=self.task_id,
            status=status.state,
            message=f"{job.name}: {message}",
            created_at=_iso(job.created_at),
            updated_at=_iso(job.updated_at),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=POLL_INTERVAL_MS,
            finished=status.finished,
        )

    async def result(self, result_of: ResultOf) -> types.CallToolResult:
        """The tool's result as the server shapes it, once the work has stopped (shaped once:
        a long result is stored once, however often it is fetched)."""
        outcome = await self.job.wait()
        if self._result is None:
            self._result = result_of(outcome)
        return self._result


class TaskStore:
    """The server's tasks, bounded: kept for their TTL, at most ``keep`` finished ones."""

    def __init__(self, *, keep: int = KEEP_FINISHED, max_running: int = MAX_RUNNING) -> None:
        self.keep = keep
        self.max_running = max_running
        self._entries: OrderedDict[str, TaskEntry] = OrderedDict()

    def add(self, job: Job, ttl_ms: int = DEFAULT_TTL_MS, *, modern: bool = False) -> TaskEntry:
        entry = TaskEntry(job, ttl_ms, modern=modern)
        self._entries[entry.task_id] = entry
        self.prune()
        return entry

    def running(self) -> int:
        return sum(not e.job.status().finished for e in self._entries.values())

    def get(self, task_id: str, *, modern: bool = False) -> TaskEntry:
        """The task ``task_id`` created in that generation; invalid params if there is none."""
        self.prune()
        entry = self._entries.get(task_id)
        if entry is None or entry.modern != modern:
            raise MCPError(code=INVALID_PARAMS, message=f"no task {task_id[:80]!r} (or it expired)")
        return entry

    def entries(self, *, modern: bool = False) -> list[TaskEntry]:
        """The tasks of that generation, newest first."""
        self.prune()
        return [e for e in reversed(self._entries.values()) if e.modern == modern]

    def prune(self) -> None:
        now = time.time()
        finished = [e for e in self._entries.values() if e.job.status().finished]
        expired = {e.task_id for e in finished if now - e.created > e.ttl_ms / 1000}
        surplus = [e.task_id for e in finished if e.task_id not in expired]
        expired.update(surplus[: max(len(surplus) - self.keep, 0)])
        for task_id in expired:
            del self._entries[task_id]


class Tasks:
    """What both generations share: the store, and starting a call as a job."""

    def __init__(
        self,
        slot: LabSlot,
        catalogue: Catalogue,
        result_of: ResultOf,
        confirmation: Confirmation | None = None,
        store: TaskStore | None = None,
    ) -> None:
        self.slot = slot
        self.catalogue = catalogue
        self.result_of = result_of
        self.confirmation = confirmation
        self.store = store if store is not None else TaskStore()

    def support(self, name: object) -> TaskSupport | None:
        """How tool ``name`` may run as a task; ``None``: not at all."""
        return self.catalogue.support.get(name) if isinstance(name, str) else None

    async def begin(
        self,
        ctx: ServerRequestContext[Any, Any],
        name: str,
        arguments: object,
        params: types.CallToolRequestParams | None = None,
    ) -> Job | Refusal:
        """Start ``name`` as a job, once the lab allows it: at most ``max_running`` at once,
        confirmed if the lab says so (2026-07-28: ``params`` carries the confirmation). A call
        the lab refuses is a job that has already failed."""
        if self.store.running() >= self.store.max_running:
            return ToolResult.failure(
                Busy(
                    f"{self.store.max_running} tasks are running already",
                    hint="wait for one to finish (tasks/get) or cancel one (tasks/cancel)",
                )
            )
        if self.confirmation is not None:
            refusal = await self.confirmation.ask(ctx, name, arguments, params)
            if refusal is not None:
                return refusal
        try:
            lab = await self.slot.get()
        except ToolError as error:
            return ToolResult.failure(error)
        return start_job(cast("Lab", lab), name, arguments, asyncio.get_running_loop())


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
