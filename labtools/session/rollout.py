"""One LLM episode: the provider loop on a session, then the trainer's reward."""

from __future__ import annotations

import importlib
from typing import Any

from labtools.providers.calls import AgentRun
from labtools.session.reward import Reward
from labtools.session.session import Session

__all__ = ["INSTRUCTIONS", "play_model", "rollout"]

INSTRUCTIONS = (
    "You run laboratory instruments through tools. Quantities are objects "
    '{"value": number, "unit": name}. A refused call changes nothing: read its code, field and '
    "hint, then correct it. Finish by calling the submit tool once."
)


def rollout(
    client: Any,
    model: str,
    session: Session,
    *,
    seed: int,
    provider: str = "anthropic",
    max_turns: int | None = None,
    **loop: Any,
) -> tuple[AgentRun, Reward]:
    """Reset ``session`` to ``seed``, let ``model`` work on the task through ``provider``'s loop
    (``"openai"``, ``"anthropic"`` or ``"gemini"``; ``client`` is that SDK's client), and
    return the run and the reward. ``max_turns``: model turns allowed; by default the task's
    call budget (each turn makes at least one call, so the budget ends the episode first).
    ``loop``: the provider loop's own options (OpenAI's ``api="chat"`` for Chat Completions
    instead of Responses, ``max_tokens`` …)."""
    observation = session.reset(seed)
    run = play_model(
        client,
        model,
        session,
        observation["task"],
        provider=provider,
        max_turns=max_turns,
        **loop,
    )
    return run, session.score()


def play_model(
    client: Any,
    model: str,
    session: Session,
    prompt: str,
    *,
    provider: str = "anthropic",
    max_turns: int | None = None,
    **loop: Any,
) -> AgentRun:
    """:func:`rollout`'s model turns on the episode ``session`` is in (reset already), the
    task told by ``prompt`` (the reset's observation's ``task``); the reward is left to the
    caller. An API error propagates; a ``run=`` record in ``loop`` keeps the turns before it."""
    provider_loop = importlib.import_module(f"labtools.providers.{provider}")
    if max_turns is None:
        max_turns = session.task.budget.calls
    extra = {"instructions": INSTRUCTIONS} if provider == "openai" else {"system": INSTRUCTIONS}
    run: AgentRun = provider_loop.run_agent(
        client, model, session, prompt, max_turns, **extra, **loop
    )
    return run
