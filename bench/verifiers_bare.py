"""The anchor of ``bench.verifiers``: verifiers' own bare rollout, the least a verifiers rollout
with a stateful tool server costs.

A taskset-scoped (shared) tool server with one tool, ``echo``, which counts the rollout's calls
in its state (a pull and a push over verifiers' state channel per call, as labtools' tools do)
and returns its text; the task stops once the row's number of calls is made, as labtools'
rollout stops on its submission. No lab, no physics, no reward: what is left is verifiers' own
machinery (its interception server, the harness, MCP over HTTP, the state channel).

verifiers starts the server as ``python -m bench.verifiers_bare``; the bench loads the taskset
under :data:`BARE_ID`.
"""

from __future__ import annotations

from typing import cast

import verifiers.v1 as vf

#: the id the bench loads this taskset under (verifiers imports a taskset by a top-level name)
BARE_ID = "labtools_bench_bare"

__all__ = ["BARE_ID", "BareConfig", "BareTaskset"]


class BareState(vf.State):
    calls: int = 0


class BareData(vf.TaskData):
    #: the calls after which the rollout stops
    calls: int


class BareToolset(vf.Toolset[vf.SharedToolsetConfig, BareState]):
    TOOL_PREFIX = None

    @vf.tool
    async def echo(self, text: str) -> str:
        """Return ``text``."""
        self.state.calls += 1
        return text


class BareTask(vf.Task[BareData, BareState, vf.TaskConfig]):
    @vf.stop
    async def enough_calls(self, trace: vf.Trace) -> bool:
        return cast(BareState, trace.state).calls >= self.data.calls

    @vf.reward(weight=1.0)
    async def made(self, trace: vf.Trace) -> float:
        return float(cast(BareState, trace.state).calls)


class BareConfig(vf.TasksetConfig):
    task: vf.TaskConfig = vf.TaskConfig()
    tools: vf.SharedToolsetConfig = vf.SharedToolsetConfig()
    #: calls per rollout
    calls: int = 1
    prompt: str = "Call echo."


class BareTaskset(vf.Taskset[BareTask, BareConfig]):
    def load(self) -> list[BareTask]:
        data = BareData(name="bare", prompt=self.config.prompt, calls=self.config.calls)
        return [BareTask(data, self.config.task)]

    @classmethod
    def toolsets(cls, config: BareConfig) -> list[vf.Toolset]:
        return [BareToolset(config.tools)]


if __name__ == "__main__":  # verifiers starts the shared tool server this way
    BareToolset.run()
