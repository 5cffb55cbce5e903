"""A verifiers (v1) Taskset of grounded tasks: typed task rows, the tools over MCP, the reward
the session's.

Each row is one task and seed. One tool server serves every rollout of the taskset:
:class:`LabToolset` is taskset-scoped (verifiers starts it once per environment worker, with
``python -m`` this module, and tears it down after the eval); its :class:`Rollouts` hold a
:class:`~labtools.session.Session` per rollout, keyed by a random key the rollout's task
draws into the rollout's state, opened at the rollout's first call (from the shelf,
:mod:`labtools.session.shelf`: about a rewind) and reset to the row's seed. The catalogue
is the task's, under the tools' own names. Every call updates the rollout's state with the
episode's end; the reward is the session's :meth:`~labtools.session.Session.score` total,
its parts are metrics, and the rollout stops once the episode ends (a submission, or the
budget).

Eviction: a session is closed (its lab back on the shelf) when its episode ends; a rollout
with no call for ``idle_s`` (default 1,800 s) has its session closed, and a new rollout
beyond ``max_sessions`` (default 128, verifiers' default ``max_concurrent``) closes the least
recently used one; none is closed during its call. A closed rollout's later calls are refused
and change nothing: after its episode ended, as a session refuses them; after an eviction,
with ``truncated`` set (the rollout stops, reward 0), since its episode cannot go on.

The hidden truth comes from the seed and a secret: the value of the environment variable the
config names (``secret_env``, ``LABTOOLS_SECRET``), which the first taskset made in a process
takes out of the environment (:func:`process_secret`), else one drawn then. verifiers writes
configs and task rows to disk in clear, so neither holds it: each task hands it to its
rollout's state (:class:`LabState`, which verifiers never records on a trace), and the tool
server reads it from there with each call, over verifiers' state channel, which it reaches
with its own credential and the rollout's signed coordinates (the rollout's MCP address):
a rollout reads only its own state, so it reaches only its own session. No environment
variable carries the secret to the tool server or an agent. An agent in a local
``subprocess`` runtime still runs as the same user (it could read the host's processes, and
so the server's credential): give a trained agent a sandboxed runtime.

Needs verifiers (the ``verifiers`` extra); ``vf-eval labtools_verifiers`` finds this taskset
through the top-level module of that name.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from pydantic import Field, field_validator

from labtools.errors import MissingExtra, PreconditionFailed, install_hint
from labtools.providers.calls import result_json
from labtools.result import ToolResult
from labtools.server.app import mcp_tool
from labtools.session.registry import task_ids
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.session import Session, fresh_seed
from labtools.session.shelf import SHELF

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
    "LabTaskset",
    "LabToolset",
    "LabToolsetConfig",
    "Rollouts",
    "VerifiersUnavailable",
    "process_secret",
]

#: the environment variable the secret is read from, unless the config names another
SECRET_ENV = "LABTOOLS_SECRET"
#: closed rollouts a tool server remembers (their end, for their late calls): a few hundred
#: bytes each
REMEMBERED = 4096


class LabData(vf.TaskData):
    """One row: the task and the seed its world is drawn from (with the secret). Recorded on
    traces; the agent sees only the prompt."""

    lab_task: str
    seed: int


class LabState(vf.State):
    """The rollout's episode as the trainer sees it, updated after every tool call; and what
    the task puts here for the tool server (never on a trace): the session secret, the
    rollout's key, its task and seed."""

    secret: str = Field(default="", repr=False)
    #: the rollout's session on the tool server (random, drawn by the task's setup)
    rollout: str = Field(default="", repr=False)
    lab_task: str = ""
    seed: int = 0
    calls: int = 0
    terminated: bool = False
    truncated: bool = False
    #: the session's reward total once the episode ended, else 0
    reward: float = 0.0
    #: raw, normalized, validity, efficiency, success and the task's numeric components
    parts: dict[str, float] = Field(default_factory=dict)


class LabToolsetConfig(vf.SharedToolsetConfig):
    """The tool server's settings (with verifiers' own: the runtime it runs in). verifiers
    gives a server at a configured ``url`` no rollout's state, so ``url`` is refused: the
    server must be one verifiers starts."""

    #: the most sessions the server holds open at once: at least the rollouts that run at once
    #: (each ~3 MB); a new rollout beyond it closes the least recently used one
    max_sessions: int = Field(128, ge=1)
    #: a rollout with no call for this long (s) has its session closed
    idle_s: float = Field(1800.0, gt=0)
    #: task ids whose labs the server builds before it serves (the taskset's own, by default)
    warm: list[str] = Field(default_factory=list)

    @field_validator("url")
    @classmethod
    def _started_by_verifiers(cls, url: str | None) -> str | None:
        if url is not None:
            raise ValueError(
                "a LabToolset must be started by verifiers: it gives a server at a configured "
                "url no rollout's state (leave tools.url unset)"
            )
        return url


