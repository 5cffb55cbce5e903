"""A verifiers (v1) Taskset of grounded tasks: typed task rows, the tools over MCP, the reward
the session's.

Each row is one task and seed. verifiers launches a tool server per rollout (``python -m``
this module); it builds a :class:`~labtools.session.Session`, resets it to the row's seed and
serves the session's tools, under their own names, over verifiers' MCP server. Every call
updates the rollout's state with the episode's end; the reward is the session's
:meth:`~labtools.session.Session.score` total, its parts are metrics, and the rollout stops
once the episode ends (a submission, or the budget).

The hidden truth comes from the seed and a secret: the value of the environment variable the
config names (``secret_env``, ``LABTOOLS_SECRET``), which the first taskset made in a process
takes out of the environment (:func:`process_secret`), else one drawn then. verifiers writes
configs and task rows to disk in clear, so neither holds it: each task hands it to its
rollout's state (:class:`LabState`, which verifiers never records on a trace), and the tool
server reads it from there, over verifiers' authenticated state channel. No environment
variable carries it to a tool server or an agent. An agent in a local
``subprocess`` runtime still runs as the same user (it could read the host's processes): give a
trained agent a sandboxed runtime.

Needs verifiers (the ``verifiers`` extra); ``vf-eval labtools_verifiers`` finds this taskset
through the top-level module of that name.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any, ClassVar, cast

from pydantic import Field

from labtools.errors import MissingExtra, install_hint
from labtools.providers.calls import result_json
from labtools.server.app import mcp_tool
from labtools.session.registry import task_ids
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.session import Session, fresh_seed

VERIFIERS_INSTALL_HINT = install_hint("verifiers")
#: the one mcp release verifiers 0.4 installs with (its pin, ``mcp==2.0.0``)
VERIFIERS_MCP = "2.0.0"


class VerifiersUnavailable(MissingExtra):
    """verifiers is not installed; ``hint`` says what to install."""


def unavailable(cause: ImportError, mcp_version: str | None) -> VerifiersUnavailable:
    """The error for an environment without verifiers, saying why where the reason is the mcp
    it holds: verifiers 0.4 pins mcp 2.0.0, so an environment with another mcp (the dev
    install of Python 3.12 and later takes the newest) cannot hold verifiers too."""
    message = f"labtools.session.verifiers needs verifiers ({cause})"
    if mcp_version not in (None, VERIFIERS_MCP):
        message += (
            f", and verifiers 0.4 pins mcp=={VERIFIERS_MCP} while this environment has mcp "
            f"{mcp_version} (the dev install of Python 3.12 and later takes the newest): the "
            f"extra puts mcp {VERIFIERS_MCP} in its place, which labtools supports, or run "
            "verifiers from an environment of its own (Python 3.11-3.14)"
        )
    return VerifiersUnavailable(message, extra="verifiers")


try:
    import mcp_types as types
    import verifiers.v1 as vf
    from mcp.server.mcpserver import Context, MCPServer
except ImportError as exc:
    from importlib import metadata

    try:
        _mcp: str | None = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        _mcp = None
    raise unavailable(exc, _mcp) from exc

__all__ = [
    "SECRET_ENV",
    "VERIFIERS_INSTALL_HINT",
    "LabConfig",
    "LabData",
    "LabState",
    "LabTask",
    "LabTaskConfig",
    "LabTaskset",
    "LabToolset",
    "VerifiersUnavailable",
    "process_secret",
]

#: the environment variable the secret is read from, unless the config names another
SECRET_ENV = "LABTOOLS_SECRET"


class LabData(vf.TaskData):
    """One row: the task and the seed its world is drawn from (with the secret). Recorded on
    traces; the agent sees only the prompt."""

    lab_task: str
    seed: int


class LabState(vf.State):
    """The rollout's episode as the trainer sees it, updated after every tool call; and the
    session secret, which the task puts here for the tool server (never on a trace)."""

    secret: str = Field(default="", repr=False)
    calls: int = 0
    terminated: bool = False
    truncated: bool = False
    #: the session's reward total once the episode ended, else 0
    reward: float = 0.0
    #: raw, normalized, validity, efficiency, success and the task's numeric components
    parts: dict[str, float] = Field(default_factory=dict)


class LabToolset(vf.Toolset[vf.ToolsetConfig, LabState]):
    """A session's tools for one rollout, under their own names (the statements name them)."""

    TOOL_PREFIX: ClassVar[str | None] = None

    def __init__(self, config: vf.ToolsetConfig) -> None:
        super().__init__(config)
        self.row: LabData | None = None
        self.session: Session | None = None

    async def setup_task(self, task: LabData) -> None:
        self.row = task  # the session is built at the first request, with the state's secret

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
            if self.row is None or not self.state.secret:
                raise RuntimeError("no task or no secret: a LabTask's rollout gives both")
            self.session = Session(self.row.lab_task, secret=self.state.secret)
            self.session.reset(self.row.seed)
        return self.session


