"""An episode played in process, to compare with the same calls made through a framework."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from labtools.result import ToolResult
from labtools.session import Reward, Session


@dataclass
class Played:
    calls: list[tuple[str, Any]]
    results: list[ToolResult]
    reward: Reward


def expert_episode(
    task: str, seed: int, secret: str, *, first: tuple[tuple[str, Any], ...] = ()
) -> Played:
    """The calls ``first`` and then the task's expert make on ``seed``, each call's result, and
    the reward."""
    played = Played([], [], Reward(0.0, 0.0, 0.0, 0.0, 0.0, {}, success=False))
    with Session(task, secret=secret) as session:
        session.reset(seed)
        call_tool = session.call_tool

        def recorded(name: str, arguments: Any) -> ToolResult:
            result = call_tool(name, arguments)
            played.calls.append((name, copy.deepcopy(arguments)))
            played.results.append(copy.deepcopy(result))
            return result

        session.call_tool = recorded  # type: ignore[method-assign]
        for name, arguments in first:
            session.call_tool(name, arguments)
        session.task.expert(session)
        played.reward = session.score()
    return played