@dataclass
class _Rollout:
    """One rollout on the server: its session while open, and the episode as last recorded."""

    session: Session | None
    used: float  # the clock when last called (s)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    calls: int = 0
    terminated: bool = False
    truncated: bool = False
    reward: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    #: why the session was closed before its episode ended ("" while open or once ended)
    evicted: str = ""

    def record(self, session: Session) -> None:
        ended = self.terminated or self.truncated
        self.calls = session.usage.calls
        self.terminated, self.truncated = session.terminated, session.truncated
        if session.done and not ended:  # scored once, when the episode ends
            reward = session.score()
            self.reward = reward.total
            self.parts = {
                "raw": reward.raw,
                "normalized": reward.normalized,
                "validity": reward.validity,
                "efficiency": reward.efficiency,
                "success": float(reward.success),
                **{k: float(v) for k, v in reward.components.items() if not isinstance(v, str)},
            }

    def report(self, state: LabState) -> None:
        """The episode as recorded, into the rollout's state (which verifiers takes back)."""
        state.calls, state.terminated, state.truncated = self.calls, self.terminated, self.truncated
        state.reward, state.parts = self.reward, dict(self.parts)


class Rollouts:
    """The sessions of a tool server's rollouts, keyed by each rollout's key (from its state).

    At most ``max_sessions`` open at once. A session is closed when its episode ends, when
    its rollout has made no call for ``idle_s`` seconds (by ``clock``), or, least recently
    used first, when a new rollout needs its place; never during a call (while every open
    session is in a call, a new rollout opens one more). The last :data:`REMEMBERED` closed
    rollouts are remembered, so that a late call gets the episode's end, not a new session.
    """

    def __init__(
        self,
        max_sessions: int = 128,
        idle_s: float = 1800.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions, self.idle_s, self._clock = max_sessions, idle_s, clock
        self._open: OrderedDict[str, _Rollout] = OrderedDict()  # least recently used first
        self._closed: OrderedDict[str, _Rollout] = OrderedDict()  # oldest first
        self._catalogues: dict[str, list[dict[str, Any]]] = {}

    def __len__(self) -> int:
        """The sessions open now."""
        return len(self._open)

    def catalogue(self, lab_task: str) -> list[dict[str, Any]]:
        """The task's tools in the MCP format (each task's listed once per server)."""
        if lab_task not in self._catalogues:
            with Session(lab_task) as session:  # from the shelf, and back on it
                self._catalogues[lab_task] = session.tools("mcp")
        return self._catalogues[lab_task]

    async def call(self, state: LabState, name: str, arguments: object) -> ToolResult:
        """The rollout's call on its session (opened at its first call), the rollout's state
        updated from the episode; a refusal, changing nothing, for a rollout without a key or
        whose session was closed."""
        if not (state.rollout and state.secret and state.lab_task):
            return ToolResult.failure(
                PreconditionFailed(
                    "no rollout: this server serves verifiers rollouts of labtools' tasks",
                    hint="call it at the address verifiers gives a LabTask's rollout",
                )
            )
        now = self._clock()
        self._close_idle(now)
        rollout = self._rollout(state, now)
        rollout.used = now
        async with rollout.lock:  # one call of a rollout at a time
            session = rollout.session
            if session is None:
                result = self._closed_call(rollout)
            else:
                result = await session.acall_tool(name, arguments)
                rollout.record(session)
                if session.done:
                    self._close(state.rollout, "")
            rollout.report(state)
        return result

    def _rollout(self, state: LabState, now: float) -> _Rollout:
        """The state's rollout: open (now the most recently used), closed, or new."""
        if (rollout := self._open.get(state.rollout)) is not None:
            self._open.move_to_end(state.rollout)
            return rollout
        if (rollout := self._closed.get(state.rollout)) is not None:
            return rollout
        if not (state.calls or state.terminated or state.truncated):
            return self._start(state, now)
        # a rollout that made calls on a server that no longer knows it (one restarted)
        rollout = _Rollout(None, now, evicted="its server no longer holds it")
        rollout.calls, rollout.terminated = state.calls, state.terminated
        rollout.truncated, rollout.reward = state.truncated, state.reward
        rollout.parts = dict(state.parts)
        return rollout

    def _start(self, state: LabState, now: float) -> _Rollout:
        while len(self._open) >= self.max_sessions:
            free = (key for key, rollout in self._open.items() if not rollout.lock.locked())
            oldest = next(free, None)
            if oldest is None:
                break  # every open session is in a call
            self._close(oldest, f"{self.max_sessions} newer rollouts needed its place")
        session = Session(state.lab_task, secret=state.secret)
        session.reset(state.seed)
        rollout = self._open[state.rollout] = _Rollout(session, now)
        return rollout

    def _close_idle(self, now: float) -> None:
        for key, rollout in list(self._open.items()):
            if now - rollout.used <= self.idle_s:
                break  # least recently used first: the rest are newer
            if not rollout.lock.locked():
                self._close(key, f"no call for {self.idle_s:g} s")

    def _close(self, key: str, reason: str) -> None:
        rollout = self._open.pop(key)
        assert rollout.session is not None
        rollout.session.close()
        ended = rollout.terminated or rollout.truncated
        rollout.session, rollout.evicted = None, "" if ended else reason
        self._closed[key] = rollout
        while len(self._closed) > REMEMBERED:
            self._closed.popitem(last=False)

    @staticmethod
    def _closed_call(rollout: _Rollout) -> ToolResult:
        """A closed rollout's call: refused, counted as the session counts its refusals."""
        rollout.calls += 1
        if rollout.terminated or rollout.truncated:
            error = PreconditionFailed(
                "the episode has ended", hint="the trainer starts a new rollout"
            )
        else:
            rollout.truncated = True  # the episode cannot go on: the rollout stops
            error = PreconditionFailed(
                f"this rollout's session was closed: {rollout.evicted}",
                hint="the trainer starts a new rollout",
            )
        return ToolResult.failure(error)


class LabToolset(vf.Toolset[LabToolsetConfig, LabState]):
    """The tools of every rollout of a taskset, each rollout on its own session, under the
    tools' own names (the statements name them)."""

    TOOL_PREFIX: ClassVar[str | None] = None

    def __init__(self, config: LabToolsetConfig) -> None:
        super().__init__(config)
        self.rollouts = Rollouts(config.max_sessions, config.idle_s)

    async def setup(self) -> None:
        """Room on the shelf for every open session's lab, and the warm tasks' labs built."""
        SHELF.reserve(self.config.max_sessions)
        for lab_task in self.config.warm:
            self.rollouts.catalogue(lab_task)

    def register(self, mcp: MCPServer) -> None:
        # the catalogue is the task's, so the SDK server's own handlers are replaced
        server = cast(Any, mcp)
        server.list_tools = self._with_state(self.list_tools)
        server.call_tool = self._with_state(self.call_tool)

    async def list_tools(self) -> list[types.Tool]:
        if not self.state.lab_task:
            raise ValueError("no rollout: call this server at a LabTask rollout's address")
        return [mcp_tool(entry) for entry in self.rollouts.catalogue(self.state.lab_task)]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> types.CallToolResult:
        """The call through the rollout's session; the text is what a model reads (the data,
        or ``{"error": {code, message, field, hint}}``), the data also structured."""
        result = await self.rollouts.call(self.state, name, arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result_json(result))],
            structured_content=result.data if result.ok else None,
            is_error=not result.ok,
        )


