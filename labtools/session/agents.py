"""Scripted agents for evaluation: the task's expert and naive protocols, its shortcuts
(``prior``, ``inversion``: answers without measuring; ``no_controls``: one uncalibrated
reading; for a task whose agent states its own hypothesis, ``trivial``: a claim the prior
settles, and ``wrong_verdict``: the expert's test with its verdict turned round), and a random
agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from labtools.session.session import Session

__all__ = ["AGENTS", "SHORTCUTS", "random_agent"]

Agent = Callable[[Session, int], None]


def random_agent(session: Session, seed: int, steps: int = 25) -> None:
    """Random tool calls with schema-shaped random arguments, then a random submission.

    Strings are drawn from the deck's own names, so calls are often valid and things happen.
    """
    rng = np.random.default_rng(seed)
    tools = {t["name"]: t["input_schema"] for t in session.tools()}
    submit = next(name for name in tools if name.startswith("submit_"))
    words = _vocabulary(session)
    actions = [name for name in tools if name != submit]
    for _ in range(steps):
        if session.done:
            return
        name = actions[int(rng.integers(len(actions)))]
        session.call_tool(name, _sample(tools[name], rng, words))
    if not session.done:
        session.call_tool(submit, _sample(tools[submit], rng, words))


def _vocabulary(session: Session) -> list[str]:
    deck = session.call_tool("lh_get_deck", {})
    words = ["reader", "A1", "B2", "H12"]
    if deck.ok and deck.data is not None:
        words += list(deck.data.get("labels", {}))
        words += [lw["name"] for lw in deck.data.get("labware", [])]
        words += [f"{lw['name']}:{w}" for lw in deck.data.get("labware", []) for w in ("A1", "B3")]
        words += list(deck.data.get("tips_left", {})) + list(deck.data.get("free_sites", []))
    return words


def _sample(schema: dict[str, Any], rng: np.random.Generator, words: list[str]) -> Any:
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    kind = schema.get("type")
    if kind == "object":
        return {k: _sample(v, rng, words) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_sample(schema["items"], rng, words) for _ in range(int(rng.integers(0, 3)))]
    if kind == "integer":
        return int(rng.integers(0, 12))
    if kind == "number":
        return float(np.round(10 ** rng.uniform(-1, 3), 3))
    if kind == "boolean":
        return bool(rng.integers(2))
    return words[int(rng.integers(len(words)))]


AGENTS: dict[str, Agent] = {
    "expert": lambda session, seed: session.task.expert(session),
    "naive": lambda session, seed: session.task.naive(session),
    "random": random_agent,
    "prior": lambda session, seed: session.task.prior(session),
    "inversion": lambda session, seed: session.task.inversion(session),
    "no_controls": lambda session, seed: session.task.no_controls(session),
    "trivial": lambda session, seed: getattr(session.task, "trivial")(session),  # noqa: B009
    "wrong_verdict": lambda session, seed: getattr(session.task, "wrong_verdict")(session),  # noqa: B009
}
#: the agents a task defines only if it can (:func:`labtools.session.evaluate.implements`)
SHORTCUTS = ("prior", "inversion", "no_controls", "trivial", "wrong_verdict")
