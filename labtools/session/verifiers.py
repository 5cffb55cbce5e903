"""A verifiers (v1) Taskset of grounded tasks: typed task rows, the tools over MCP, the reward
the session's.

Each row is one task and seed. verifiers launches a tool server per rollout (``python -m``
this module); it builds a :class:`~labtools.session.Session`, resets it to the row's seed and
serves the session's tools, under their own names, over verifiers' MCP server. Every call
updates the rollout's state with the episode's end; the reward is the session's
:meth:`~labtools.session.Session.score` total, its parts are metrics, and the rollout stops
once the episode ends (a submission, or the budget).

The hidden truth comes from the seed and a secret read from the environment variable the
config names (``task.tools.secret_env``, ``LABTOOLS_SECRET`` by default): verifiers writes
configs and task rows to disk in clear, so neither holds it. A taskset draws one when the
variable is unset, and sets it for the tool servers it launches as subprocesses; set it
yourself for reproducible worlds, or for tool servers in other runtimes. An agent in a local
``subprocess`` runtime runs as the same user with the same environment: give a trained agent a
sandboxed runtime.

Needs verifiers (the ``verifiers`` extra); ``vf-eval labtools_verifiers`` finds this taskset
through the top-level module of that name.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any, cast

from pydantic import Field

from labtools.providers.calls import result_json
from labtools.server.app import mcp_tool
from labtools.session.registry import task_ids
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.session import Session

VERIFIERS_INSTALL_HINT = 'pip install "labtools-sdk[verifiers]"'


class VerifiersUnavailable(ImportError):
    """verifiers is not installed; ``hint`` says what to install."""

    def __init__(self, message: str, *, hint: str = VERIFIERS_INSTALL_HINT) -> None:
        super().__init__(f"{message}: {hint}")
        self.hint = hint


try:
    import mcp_types as types
    import verifiers.v1 as vf
    from mcp.server.mcpserver import Context, MCPServer
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise VerifiersUnavailable(f"labtools.session.verifiers needs verifiers ({exc})") from exc

__all__ = [
    "VERIFIERS_INSTALL_HINT",
    "LabConfig",
    "LabData",
    "LabState",
    "LabTask",
    "LabTaskConfig",
    "LabTaskset",
    "LabToolset",
    "LabToolsetConfig",
    "VerifiersUnavailable",
]

#: the environment variable the secret is read from, unless the config names another
SECRET_ENV = "LABTOOLS_SECRET"


class LabData(vf.TaskData):
    """One row: the task and the seed its world is drawn from (with the secret). Recorded on
    traces; the agent sees only the prompt."""

    lab_task: str
    seed: int


class LabState(vf.State):
    """The rollout's episode as the trainer sees it, updated after every tool call."""

    calls: int = 0
    terminated: bool = False
    truncated: bool = False
    #: the session's reward total once the episode ended, else 0
    reward: float = 0.0
    #: raw, normalized, validity, efficiency, success and the task's numeric components
    parts: dict[str, float] = Field(default_factory=dict)


class LabToolsetConfig(vf.ToolsetConfig):
    #: the environment variable holding the session secret (never the secret itself)
    secret_env: str = SECRET_ENV


class LabToolset(vf.Toolset[LabToolsetConfig, LabState]):
    """A session's tools for one rollout, under their own names (the statements name them)."""

    TOOL_PREFIX = None

    def __init__(self, config: LabToolsetConfig) -> None:
        super().__init__(config)
        self.session: Session | None = None

    async def setup_task(self, task: LabData) -> None:
        self.session = Session(task.lab_task, secret=_secret(self.config.secret_env))
        self.session.reset(task.seed)

    def register(self, mcp: MCPServer) -> None:
        # the catalogue is the session's, so the SDK server's own handlers are replaced
        server = cast(Any, mcp)
        server.list_tools = self._with_state(self.list_tools)
        server.call_tool = self._with_state(self.call_tool)

    async def list_tools(self) -> list[types.Tool]:
        return [mcp_tool(entry) for entry in self._session().tools("mcp")]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> types.CallToolResult:
        """The call through the session; the text is what a model reads (the data, or
        ``{"error": {code, message, field, hint}}``), the data also structured."""
        session = self._session()
        result = await session.acall_tool(name, arguments)
        _record(self.state, session)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result_json(result))],
            structured_content=result.data if result.ok else None,
            is_error=not result.ok,
        )

    def _session(self) -> Session:
        if self.session is None:
            raise RuntimeError("the tool server has no task: verifiers calls setup_task first")
        return self.session


def _record(state: LabState, session: Session) -> None:
    state.calls = session.usage.calls
    state.terminated, state.truncated = session.terminated, session.truncated
    if session.done:
        reward = session.score()
        state.reward = reward.total
        state.parts = {
            "raw": reward.raw,
            "normalized": reward.normalized,
            "validity": reward.validity,
            "efficiency": reward.efficiency,
            "success": float(reward.success),
            **{k: float(v) for k, v in reward.components.items() if not isinstance(v, str)},
        }


class LabTaskConfig(vf.TaskConfig):
    tools: LabToolsetConfig = LabToolsetConfig()


class LabTask(vf.Task[LabData, LabState, LabTaskConfig]):
    @classmethod
    def toolsets(cls, config: LabTaskConfig) -> list[LabToolset]:
        return [LabToolset(config.tools)]

    @vf.stop
    async def episode_ended(self, trace: vf.Trace) -> bool:
        """The episode ended (a submission, or the budget): nothing more to earn."""
        state = cast(LabState, trace.state)
        return state.terminated or state.truncated

    @vf.reward(weight=1.0)
    async def session_reward(self, trace: vf.Trace) -> float:
        """The session's reward total: 0 unless the episode ended with a scored submission."""
        return cast(LabState, trace.state).reward

    @vf.metric
    async def session(self, trace: vf.Trace) -> dict[str, float]:
        state = cast(LabState, trace.state)
        return {"calls": float(state.calls), **state.parts}


class LabConfig(vf.TasksetConfig):
    task: LabTaskConfig = LabTaskConfig()
    #: task ids (``labtools.tasks`` entry points); empty: every registered task
    lab_tasks: list[str] = Field(default_factory=list)
    #: the seeds of each task's rows
    seeds: list[int] = Field(default_factory=lambda: list(range(20)))


class LabTaskset(vf.Taskset[LabTask, LabConfig]):
    """``lab_tasks`` × ``seeds`` rows, in that order; the prompt is the task's statement for
    that seed, the system prompt labtools' instructions."""

    def load(self) -> Iterator[LabTask]:
        env = self.config.task.tools.secret_env
        os.environ.setdefault(env, secrets.token_hex(16))
        for lab_task in self.config.lab_tasks or task_ids():
            with Session(lab_task, secret=_secret(env)) as session:
                for seed in self.config.seeds:
                    statement = session.reset(seed)["task"]
                    data = LabData(
                        name=f"{lab_task}#{seed}",
                        prompt=statement,
                        system_prompt=INSTRUCTIONS,
                        lab_task=lab_task,
                        seed=seed,
                    )
                    yield LabTask(data, self.config.task)


def _secret(env: str) -> str:
    secret = os.environ.get(env)
    if not secret:
        raise RuntimeError(f"no session secret: set the environment variable {env}")
    return secret


if __name__ == "__main__":  # verifiers starts each rollout's tool server this way
    LabToolset.run()
