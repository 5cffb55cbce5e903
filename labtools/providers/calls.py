"""What every provider shares: running one model-issued call, the turn loop, the record."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labtools.errors import InvalidArguments
from labtools.host import ToolHost
from labtools.result import ToolResult

__all__ = [
    "AgentRun",
    "TokenUsage",
    "ToolCall",
    "Turn",
    "result_json",
    "run_call",
    "run_turns",
    "token_counts",
]


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model made and what the lab answered."""

    id: str
    name: str
    arguments: Any
    result: ToolResult


@dataclass
class TokenUsage:
    """Tokens as the API counted them, summed over a run's responses."""

    input_tokens: int = 0
    output_tokens: int = 0
    #: responses that carried no usage (some OpenAI-compatible servers leave it out)
    unreported: int = 0

    def add(self, counts: tuple[int, int] | None) -> None:
        """Add one response's ``(input, output)`` counts; ``None``: it reported none."""
        if counts is None:
            self.unreported += 1
            return
        self.input_tokens += counts[0]
        self.output_tokens += counts[1]

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "unreported": self.unreported,
        }


@dataclass
class AgentRun:
    """The outcome of a ``run_agent`` loop."""

    final_text: str | None = None
    turns: int = 0
    calls: list[ToolCall] = field(default_factory=list)
    #: "answer" (the model stopped calling tools), "ended" (the host's episode is over: a
    #: session that was submitted or ran out of budget) or "max_turns"
    stopped: str = "answer"
    #: the tokens of the model's responses, from the API's own counts
    usage: TokenUsage = field(default_factory=TokenUsage)


#: one model turn: the calls it made (run, and their results already in the conversation), the
#: model's text when it made none, and the response's token counts (:func:`token_counts`)
Turn = tuple[list[ToolCall], str | None, tuple[int, int] | None]


def token_counts(usage: Any, input_field: str, output_field: str) -> tuple[int, int] | None:
    """A response's ``(input, output)`` tokens, read from its ``usage`` object's two fields (a
    field the API left empty counts 0); ``None`` when the response carried no usage."""
    if usage is None:
        return None
    return (getattr(usage, input_field, None) or 0, getattr(usage, output_field, None) or 0)


def run_turns(
    turn: Callable[[], Turn], max_turns: int, lab: ToolHost, run: AgentRun | None = None
) -> AgentRun:
    """The agent loop every provider runs: call ``turn`` until the model answers without
    calling a tool, ``lab``'s episode is over (``lab.done``, a session's), or ``max_turns``
    turns have been taken. ``run``: the record to fill (a caller keeps it to read the turns
    and tokens of a loop that an API error ended); a new one by default."""
    run = run if run is not None else AgentRun()
    while run.turns < max_turns:
        calls, text, tokens = turn()
        run.turns += 1  # after it: a turn an API error ended is not one taken
        run.usage.add(tokens)
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
