"""Running a coroutine from synchronous code without the event loop while it need not wait.

A simulated instrument's tool call usually finishes without ever suspending, and starting the
event loop for it (a task, two loop iterations, a selector poll) costs more than the call's own
Python. :func:`run_eagerly` steps such a coroutine directly, and hands it to the loop only once
it suspends, for the rest of its run.

What holds as under ``loop.run_until_complete``: the coroutine runs in a copy of the caller's
context (a context variable it sets does not leak out, and the part run by the loop sees the
same copy); ``asyncio.get_running_loop()`` inside it returns ``loop``, so futures, locks and
tasks it makes belong there; its result or exception comes back unchanged; once suspended it is
an ordinary task, which cancellation reaches at its ``await``. What differs before the first
suspension: there is no current task (``asyncio.current_task()`` is ``None``) and the loop does
not run, so code that needs a task there (``asyncio.timeout``, ``asyncio.TaskGroup``,
``asyncio.wait_for`` on Python 3.12+) must not be stepped eagerly — the lab steps only
simulated instruments this way, never a driver's I/O.

:class:`LoopThread` is the other way in: an event loop on a thread of its own, for synchronous
calls made where a loop already runs on the caller's thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["LoopThread", "run_eagerly"]

T = TypeVar("T")


def run_eagerly(coroutine: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> T:
    """Run ``coroutine`` to its end on this thread, which must have no running loop: stepped
    directly up to its first suspension, then as a task on ``loop`` (not running, not closed)."""
    context = contextvars.copy_context()
    asyncio._set_running_loop(loop)
    try:
        yielded = context.run(coroutine.send, None)
    except StopIteration as done:
        return done.value
    finally:
        asyncio._set_running_loop(None)
    task = loop.create_task(_rest(coroutine, yielded), context=context)
    return loop.run_until_complete(task)


async def _rest(coroutine: Coroutine[Any, Any, T], yielded: object) -> T:
    return await _Suspended(coroutine, yielded)


class _Suspended:
    """A coroutine stopped at its first suspension: awaiting this runs the rest of it, as
    ``await coroutine`` would have (values sent, exceptions thrown and closing passed on)."""

    __slots__ = ("_coroutine", "_yielded")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], yielded: object) -> None:
        self._coroutine = coroutine
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, value = self._coroutine, self._yielded
        while True:
            try:
                sent = yield value  # to the task: a future to wait for, or None (a bare yield)
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # thrown in by the task (a cancellation)
                try:
                    value = coroutine.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    value = coroutine.send(sent)
                except StopIteration as done:
                    return done.value


class LoopThread:
    """An event loop on a daemon thread, for sync calls made from inside a running loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True, name="labtools-loop"
        )
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
