"""A Gymnasium ``Env`` over a session: text in, text out, the reward at the end.

An action is a JSON tool call ``{"tool": name, "arguments": {...}}``; the observation after
``reset`` is the task (statement, budget, and every tool with its description and input
schema) and after each step the call's result, both as ASCII JSON text. The reward is 0 until
the episode terminates (submission) or is truncated (budget), then the session's score; a step
after that raises :class:`gymnasium.error.ResetNeeded`. Needs ``gymnasium`` (the ``gym`` extra).
:func:`vector_env` runs several in Gymnasium's vector environments.
"""

from __future__ import annotations

import functools
import json
import secrets
import string
from typing import Any

import gymnasium
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from labtools.errors import InvalidArguments
from labtools.result import ToolResult
from labtools.session.session import Session, fresh_seed

__all__ = ["LabEnv", "vector_env"]

_CHARSET = frozenset(string.printable)


class LabEnv(gymnasium.Env[str, str]):
    """``gymnasium.make``-free: ``LabEnv("dye_quantification")``; ``options={"task": id}`` in
    ``reset`` switches task."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's own class attribute

    def __init__(
        self,
        task: str = "dye_quantification",
        *,
        secret: str | bytes | None = None,
        max_length: int = 200_000,
    ) -> None:
        self.session = Session(task, secret=secret)
        self.observation_space = spaces.Text(max_length=max_length, min_length=1, charset=_CHARSET)
        self.action_space = spaces.Text(max_length=20_000, min_length=0, charset=_CHARSET)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        episode_seed = seed if seed is not None else fresh_seed(self.np_random)
        task = (options or {}).get("task")
        observation = self.session.reset(episode_seed, task=task)
        observation["tools"] = self.session.tools("json-schema")
        return _text(observation), {"episode_id": self.session.episode_id}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session.done or self.session.episode_id is None:
            raise ResetNeeded(
                "the episode has ended: call reset()"
                if self.session.done
                else "call reset() before step()"
            )
        try:
            call = json.loads(action)
            if not isinstance(call, dict) or set(call) != {"tool", "arguments"}:
                raise ValueError("not {'tool', 'arguments'}")
        except ValueError as exc:
            result = ToolResult.failure(
                InvalidArguments(
                    f'an action is a JSON object {{"tool": name, "arguments": {{...}}}}: {exc}',
                    field="",
                    hint='e.g. {"tool": "lh_get_deck", "arguments": {}}',
                )
            )
            self.session.usage.calls += 1
        else:
            result = self.session.call_tool(call["tool"], call["arguments"])
        terminated, truncated = self.session.terminated, self.session.truncated
        reward = self.session.score().total if terminated or truncated else 0.0
        state = {k: v for k, v in self.session.state().items() if k != "episode_id"}
        return _text(result.to_dict()), reward, terminated, truncated, {"state": state}

    def close(self) -> None:
        self.session.close()


def vector_env(
    task: str,
    n: int,
    *,
    secret: str | bytes | None = None,
    asynchronous: bool = False,
    **options: Any,
) -> gymnasium.vector.VectorEnv:
    """``n`` :class:`LabEnv` of ``task`` side by side: a :class:`~gymnasium.vector.SyncVectorEnv`,
    or with ``asynchronous`` an :class:`~gymnasium.vector.AsyncVectorEnv`, one process each.

    Every sub-environment draws its truth with the same ``secret`` (without one, a secret drawn
    here), so the seeds alone tell episodes apart, and the same seeds give the same results in
    both. Observations and actions are tuples of text; a sub-environment whose episode ended
    resets on its next step (Gymnasium's autoreset), drawing the seed from its own generator.
    The asynchronous form never uses shared memory (Gymnasium reads Text observations from it
    once, at construction, so every later observation would be blank) and starts its
    processes with ``spawn`` unless ``context`` says otherwise (forking a process that has
    threads, as trainers do, can deadlock). ``options`` go to the vector environment
    (``context``, ``autoreset_mode``, ...).
    """
    if n < 1:
        raise ValueError(f"a vector environment has 1 or more environments, not {n}")
    shared = secret if secret is not None else secrets.token_bytes(16)
    make = functools.partial(LabEnv, task, secret=shared)
    if asynchronous:
        if options.get("shared_memory"):
            raise ValueError("LabEnv's text observations cannot go through shared memory")
        options["shared_memory"] = False
        options.setdefault("context", "spawn")
        return gymnasium.vector.AsyncVectorEnv([make] * n, **options)
    return gymnasium.vector.SyncVectorEnv([make] * n, **options)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)
