"""What every provider loop shares: running one model-issued call, and recording the run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from labtools.errors import InvalidArguments
from labtools.host import ToolHost
from labtools.result import ToolResult

__all__ = ["AgentRun", "ToolCall", "result_json", "run_call"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model made and what the lab answered."""

    id: str
    name: str
    arguments: Any
    result: ToolResult


@dataclass
class AgentRun:
    """The outcome of a ``run_agent`` loop."""

    final_text: str | None = None
    turns: int = 0
    calls: list[ToolCall] = field(default_factory=list)
    stopped: str = "answer"  # "answer" (the model stopped calling tools) or "max_turns"


def run_call(lab: ToolHost, call_id: str, name: str, arguments: Any) -> ToolCall:
    """Run a model's call. ``arguments`` may be JSON text (OpenAI) or an object (others)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            error = InvalidArguments(
                f"arguments are not valid JSON: {exc.msg}",
                field="",
                hint="send the arguments as one JSON object",
            )
            return ToolCall(call_id, name, arguments, ToolResult.failure(error))
    return ToolCall(call_id, name, arguments, lab.call(name, arguments))


def result_json(result: ToolResult) -> str:
    """The text a model reads: the data, or ``{"error": {code, message, field, hint}}``."""
    payload = result.data if result.ok else {"error": result.error}
    return json.dumps(payload, separators=(",", ":"))
