"""Test instruments. ``Faults`` fails as it is told: the error codes a freshly built virtual
lab does not produce from one call (a device that times out or is busy, a feature it lacks, a
driver that crashes), so that a client can be shown each of them. ``Liar`` also claims success
with data its output schema forbids. ``Slow`` takes real time, for jobs and MCP tasks."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from typing_extensions import TypedDict

from labtools.errors import ToolError
from labtools.instrument import Instrument
from labtools.jobs import wait_unless_stopped
from labtools.progress import report_progress
from labtools.tool import Arg, tool

#: the codes :meth:`Faults.fail` raises as themselves; ``instrument_error`` comes from a crash
RAISED = ("timeout", "busy", "not_supported")


class Failed(TypedDict):
    failed: bool


class Faults(Instrument):
    kind = "faults"

    @tool(read_only=True)
    async def fail(
        self,
        code: Annotated[
            Literal["timeout", "busy", "not_supported", "instrument_error"],
            Arg("The error to fail with."),
        ],
    ) -> Failed:
        """Fail with ``code`` (``instrument_error``: the driver raises an unexpected error)."""
        if code not in RAISED:
            raise RuntimeError("the driver crashed")
        raise ToolError.of(code, f"the device reports {code}", hint=f"a test of {code}")


class Liar(Faults):
    """A faulty instrument that also claims success with data its output schema forbids."""

    @tool(read_only=True)
    async def claim(self) -> Failed:
        """Answer with data the output schema does not allow."""
        return {"failed": "no"}  # type: ignore[typeddict-item]


class Counted(TypedDict):
    counted: int


class Slow(Instrument):
    """Takes real time: counts steps of ``STEP_S`` seconds, reporting each, and stops early when
    its job is cancelled. Its tool runs only as an MCP task (``taskSupport: "required"``)."""

    kind = "slow"
    STEP_S = 0.05

    @tool(read_only=True, long_running="required")
    async def count(
        self, steps: Annotated[int, Arg("Steps to count, a twentieth of a second each.")]
    ) -> Counted:
        """Count ``steps`` steps in real time, reporting progress after each."""
        counted = 0
        for _ in range(steps):
            if not await wait_unless_stopped(asyncio.sleep(self.STEP_S)):
                break
            counted += 1
            await report_progress(counted, steps, f"step {counted} of {steps}")
        return {"counted": counted}


class Left(TypedDict):
    left: int


class Reagent(Instrument):
    """A reservoir whose reagent is spent irreversibly: a tool to confirm before it runs."""

    kind = "reagent"

    def __init__(self, name: str, left: int = 100) -> None:
        super().__init__(name)
        self.left = left

    @tool(destructive=True)
    async def spend(self, units: Annotated[int, Arg("Units of reagent to spend.")]) -> Left:
        """Spend ``units`` of the reagent."""
        if not 0 < units <= self.left:
            raise ToolError.of(
                "out_of_range", f"cannot spend {units}", field="/units", hint=f"1–{self.left}"
            )
        self.left -= units
        return {"left": self.left}

    def state(self) -> dict[str, int]:
        return {"left": self.left}
