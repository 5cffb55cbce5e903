"""OpenAI: Chat Completions and Responses tool calls run on a lab.

OpenAI has no error flag for tool results: an error goes back as JSON text
``{"error": {"code", "message", "field", "hint"}}`` in the tool message.
"""

from __future__ import annotations

from typing import Any, Literal

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

__all__ = ["chat_tool_messages", "responses_tool_outputs", "run_agent"]


def chat_tool_messages(message: Any, lab: ToolHost) -> tuple[list[dict[str, Any]], list[ToolCall]]:
    """Run the tool calls of a Chat Completions assistant ``message`` on ``lab``.

    Returns the ``{"role": "tool", ...}`` messages to append, and the calls made.
    """
    calls = [
        run_call(lab, c.id, c.function.name, c.function.arguments)
        for c in (message.tool_calls or [])
    ]
    messages = [
        {"role": "tool", "tool_call_id": c.id, "content": result_json(c.result)} for c in calls
    ]
    return messages, calls


def responses_tool_outputs(
    response: Any, lab: ToolHost
) -> tuple[list[dict[str, Any]], list[ToolCall]]:
    """Run the ``function_call`` output items of a Responses API ``response`` on ``lab``.

    Returns the ``function_call_output`` input items to send next, and the calls made.
    """
    calls = [
        run_call(lab, item.call_id, item.name, item.arguments)
        for item in response.output
        if item.type == "function_call"
    ]
    items = [
        {"type": "function_call_output", "call_id": c.id, "output": result_json(c.result)}
        for c in calls
    ]
    return items, calls


def run_agent(
    client: Any,
    model: str,
    lab: ToolHost,
    prompt: str,
    max_turns: int = 20,
    *,
    api: Literal["responses", "chat"] = "responses",
    instructions: str | None = None,
    run: AgentRun | None = None,
) -> AgentRun:
    """Let ``model`` work on ``prompt`` with the lab's tools until it answers or ``max_turns``.

    ``client`` is an ``openai.OpenAI``; ``api`` picks the Responses or Chat Completions API;
    ``run``: the record to fill (:func:`~labtools.providers.calls.run_turns`).
    """
    loop = _run_chat if api == "chat" else _run_responses
    return loop(client, model, lab, prompt, max_turns, instructions, run)


def _run_responses(
    client: Any,
    model: str,
    lab: ToolHost,
    prompt: str,
    max_turns: int,
    instructions: str | None,
    run: AgentRun | None,
) -> AgentRun:
    items: list[Any] = [{"role": "user", "content": prompt}]
    tools = lab.tools("openai-responses")

    def turn() -> Turn:
        response = client.responses.create(
            model=model, input=items, tools=tools, store=False, instructions=instructions
        )
        tokens = token_counts(response.usage, "input_tokens", "output_tokens")
        outputs, calls = responses_tool_outputs(response, lab)
        if not calls:
            return calls, response.output_text, tokens
        items.extend(item.model_dump(exclude_none=True) for item in response.output)
        items.extend(outputs)
        return calls, None, tokens

    return run_turns(turn, max_turns, lab, run)


def _run_chat(
    client: Any,
    model: str,
    lab: ToolHost,
    prompt: str,
    max_turns: int,
    instructions: str | None,
    run: AgentRun | None,
) -> AgentRun:
    messages: list[Any] = [{"role": "system", "content": instructions}] if instructions else []
    messages.append({"role": "user", "content": prompt})
    tools = lab.tools("openai-chat")

    def turn() -> Turn:
        completion = client.chat.completions.create(model=model, messages=messages, tools=tools)
        tokens = token_counts(completion.usage, "prompt_tokens", "completion_tokens")
        message = completion.choices[0].message
        replies, calls = chat_tool_messages(message, lab)
        if not calls:
            return calls, message.content, tokens
        messages.append(message.model_dump(exclude_none=True))
        messages.extend(replies)
        return calls, None, tokens

    return run_turns(turn, max_turns, lab, run)