def _record(state: LabState, session: Session) -> None:
    ended = state.terminated or state.truncated
    state.calls = session.usage.calls
    state.terminated, state.truncated = session.terminated, session.truncated
    if session.done and not ended:  # scored once, when the episode ends
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
    #: the tool server's (verifiers' own settings: its runtime, colocated, url)
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class LabTask(vf.Task[LabData, LabState, LabTaskConfig]):
    """One row, with the taskset's secret (kept off the row, which traces record)."""

    def __init__(
        self, data: LabData, config: LabTaskConfig | None = None, *, secret: str = ""
    ) -> None:
        super().__init__(data, config)
        self._secret = secret

    async def setup(self, trace: vf.Trace) -> None:
        """Hand the secret to the rollout's state, from which its tool server reads it."""
        if not self._secret:
            raise RuntimeError("a LabTask comes from LabTaskset.load(), which gives its secret")
        cast(LabState, trace.state).secret = self._secret

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
    #: the seeds of each task's rows (default: 20 fresh 64-bit ones, so that no published list
    #: of seeds names the worlds a run trains on; a row's world still repeats every epoch)
    seeds: list[int] = Field(default_factory=lambda: [fresh_seed() for _ in range(20)])
    #: the environment variable holding the session secret (never the secret itself)
    secret_env: str = SECRET_ENV


class LabTaskset(vf.Taskset[LabTask, LabConfig]):
    """``lab_tasks`` × ``seeds`` rows, in that order; the prompt is the task's statement for
    that seed, the system prompt labtools' instructions. The secret is this process's
    (:func:`process_secret`), so its rows and their rollouts agree."""

    def __init__(self, config: LabConfig) -> None:
        super().__init__(config)
        self._secret = process_secret(config.secret_env)

    def load(self) -> Iterator[LabTask]:
        for lab_task in self.config.lab_tasks or task_ids():
            with Session(lab_task, secret=self._secret) as session:
                for seed in self.config.seeds:
                    data = LabData(
                        name=f"{lab_task}#{seed}",
                        prompt=session.reset(seed)["task"],
                        system_prompt=INSTRUCTIONS,
                        lab_task=lab_task,
                        seed=seed,
                    )
                    yield LabTask(data, self.config.task, secret=self._secret)


#: the secret of each variable name, once this process has read (or drawn) it
_SECRETS: dict[str, str] = {}


def process_secret(env: str) -> str:
    """This process's secret: the value of ``env``, taken out of the environment when first
    read (so no tool server or agent this process starts inherits it), else one drawn then;
    the same for every later call."""
    if env not in _SECRETS:
        _SECRETS[env] = os.environ.pop(env, "") or secrets.token_hex(16)
    return _SECRETS[env]


if __name__ == "__main__":  # verifiers starts each rollout's tool server this way
    LabToolset.run()
