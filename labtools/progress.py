"""Progress of long tool calls: an instrument reports, whoever called the tool listens.

A driver calls ``await report_progress(done, total, message)`` from inside a tool; it is a no-op
unless the caller passed ``progress=`` to :meth:`labtools.Lab.acall` (the MCP server forwards it
as ``notifications/progress``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ProgressCallback", "listening", "report_progress"]

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]

_listener: ContextVar[ProgressCallback | None] = ContextVar("labtools_progress", default=None)


async def report_progress(
    done: float, total: float | None = None, message: str | None = None
) -> None:
    """Tell the caller of the current tool how far it has got."""
    listener = _listener.get()
    if listener is not None:
        await listener(done, total, message)


@contextmanager
def listening(callback: ProgressCallback | None) -> Iterator[None]:
    """Route :func:`report_progress` calls made inside the block to ``callback``."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)
