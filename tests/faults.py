"""Test instruments. ``Faults`` fails as it is told: the error codes a freshly built virtual
lab does not produce from one call (a device that times out or is busy, a feature it lacks, a
driver that crashes), so that a client can be shown each of them. ``Liar`` also claims success
with data its output schema forbids."""

from __future__ import annotations

from typing import Annotated, Literal

from typing_extensions import TypedDict

from labtools.errors import ToolError
from labtools.instrument import Instrument
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
