"""An OpenEnv environment over sessions, served by OpenEnv's own app with one session per
connection.

The trainer's side is OpenEnv's control plane: ``reset(seed, episode_id)`` and ``state``; the
agent acts through OpenEnv's MCP actions, ``ListToolsAction`` and ``CallToolAction``. The
reward arrives on the observation that ends the episode (a submission, or the budget), with
``done``; every other observation has ``reward=None``.

OpenEnv's Task API lists the families' instances by split (``list_splits``, ``num_tasks``,
``get_task``, ``get_task_range``, ``list_tasks``: :mod:`labtools.session.splits` numbers
them), and ``reset(split=..., index=...)`` plays one, its world drawn with the split's secret:
``train`` the server's own, ``validation`` the public dev secret, the test splits the
evaluator's (given to :func:`app`, or :data:`~labtools.session.splits.TEST_SECRET_ENV`).

Needs OpenEnv, whose PyPI distribution is ``openenv`` (the ``openenv`` extra: ``pip install -e
'/path/to/labtools[openenv]'``).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import Field

from labtools.errors import MissingExtra, install_hint
from labtools.result import ToolResult
from labtools.session.openenv_manifest import DEFAULT_TASK, identity
from labtools.session.session import Secret, Session, fresh_seed
from labtools.session.shelf import SHELF
from labtools.session.splits import (
    SPLITS,
    MissingSecret,
    UnknownSplit,
    check_test_secret,
    split_instance,
    split_secret,
    split_size,
)

OPENENV_INSTALL_HINT = install_hint("openenv")
#: the environment's name in OpenEnv's Task API routes (``/labtools/splits``, ...)
ENV_NAME = "labtools"


class OpenEnvUnavailable(MissingExtra):
    """OpenEnv is not installed; ``hint`` says what to install."""


class TaskRangeTooLong(ValueError):
    """A Task API range longer than a request may return."""


log = logging.getLogger(__name__)


@contextlib.contextmanager
def _without_gradio() -> Iterator[None]:
    """OpenEnv's package imports Gradio for its web interface (seconds: most of the import),
    which ``create_fastapi_app`` never uses; its ``__init__`` tolerates Gradio missing. Hidden
    only while OpenEnv is imported, and only if nothing imported it already; OpenEnv's
    ``create_app`` with ``ENABLE_WEB_INTERFACE`` still imports it when asked."""
    if "gradio" in sys.modules:
        yield
        return
    sys.modules["gradio"] = None  # type: ignore[assignment]  # import gradio: ModuleNotFoundError
    try:
        yield
    finally:
        if sys.modules.get("gradio", 0) is None:
            del sys.modules["gradio"]


try:
    with _without_gradio():
        from openenv.core.env_server import (  # type: ignore[import-untyped]
            CallToolAction,
            CallToolObservation,
            Environment,
            ListToolsAction,
            ListToolsObservation,
            Observation,
            State,
            Tool,
            create_fastapi_app,
        )
        from openenv.core.env_server.types import EnvironmentMetadata  # type: ignore[import-untyped]
    from starlette.responses import JSONResponse
    from starlette.websockets import WebSocketDisconnect
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise OpenEnvUnavailable(
        f"labtools.session.openenv needs OpenEnv ({exc})", extra="openenv"
    ) from exc

__all__ = [
    "OPENENV_INSTALL_HINT",
    "CallToolAction",
    "CallToolObservation",
    "LabEnvironment",
    "LabResetObservation",
    "LabState",
    "ListToolsAction",
    "ListToolsObservation",
    "OpenEnvUnavailable",
    "app",
    "environment_class",
]


class LabResetObservation(Observation):
    """What a reset tells the agent: the statement, the tools' names and the budget.

    ``tool_names``, not ``tools``: OpenEnv's MCP client reads any observation with ``tools``
    as a tool listing."""

    task: str = Field(description="The task's statement")
    task_id: str = Field(description="The task's id, or the instance's name")
    tool_names: list[str] = Field(description="The tools' names (ListToolsAction: schemas)")
    budget: dict[str, Any] = Field(description="The episode's limits")


class LabState(State):
    """OpenEnv's state (episode id, steps) and the session's: never hidden truth."""

    task: str
    virtual_time_s: float | None = None
    consumables: dict[str, Any] = Field(default_factory=dict)
    budget: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False


class LabEnvironment(Environment):
    """One :class:`~labtools.session.Session` per instance: OpenEnv's server makes one per
    connection. ``LabEnvironment(task, secret=...)`` in process; :func:`environment_class`
    for a server, whose factory takes no arguments."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    #: what a server's instances are built with (:func:`environment_class`)
    default_task: ClassVar[str] = DEFAULT_TASK
    default_secret: ClassVar[Secret | None] = None
    #: the test splits' secret (``None``: :data:`~labtools.session.splits.TEST_SECRET_ENV`'s)
    test_secret: ClassVar[Secret | None] = None
    #: the most task specs one ``get_task_range`` (or ``list_tasks``' preview) returns
    MAX_TASK_RANGE: ClassVar[int] = 1000

    def __init__(self, task: str | None = None, *, secret: Secret | None = None) -> None:
        super().__init__()
        self._task = task or self.default_task
        # one secret for the instance's episodes (and the train split's), as a Session's
        chosen = secret if secret is not None else self.default_secret
        self._secret: Secret = chosen if chosen is not None else secrets.token_bytes(16)
        self._session: Session | None = None
        self._episode_id: str | None = None

    @property
    def session(self) -> Session:
        """The environment's session, built when first needed: OpenEnv's server builds an
        environment for each Task API request, which needs no lab."""
        if self._session is None:
            self._session = Session(self._task, secret=self._secret)
        return self._session

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        *,
        task: str | None = None,
        split: str | None = None,
        index: int | None = None,
    ) -> LabResetObservation:
        """Start an episode on ``seed`` (``None``: a fresh 64-bit one); ``task=`` switches task,
        ``split=`` (with ``index=``, or one drawn at random) plays that split's instance with
        the split's secret. ``episode_id`` names it in observations and state (default: the
        session's)."""
        seed, chosen, secret = self._episode(seed, task, split, index)
        observation = self.session.reset(seed, task=chosen, secret=secret)
        return self._observed(observation, episode_id)

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        *,
        task: str | None = None,
        split: str | None = None,
        index: int | None = None,
    ) -> LabResetObservation:
        """:meth:`reset` on the server's event loop, as :meth:`step_async` steps: a rewind
        takes milliseconds (its instruments set up on this loop), and a new connection's lab
        comes from the shelf or is built."""
        seed, chosen, secret = self._episode(seed, task, split, index)
        observation = await self.session.areset(seed, task=chosen, secret=secret)
        return self._observed(observation, episode_id)

    def _episode(
        self, seed: int | None, task: str | None, split: str | None, index: int | None
    ) -> tuple[int, str | None, Secret | None]:
        """A reset's seed, task and secret from its arguments."""
        seed = seed if seed is not None else fresh_seed()
        if split is None:
            if index is not None:
                raise ValueError("index= numbers a split's instances: give split= too")
            return seed, task, None
        if task is not None:
            raise ValueError("reset takes a task or a split (and index), not both")
        if index is None:
            index = secrets.randbelow(split_size(split))
        return seed, split_instance(split, index), self._split_secret(split)

    def _observed(self, observation: dict[str, Any], episode_id: str | None) -> LabResetObservation:
        """The reset's observation, the episode named ``episode_id`` or the session's."""
        self._episode_id = episode_id or self.session.episode_id
        return LabResetObservation(
            task=observation["task"],
            task_id=self.session.task.id,
            tool_names=observation["tools"],
            budget=observation["budget"],
            metadata=self._metadata(),
        )

    def _split_secret(self, split: str) -> Secret:
        """``train``: the server's secret (one per run, never published); otherwise
        :func:`~labtools.session.splits.split_secret`'s, the test splits' from
        :attr:`test_secret` first."""
        if split == "train":
            return self._secret
        if split.startswith("test") and self.test_secret is not None:
            return self.test_secret
        return split_secret(split)

    # -- OpenEnv's Task API: discovery, with no side effects and no lab -----------------------
    def list_splits(self) -> list[dict[str, Any]]:
        """The four splits, each with its OpenEnv type and its number of instances."""
        return [
            {
                "name": split,
                "type": split if split in ("train", "validation") else "test",
                "num_tasks": split_size(split),
            }
            for split in SPLITS
        ]

    def num_tasks(self, split: str) -> int:
        return split_size(split)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        """Instance ``index`` of ``split``: its name (``reset(split=, index=)`` plays it),
        family, level and structure. ``IndexError`` outside ``0 ≤ index < num_tasks``."""
        name = split_instance(split, index)
        return {
            "id": str(name),
            "index": index,
            "split": split,
            "family": name.family,
            "level": name.level,
            "structure": name.structure,
        }

    def get_task_range(
        self, split: str, start: int | None = None, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Instances ``start`` to ``stop`` (a slice's bounds) of ``split``, at most
        :attr:`MAX_TASK_RANGE` of them (a longer range is refused, not cut short)."""
        indices = range(split_size(split))[slice(start, stop)]
        if len(indices) > self.MAX_TASK_RANGE:
            raise TaskRangeTooLong(
                f"{len(indices)} tasks asked for; at most {self.MAX_TASK_RANGE} per request"
            )
        return [self.get_task(split, i) for i in indices]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """A preview: the first :attr:`MAX_TASK_RANGE` instances of ``split`` (``num_tasks``
        counts them all)."""
        return self.get_task_range(split, 0, self.MAX_TASK_RANGE)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """A ``ListToolsAction`` lists the tools (MCP schemas); a ``CallToolAction`` calls one:
        its ``result`` is the tool's result, ``{"ok": true, "data": ...}`` or ``{"ok": false,
        "error": {code, message, field, hint}}`` (a refusal, which changes nothing)."""
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(
                tools=self._tools(), done=self.session.done, metadata=self._metadata()
            )
        if not isinstance(action, CallToolAction):
            raise TypeError(f"an action is a ListToolsAction or a CallToolAction, not {action!r}")
        ended = self.session.done
        result = self.session.call_tool(action.tool_name, action.arguments)
        return self._observe(action.tool_name, result, ended)

    async def step_async(
        self, action: Any, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        """:meth:`step`, a tool call awaited on the server's own event loop (OpenEnv runs a
        synchronous step on a worker thread; with many connections the threads' turns at the
        interpreter cost more than the call)."""
        if not isinstance(action, CallToolAction):
            return self.step(action, timeout_s, **kwargs)
        ended = self.session.done
        result = await self.session.acall_tool(action.tool_name, action.arguments)
        return self._observe(action.tool_name, result, ended)

    @property
    def state(self) -> LabState:
        state = self.session.state()
        return LabState(
            episode_id=self._episode_id,
            step_count=state["steps"],
            task=state["task"],
            virtual_time_s=state["virtual_time_s"],
            consumables=state["consumables"],
            budget=state["budget"],
            terminated=state["terminated"],
            truncated=state["truncated"],
        )

    def close(self) -> None:
        if self._session is not None:
            self._session.close()

    def get_metadata(self) -> EnvironmentMetadata:
        """What ``/metadata`` serves: the manifest's name, version and description
        (:func:`labtools.session.openenv_manifest.identity`)."""
        return EnvironmentMetadata(**identity())

    def _observe(self, name: str, result: ToolResult, ended: bool) -> CallToolObservation:
        """The reward comes once, with the observation that ends the episode."""
        done = self.session.done
        return CallToolObservation(
            tool_name=name,
            result=result.to_dict(),
            done=done,
            reward=self.session.score().total if done and not ended else None,
            metadata=self._metadata(),
        )

    def _tools(self) -> list[Tool]:
        return [
            Tool(
                name=t["name"], description=t.get("description", ""), input_schema=t["inputSchema"]
            )
            for t in self.session.tools("mcp")
        ]

    def _metadata(self) -> dict[str, Any]:
        return {
            "episode_id": self._episode_id,
            "steps": self.session.usage.calls,
            "terminated": self.session.terminated,
            "truncated": self.session.truncated,
        }


def environment_class(
    task: str = DEFAULT_TASK, *, secret: Secret | None = None, test_secret: Secret | None = None
) -> type[LabEnvironment]:
    """A :class:`LabEnvironment` subclass whose instances take no arguments (OpenEnv's server
    builds one per connection) and draw their truth from ``task`` and ``secret`` — without
    one, a secret drawn here, shared by every connection, so seeds tell episodes apart (the
    ``train`` split's too). ``test_secret``: the evaluator's, for the test splits."""
    shared = secret if secret is not None else secrets.token_bytes(16)
    if test_secret is not None:
        check_test_secret(test_secret, "test_secret")
    namespace = {
        "default_task": task,
        "default_secret": shared,
        "test_secret": test_secret,
        "__module__": __name__,
    }
    return type(f"LabEnvironment_{task}", (LabEnvironment,), namespace)


def app(
    task: str = DEFAULT_TASK,
    *,
    secret: Secret | None = None,
    test_secret: Secret | None = None,
    max_sessions: int = 8,
    warm: int = 0,
) -> Any:
    """OpenEnv's FastAPI app (``create_fastapi_app``) over ``task``: up to ``max_sessions``
    WebSocket connections at once, each with its own session (one more is refused with
    ``CAPACITY_REACHED``). Serve it with ``uvicorn.run(app(...), port=8000)``; drive it with
    OpenEnv's ``MCPToolClient`` or ``GenericEnvClient``. Only ``/ws`` keeps an episode:
    OpenEnv's HTTP ``/reset`` and ``/step`` build an environment per request. A closed
    connection's lab waits on the shelf (:mod:`labtools.session.shelf`, with room for
    ``max_sessions``) for the next connection, which then costs about a rewind. On loopback or
    a LAN, ``uvicorn.run(..., ws_per_message_deflate=False)`` saves compressing every message.
    ``warm``: labs of ``task`` built in a background thread from the start, waiting on the shelf
    for the first connections (about 20 ms and 3 MB each), so a burst of connections at the
    start of a run does not wait for builds.

    The Task API's routes are OpenEnv's, under ``/labtools/`` (``/labtools/splits``,
    ``/labtools/num_tasks``, ...); an unknown split, a range too long or a test split without
    the evaluator's secret (``test_secret``, or the environment's) is a 400 naming it."""
    application = create_fastapi_app(
        environment_class(task, secret=secret, test_secret=test_secret),
        CallToolAction,
        CallToolObservation,
        max_concurrent_envs=max_sessions,
        env_name=ENV_NAME,
    )
    for refusal in (UnknownSplit, TaskRangeTooLong, MissingSecret):
        application.add_exception_handler(refusal, _bad_request)
    SHELF.reserve(max(max_sessions, warm))  # a closed connection's lab waits for the next one
    if warm > 0:
        threading.Thread(target=_warm, args=(task, warm), daemon=True, name="warm").start()
    application.add_middleware(_QuietDisconnect)
    return application


def _warm(task: str, count: int) -> None:
    """``count`` labs of ``task`` on the shelf: built together, then closed (a session takes a
    shelved lab if there is one, so each is closed only once all are built)."""
    built = [Session(task) for _ in range(count)]
    for session in built:
        session.close()
    log.info("%d labs of %s built and shelved", count, task)


async def _bad_request(request: Any, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=400)


class _QuietDisconnect:
    """ASGI middleware: a WebSocket client that leaves first is an ordinary end, not an error.

    OpenEnv's ``/ws`` handler closes the socket after the client's ``close`` message and
    catches only ``RuntimeError`` there, but Starlette raises ``WebSocketDisconnect`` when the
    client has already gone, which uvicorn would log as an ERROR with a traceback. That one
    exception, on a WebSocket, is logged at debug level; every other exception propagates."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect as exc:
            log.debug(
                "OpenEnv client %s left before the server closed (code %s)",
                scope.get("client"),
                exc.code,
            )
