"""Jobs: tool calls that run in the background while the caller does something else.

``job = lab.start(name, arguments)`` validates the call as :meth:`labtools.Lab.call` does (a
refusal is a job that has already failed, and nothing runs), then runs it on an event loop that
keeps running: the lab's own loop thread, or, for a server, the loop the server runs on. The job
reports its state (``working``, then ``completed``, ``failed`` or ``cancelled``) and the progress
the instrument reports (``done`` of ``total``, a message); ``job.result()`` waits for the
:class:`~labtools.result.ToolResult`.

Cancelling never interrupts an instrument in the middle of an exchange with the device:

- a job still queued for its instrument (another call holds it) is dropped: nothing ran and
  nothing changed; its result is a ``precondition_failed`` refusal saying so;
- a running tool that can stop early does so at its next safe point: a kinetic read stops
  between two reads (the read under way finishes) and returns, and keeps under its data
  handle, the reads it took (:func:`stop_requested`, :func:`wait_unless_stopped`);
- any other running tool (an acquisition of seconds) finishes; its result is kept.

The state is ``cancelled`` from the moment :meth:`Job.cancel` returns (what MCP requires of
``tasks/cancel``); ``job.status().finished`` tells when the work has actually stopped and the
instrument is free again, and ``job.result()`` waits for that.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from labtools.errors import InstrumentError, PreconditionFailed, ToolError
from labtools.progress import ProgressCallback
from labtools.result import ToolResult

if TYPE_CHECKING:
    from labtools.spec import ToolSpec

__all__ = [
    "Job",
    "JobState",
    "JobStatus",
    "start_job",
    "stop_jobs",
    "stop_requested",
    "wait_unless_stopped",
]

log = logging.getLogger(__name__)

JobState = Literal["working", "completed", "failed", "cancelled"]
#: a job's listener, told of every change of state or progress (on the job's loop)
JobListener = Callable[["Job"], Awaitable[None]]


class Lab(Protocol):
    """What a job needs of :class:`labtools.Lab` (named here so that neither module imports
    the other's names at run time)."""

    clock: Any

    def tool_spec(self, name: str) -> ToolSpec: ...

    def _lock(self, instrument: str) -> asyncio.Lock: ...

    async def acall(
        self, name: str, arguments: object, *, progress: ProgressCallback | None = None
    ) -> ToolResult: ...

    def _record(
        self,
        name: object,
        arguments: object,
        result: ToolResult,
        started: float,
        virtual_start: float | None,
    ) -> None: ...


_current: ContextVar[Job | None] = ContextVar("labtools_job", default=None)
#: jobs whose work has not stopped (asyncio keeps only weak references to tasks)
_live: set[Job] = set()
_numbers = itertools.count(1)


@dataclass(frozen=True)
class JobStatus:
    """Where a job stands. ``done``/``total``/``message``: the instrument's latest progress
    report (``None`` before the first); ``finished``: the work has stopped and the result is
    ready (a ``cancelled`` job may still be finishing the step under way)."""

    state: JobState
    done: float | None
    total: float | None
    message: str | None
    finished: bool


def stop_requested() -> bool:
    """Whether the job running the current tool has been cancelled (for drivers: stop at the
    next safe point and return what was done)."""
    job = _current.get()
    return job is not None and job._stop.is_set()


async def wait_unless_stopped(wait: Awaitable[None]) -> bool:
    """Await ``wait`` (a pause that is safe to interrupt, such as the time between two reads)
    unless the current job is cancelled first; ``False`` if it was (the pause is abandoned)."""
    job = _current.get()
    if job is None:
        await wait
        return True
    if job._stop.is_set():
        if asyncio.iscoroutine(wait):
            wait.close()
        return False
    pause = asyncio.ensure_future(wait)
    stop = asyncio.ensure_future(job._stop.wait())
    try:
        await asyncio.wait({pause, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in (pause, stop):
            if not future.done():
                future.cancel()
    if pause.done() and not pause.cancelled():
        pause.result()  # a failing wait fails the tool
        return True
    return False


class Job:
    """One tool call running in the background (made by :meth:`labtools.Lab.start`)."""

    def __init__(self, lab: Lab, name: str, arguments: object, loop: asyncio.AbstractEventLoop):
        self.id = f"job-{next(_numbers)}-{uuid.uuid4().hex[:8]}"
        self.name = name
        self.arguments = arguments
        self.created_at = time.time()
        self.updated_at = self.created_at
        self._lab = lab
        self._loop = loop
        self._mutex = threading.Lock()
        self._state: JobState = "working"
        self._progress: tuple[float | None, float | None, str | None] = (None, None, None)
        self._result: ToolResult | None = None
        self._finished = threading.Event()
        self._stop = asyncio.Event()  # set on the job's loop only
        self._started = False  # the tool has been handed to the lab (no more dropping it)
        self._task: asyncio.Task[None] | None = None
        self._listeners: list[JobListener] = []

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.name} {self._state}>"

    # -- what callers use ----------------------------------------------------------------------
    @property
    def state(self) -> JobState:
        return self._state

    def status(self) -> JobStatus:
        with self._mutex:
            done, total, message = self._progress
            return JobStatus(self._state, done, total, message, self._finished.is_set())

    def result(self, timeout: float | None = None) -> ToolResult:
        """The tool's result, once the work has stopped; ``TimeoutError`` after ``timeout``
        seconds. Not from the job's own event loop (``await job.wait()`` there)."""
        if not self._finished.is_set() and _running_loop() is self._loop:
            raise RuntimeError("job.result() would block the job's own event loop; await wait()")
        if not self._finished.wait(timeout):
            raise TimeoutError(f"{self.name} is still running after {timeout} s")
        assert self._result is not None
        return self._result

    async def wait(self) -> ToolResult:
        """Await the tool's result (from any event loop)."""
        if not self._finished.is_set():
            if _running_loop() is self._loop and self._task is not None:
                await asyncio.shield(self._task)
            else:
                await asyncio.to_thread(self._finished.wait)
        assert self._result is not None
        return self._result

    def cancel(self) -> bool:
        """Cancel the job (see the module's notes on what stops when); ``False`` if it had
        already completed, failed or been cancelled."""
        with self._mutex:
            if self._state != "working":
                return False
            self._state = "cancelled"
            self.updated_at = time.time()
        self._in_loop(self._request_stop)
        return True

    def watch(self, listener: JobListener) -> None:
        """Call ``await listener(job)`` on the job's loop after every change of progress or
        state (its exceptions are logged, never the job's)."""
        self._listeners.append(listener)

    # -- running -------------------------------------------------------------------------------
    def _in_loop(self, callback: Callable[[], None]) -> None:
        if _running_loop() is self._loop:
            callback()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(callback)

    def _request_stop(self) -> None:
        self._stop.set()
        if not self._started and self._task is not None:
            self._task.cancel()  # still queued for the instrument: nothing has run
        self._notify()

    async def _run(self, instrument: str) -> None:
        token = _current.set(self)
        try:
            async with self._lab._lock(instrument):
                pass  # queued behind the calls holding the instrument: cancelled, it is dropped
            self._started = True
            self._finish(await self._lab.acall(self.name, self.arguments, progress=self._report))
        finally:
            _current.reset(token)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """The task is over: a job that did not finish was dropped or interrupted."""
        _live.discard(self)
        if self._result is not None:
            return
        if not self._started and self._stop.is_set():
            error: ToolError = PreconditionFailed(
                f"{self.name} was cancelled before it started: nothing was done",
                hint="start it again to run it",
            )
        else:
            if not task.cancelled() and task.exception() is not None:
                log.error("job %s failed", self.id, exc_info=task.exception())
            error = InstrumentError(
                f"{self.name} was interrupted (the lab or server was shutting down)",
                hint="check the instrument's state before you retry",
            )
        self._finish(ToolResult.failure(error))

    async def _report(self, done: float, total: float | None, message: str | None) -> None:
        with self._mutex:
            self._progress = (done, total, message)
            self.updated_at = time.time()
        await self._tell()

    def _finish(self, result: ToolResult) -> None:
        with self._mutex:
            self._result = result
            if self._state == "working":
                self._state = "completed" if result.ok else "failed"
            self.updated_at = time.time()
        self._finished.set()
        self._notify()

    def _notify(self) -> None:
        if self._listeners:
            self._loop.create_task(self._tell())

    async def _tell(self) -> None:
        for listener in list(self._listeners):
            try:
                await listener(self)
            except Exception:
                log.exception("a listener of job %s failed", self.id)


def start_job(lab: Lab, name: str, arguments: object, loop: asyncio.AbstractEventLoop) -> Job:
    """Start ``name`` on ``loop`` (call from that loop's thread, or from any other thread while
    it runs). A refused call is journalled and returned as a job that has already failed."""
    job = Job(lab, name, arguments, loop)
    started, virtual_start = time.perf_counter(), lab.clock.now() if lab.clock else None
    try:
        spec = lab.tool_spec(name) if isinstance(name, str) else lab.tool_spec(str(name))
        spec.bind(arguments)
    except ToolError as error:
        refusal = ToolResult.failure(error)
        lab._record(name, arguments, refusal, started, virtual_start)
        job._finish(refusal)
        return job
    _live.add(job)

    def launch() -> None:
        job._task = loop.create_task(job._run(spec.instrument), name=job.id)
        job._task.add_done_callback(job._ended)
        if job._stop.is_set():  # cancelled before it was launched
            job._task.cancel()

    if _running_loop() is loop:
        launch()
    else:
        ready = threading.Event()

        def launch_here() -> None:
            launch()
            ready.set()

        loop.call_soon_threadsafe(launch_here)
        ready.wait()
    return job


async def stop_jobs(lab: Lab) -> None:
    """Cancel the lab's jobs still running; wait until the work of those on the current loop
    has stopped (jobs on another loop, such as a server's, stop there as that loop runs)."""
    mine = [job for job in list(_live) if job._lab is lab]
    for job in mine:
        job.cancel()
    here = _running_loop()
    for job in mine:
        if job._loop is here and job._task is not None:
            await job.wait()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
