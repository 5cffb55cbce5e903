"""Anthropic Messages API: ``tool_use`` blocks run on a lab; errors flagged with ``is_error``."""

from __future__ import annotations

from typing import Any

from labtools.host import ToolHost
from labtools.providers.calls import (
    AgentRun,
    ToolCall,
    Turn,
    result_json,
    run_call,
    run_turns,
    token_counts,
)

__all__ = ["run_agent", "tool_result_message"]


def tool_result_message(
    message: Any, lab: ToolHost
) -> tuple[dict[str, Any] | None, list[ToolCall]]:
    """Run the ``tool_use`` blocks of an assistant ``message`` on ``lab``.

    Returns the ``user`` message of ``tool_result`` blocks to send next (``None`` if the model
    called no tool), and the calls made.
    """
    calls = [
        run_call(lab, block.id, block.name, block.input)
        for block in message.content
        if block.type == "tool_use"
    ]
    if not calls:
        return None, calls
    blocks = []
    for call in calls:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call.id,
            "content": result_json(call.result),
        }
        if not call.result.ok:
            block["is_error"] = True
        blocks.append(block)
    return {"role": "user", "content": blocks}, calls


def run_agent(
    client: Any,
    model: str,
    lab: ToolHost,
    prompt: str,
    max_turns: int = 20,
    *,
    system: str | None = None,
    max_tokens: int = 4096,
    run: AgentRun | None = None,
) -> AgentRun:
    """Let ``model`` work on ``prompt`` with the lab's tools until it answers or ``max_turns``.

    ``client`` is an ``anthropic.Anthropic``; ``run``: the record to fill
    (:func:`~labtools.providers.calls.run_turns`).
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    tools = lab.tools("anthropic")
    extra = {"system": system} if system else {}

    def turn() -> Turn:
        message = client.messages.create(
            model=model, max_tokens=max_tokens, messages=messages, tools=tools, **extra
        )
        tokens = token_counts(message.usage, "input_tokens", "output_tokens")
        reply, calls = tool_result_message(message, lab)
        if reply is None:
            return calls, "".join(b.text for b in message.content if b.type == "text"), tokens
        content = [b.model_dump(exclude_none=True) for b in message.content]
        messages.extend(({"role": "assistant", "content": content}, reply))
        return calls, None, tokens

    return run_turns(turn, max_turns, lab, run)
