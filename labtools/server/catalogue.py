"""The tools a server lists: the lab's own, or a cached copy while the lab is still being built.

A cached catalogue is checked against the lab once it is built. If they differ, the lab's tools
replace it and clients are told: before 2026-07-28, ``notifications/tools/list_changed`` to
every session that has listed tools (``capabilities.tools.listChanged`` is declared while the
catalogue may change); from 2026-07-28, a tools-changed event on ``subscriptions/listen``
streams, served with the SDK's :class:`~mcp.server.subscriptions.ListenHandler`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable
from typing import Any, Literal

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["Catalogue", "TaskSupport", "dump_tools", "load_tools"]

log = logging.getLogger(__name__)

TaskSupport = Literal["optional", "required"]


def dump_tools(tools: Iterable[types.Tool]) -> list[dict[str, Any]]:
    """Tools as ``tools/list`` sends them (camelCase JSON)."""
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]


def load_tools(entries: Iterable[dict[str, Any]]) -> list[types.Tool]:
    return [types.Tool.model_validate(entry) for entry in entries]


class Catalogue:
    """The listed tools, replaceable from any thread once (:meth:`replace`)."""

    def __init__(self, tools: list[types.Tool], *, may_change: bool = False) -> None:
        self._tools = tools
        #: the tools that may run as MCP tasks, and how (``execution.taskSupport``)
        self.support = _task_support(tools)
        #: whether :meth:`replace` may still change the tools (a cached catalogue)
        self.may_change = may_change
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sessions: dict[int, ServerSession] = {}  # sessions told of a change (legacy)
        self._bus = InMemorySubscriptionBus()  # listen streams told of a change (2026-07-28)
        self._sending: set[asyncio.Future[None]] = set()

    @property
    def tools(self) -> list[types.Tool]:
        return self._tools

    def names(self) -> set[str]:
        return {tool.name for tool in self._tools}

    def listen_handler(self) -> ListenHandler | None:
        """The ``subscriptions/listen`` handler, while the tools may change."""
        return ListenHandler(self._bus) if self.may_change else None

    def listed(self, ctx: ServerRequestContext[Any, Any]) -> list[types.Tool]:
        """The tools, for ``tools/list``; remembers whom to tell of a change."""
        with self._lock:
            if self.may_change:
                self._loop = asyncio.get_running_loop()
                if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                    self._sessions.setdefault(id(ctx.session), ctx.session)
            return self._tools

    def replace(self, tools: list[types.Tool]) -> bool:
        """Serve ``tools`` from now on; ``True`` (and clients told) if they differ."""
        with self._lock:
            self.may_change = False
            changed = dump_tools(tools) != dump_tools(self._tools)
            if changed:
                self._tools = tools
                self.support.clear()
                self.support.update(_task_support(tools))
            sessions, self._sessions = list(self._sessions.values()), {}
            loop = self._loop
        if changed and loop is not None:  # nobody has listed the old tools otherwise
            loop.call_soon_threadsafe(self._announce_soon, sessions)
        return changed

    def middleware(self) -> ServerMiddleware[Any]:
        """Server middleware declaring ``tools.listChanged`` while the tools may change."""

        async def declare(
            ctx: ServerRequestContext[Any, Any], call_next: CallNext
        ) -> HandlerResult:
            answer = await call_next(ctx)
            if ctx.method == "initialize" and self.may_change and isinstance(answer, dict):
                tools = answer.setdefault("capabilities", {}).setdefault("tools", {})
                if isinstance(tools, dict):
                    tools["listChanged"] = True
            return answer

        return declare

    def _announce_soon(self, sessions: list[ServerSession]) -> None:
        future = asyncio.ensure_future(self._announce(sessions))
        self._sending.add(future)  # kept until sent: the loop holds tasks weakly
        future.add_done_callback(self._sending.discard)

    async def _announce(self, sessions: list[ServerSession]) -> None:
        await self._bus.publish(ToolsListChanged())
        for session in sessions:
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # that client has gone
                log.debug("tools/list_changed not delivered (%s)", exc)


def _task_support(tools: Iterable[types.Tool]) -> dict[str, TaskSupport]:
    return {
        tool.name: tool.execution.task_support
        for tool in tools
        if tool.execution is not None and tool.execution.task_support in ("optional", "required")
    }
