"""What every provider shares: running one model-issued call, the turn loop, the record."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labtools.errors import InvalidArguments
from labtools.host import ToolHost
from labtools.result import ToolResult

__all__ = ["AgentRun", "ToolCall", "Turn", "result_json", "run_call", "run_turns"]


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
    #: "answer" (the model stopped calling tools), "ended" (the host's episode is over: a
    #: session that was submitted or ran out of budget) or "max_turns"
    stopped: str = "answer"


#: one model turn: the calls it made (run, and their results already in the conversation), and
#: the model's text when it made none
Turn = tuple[list[ToolCall], str | None]


def run_turns(turn: Callable[[], Turn], max_turns: int, lab: ToolHost) -> AgentRun:
    """The agent loop every provider runs: call ``turn`` until the model answers without
    calling a tool, ``lab``'s episode is over (``lab.done``, a session's), or ``max_turns``
    turns have been taken."""
    run = AgentRun()
    while run.turns < max_turns:
        run.turns += 1
        calls, text = turn()
        run.calls += calls
        if not calls:
            run.final_text = text
            return run
        if getattr(lab, "done", False):
            run.stopped = "ended"
            return run
    run.stopped = "max_turns"
    return run


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
