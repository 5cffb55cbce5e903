"""Google Gemini (google-genai): ``function_call`` parts run on a lab.

Results go back as ``function_response`` parts whose response holds ``output`` on success and
``error`` on failure, the SDK's convention.
"""

from __future__ import annotations

from typing import Any

from labtools.host import ToolHost
from labtools.providers.calls import AgentRun, ToolCall, Turn, run_call, run_turns, token_counts

__all__ = ["function_response_content", "run_agent"]


def function_response_content(response: Any, lab: ToolHost) -> tuple[Any | None, list[ToolCall]]:
    """Run the function calls of a ``GenerateContentResponse`` on ``lab``.

    Returns the ``user`` ``Content`` of function responses to send next (``None`` if the model
    called no function), and the calls made.
    """
    from google.genai import types

    calls = [
        run_call(lab, fc.id or "", fc.name, dict(fc.args or {}))
        for fc in (response.function_calls or [])
    ]
    if not calls:
        return None, calls
    parts = []
    for call in calls:
        payload = {"output": call.result.data} if call.result.ok else {"error": call.result.error}
        part = types.Part.from_function_response(name=call.name, response=payload)
        if call.id and part.function_response is not None:
            part.function_response.id = call.id
        parts.append(part)
    return types.Content(role="user", parts=parts), calls


def run_agent(
    client: Any,
    model: str,
    lab: ToolHost,
    prompt: str,
    max_turns: int = 20,
    *,
    system: str | None = None,
    run: AgentRun | None = None,
) -> AgentRun:
    """Let ``model`` work on ``prompt`` with the lab's tools until it answers or ``max_turns``.

    ``client`` is a ``google.genai.Client``; ``run``: the record to fill
    (:func:`~labtools.providers.calls.run_turns`).
    """
    from google.genai import types

    declarations = lab.tools("gemini")[0]["function_declarations"]
    config = types.GenerateContentConfig(
        tools=[
            types.Tool(function_declarations=[types.FunctionDeclaration(**d) for d in declarations])
        ],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        system_instruction=system,
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=prompt)])]

    def turn() -> Turn:
        response = client.models.generate_content(model=model, contents=contents, config=config)
        usage = response.usage_metadata
        tokens = token_counts(usage, "prompt_token_count", "candidates_token_count")
        reply, calls = function_response_content(response, lab)
        if reply is None:
            return calls, _text(response), tokens
        contents.extend((response.candidates[0].content, reply))
        return calls, None, tokens

    return run_turns(turn, max_turns, lab, run)


def _text(response: Any) -> str:
    parts = response.candidates[0].content.parts if response.candidates else []
    return "".join(p.text for p in parts or [] if p.text)
