"""Episodes as training data: chat messages with tool calls and results, plus the reward.

One record per episode, in the form SFT and RL trainers read (TRL's tool-calling datasets,
OpenAI-style chat)::

    {"messages": [{"role": "system", "content": ...},
                  {"role": "user", "content": <the task statement>},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1",
                      "type": "function", "function": {"name": ..., "arguments": {...}}}]},
                  {"role": "tool", "tool_call_id": "call_1", "name": ..., "content": <JSON>},
                  ...],
     "tools": [<OpenAI chat tool schemas>],
     "reward": total, "components": {...}, "success": ..., "raw": ..., "normalized": ...,
     "validity": ..., "efficiency": ..., "terminated": ..., "truncated": ..., "usage": {...},
     "task": id, "seed": n, "secret_id": ..., "episode_id": ...}

``messages`` and ``tools`` are what the agent saw: the statement, each call and the text a
model reads back (the data, or ``{"error": ...}``, compact JSON). Everything else is the
trainer's side — the seed, with ``secret_id`` naming the secret, replays the episode — and must
not be put in a prompt. The messages are built from the episode's journal
(:mod:`labtools.journal`), so they are the calls the lab ran, in order, each with its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from labtools.providers.calls import result_json
from labtools.result import ToolResult
from labtools.session.reward import Reward
from labtools.session.rollout import INSTRUCTIONS
from labtools.session.session import Session

__all__ = [
    "IncompleteJournal",
    "from_journal",
    "from_session",
    "read_jsonl",
    "write_jsonl",
]

Arguments = Literal["object", "string"]


class IncompleteJournal(ValueError):
    """The journal does not hold the whole episode (it does not start at its reset)."""


def from_journal(
    events: Sequence[dict[str, Any]],
    *,
    statement: str,
    tools: list[dict[str, Any]],
    reward: Reward,
    system: str | None = INSTRUCTIONS,
    arguments: Arguments = "object",
) -> dict[str, Any]:
    """The record of the episode whose journal is ``events`` (from its ``reset`` event on).

    ``statement``: the task as the reset's observation told it; ``tools``: the schemas the
    agent had; ``system``: the instructions (``None``: no system message); ``arguments``:
    each call's arguments as an object (TRL, transformers chat templates) or as JSON text
    (OpenAI's fine-tuning format).
    """
    if not events or events[0].get("event") != "reset":
        raise IncompleteJournal(
            "the journal does not start with the episode's reset event: a journal without a "
            "file keeps only its most recent events (give the Session a journal_dir)"
        )
    start, calls = events[0], [e for e in events if "tool" in e]
    end = next((e for e in events if e.get("event") == "end"), None)
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": statement})
    for n, event in enumerate(calls, 1):
        call_id = f"call_{n}"
        args = event["arguments"]
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": event["tool"],
                            "arguments": args if arguments == "object" else _compact(args),
                        },
                    }
                ],
            }
        )
        result = ToolResult(event["ok"], event.get("data"), event.get("error"))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": event["tool"],
                "content": result_json(result),
            }
        )
    return {
        "messages": messages,
        "tools": tools,
        "reward": reward.total,
        "components": reward.components,
        "success": reward.success,
        "raw": reward.raw,
        "normalized": reward.normalized,
        "validity": reward.validity,
        "efficiency": reward.efficiency,
        "terminated": bool(end and end["terminated"]),
        "truncated": bool(end and end["truncated"]),
        "usage": end["usage"] if end else None,
        "task": start["task"],
        "seed": start["seed"],
        "secret_id": start.get("secret_id"),
        "episode_id": start.get("episode_id"),
    }


def from_session(
    session: Session,
    statement: str | None = None,
    *,
    system: str | None = INSTRUCTIONS,
    arguments: Arguments = "object",
) -> dict[str, Any]:
    """The record of ``session``'s current episode, scored now. ``statement``: the task from
    the observation ``reset`` returned; by default the task's statement now (the built-in
    tasks state what they drew at the reset, which the episode does not change)."""
    if statement is None:
        statement = session.observation()["task"]
    record = from_journal(
        session.lab.journal.events(),
        statement=statement,
        tools=session.tools("openai-chat"),
        reward=session.score(),
        system=system,
        arguments=arguments,
    )
    record["usage"] = session.usage.as_dict()
    record["terminated"], record["truncated"] = session.terminated, session.truncated
    return record


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write ``records`` one per line (strict JSON, UTF-8); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
            count += 1
    return count


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSONL file written by :func:`write_jsonl`."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