class LabTask(vf.Task[LabData, LabState, vf.TaskConfig]):
    """One row, with the taskset's secret (kept off the row, which traces record)."""

    def __init__(
        self, data: LabData, config: vf.TaskConfig | None = None, *, secret: str = ""
    ) -> None:
        super().__init__(data, config)
        self._secret = secret

    async def setup(self, trace: vf.Trace) -> None:
        """Hand the rollout's state what its tool server reads: the secret, a fresh key for
        the rollout's session, the task and the seed."""
        if not self._secret:
            raise RuntimeError("a LabTask comes from LabTaskset.load(), which gives its secret")
        state = cast(LabState, trace.state)
        state.secret, state.rollout = self._secret, secrets.token_hex(16)
        state.lab_task, state.seed = self.data.lab_task, self.data.seed

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
    task: vf.TaskConfig = vf.TaskConfig()
    #: the taskset's tool server (``--env.taskset.tools.*``)
    tools: LabToolsetConfig = LabToolsetConfig()
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

    @classmethod
    def toolsets(cls, config: LabConfig) -> list[vf.Toolset]:
        """One tool server for the taskset's rollouts, its labs built for the taskset's tasks
        before it serves (unless its config names others)."""
        tools = config.tools
        if not tools.warm:
            tools = tools.model_copy(update={"warm": config.lab_tasks or task_ids()})
        return [LabToolset(tools)]


#: the secret of each variable name, once this process has read (or drawn) it
_SECRETS: dict[str, str] = {}


def process_secret(env: str) -> str:
    """This process's secret: the value of ``env``, taken out of the environment when first
    read (so no tool server or agent this process starts inherits it), else one drawn then;
    the same for every later call."""
    if env not in _SECRETS:
        _SECRETS[env] = os.environ.pop(env, "") or secrets.token_hex(16)
    return _SECRETS[env]


if __name__ == "__main__":  # verifiers starts the taskset's tool server this way
    LabToolset.run()
