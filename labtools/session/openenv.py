"""An OpenEnv-style environment over a session: a control plane and an MCP agent plane.

The trainer drives ``reset(seed, episode_id)``, ``step(action)`` and ``state``; the agent acts
with MCP tools — through ``step(CallToolAction(...))``, or over a real MCP connection to
:meth:`LabEnvironment.mcp_server`. The reward arrives on the observation that ends the episode
(a delayed, trajectory-level reward). Shapes follow OpenEnv's (``Observation`` with ``done``,
``reward``, ``metadata``; ``ListToolsAction``/``CallToolAction``) without depending on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from labtools.result import ToolResult
from labtools.session.session import Session

__all__ = ["CallToolAction", "LabEnvironment", "ListToolsAction", "Observation"]


@dataclass(frozen=True)
class ListToolsAction:
    """Ask for the tools (MCP ``tools/list`` shape)."""


@dataclass(frozen=True)
class CallToolAction:
    """Call one tool (MCP ``tools/call`` shape)."""

    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Observation:
    done: bool
    reward: float | None
    metadata: dict[str, Any]
    result: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


class LabEnvironment:
    """One session per environment instance; run many instances for concurrency."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self, task: str = "dye_quantification", *, secret: str | bytes | None = None
    ) -> None:
        self.session = Session(task, secret=secret)
        self._episode_id: str | None = None

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Observation:
        observation = self.session.reset(seed if seed is not None else 0, task=kwargs.get("task"))
        self._episode_id = episode_id or self.session.episode_id
        return Observation(
            done=False,
            reward=None,
            metadata={"episode_id": self._episode_id, **observation},
            tools=self.session.tools("mcp"),
        )

    def step(
        self, action: ListToolsAction | CallToolAction, timeout_s: float | None = None
    ) -> Observation:
        if isinstance(action, ListToolsAction):
            return Observation(
                done=self.session.done,
                reward=None,
                metadata=self._metadata(),
                tools=self.session.tools("mcp"),
            )
        return self._observe(self.session.call_tool(action.tool_name, action.arguments))

    async def step_async(
        self, action: ListToolsAction | CallToolAction, timeout_s: float | None = None
    ) -> Observation:
        if isinstance(action, ListToolsAction):
            return self.step(action)
        return self._observe(await self.session.acall_tool(action.tool_name, action.arguments))

    def _observe(self, result: ToolResult) -> Observation:
        """The observation after a call; the episode's reward arrives with its end."""
        done = self.session.done
        return Observation(
            done=done,
            reward=self.session.score().total if done else None,
            metadata=self._metadata(),
            result=result.to_dict(),
        )

    @property
    def state(self) -> dict[str, Any]:
        return {**self.session.state(), "episode_id": self._episode_id}

    def mcp_server(self) -> Any:
        """The agent plane as an MCP server (the session's tools, budget and end included)."""
        from labtools.server import build_server

        return build_server(self.session, name=f"labtools-{self.session.task.id}")

    def close(self) -> None:
        self.session.close()

    def _metadata(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "steps": self.session.usage.calls}
