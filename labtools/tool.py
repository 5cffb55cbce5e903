"""Declaring tools: the ``@tool`` decorator and the ``Arg`` annotation.

An instrument interface declares each tool once, as an ``async`` method::

    @tool(read_only=True)
    async def read_absorbance(
        self,
        plate: Annotated[str, Arg("Plate in the reader, e.g. 'plate_1'.")],
        wavelength: Annotated[Wavelength, Arg("Measurement wavelength.", within="absorbance")],
        wells: Annotated[list[str], Arg("Wells to read; [] reads the whole plate.")] = (),
    ) -> AbsorbanceReading:
        '''Measure the absorbance (OD) of wells at one wavelength.'''

The signature gives the JSON Schema (via pydantic), the docstring the description, ``within`` names
a :class:`~labtools.units.Range` in the instrument's ``limits`` that the dispatcher enforces and
states in the description, and the return annotation (a ``TypedDict``) the output schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = ["Arg", "Hints", "ToolDecl", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Arg:
    """Metadata of one tool argument.

    ``within``: the name of a ``Range`` attribute of the instrument's ``limits``; the value is
    checked against it before the tool runs and the range is appended to the description.
    ``note``: the name of a text attribute of ``limits`` appended to the description (limits
    that depend on state, such as the volume range of each tip type).
    """

    description: str
    within: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Hints:
    """Behaviour hints, exported as MCP annotations."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    #: takes instrument time the caller chooses (minutes to hours): may run as a job / MCP task
    long_running: bool = False
    #: may run only as an MCP task (MCP ``execution.taskSupport: "required"``)
    task_required: bool = False


@dataclass(frozen=True)
class ToolDecl:
    """A declared tool: the interface's method and its hints."""

    method: str
    function: Callable[..., Any]
    hints: Hints
    title: str
    #: the full tool name, when it is not ``<instrument>_<method>``
    name: str | None = None


def tool(
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    long_running: bool | Literal["required"] = False,
    title: str | None = None,
    name: str | None = None,
) -> Callable[[F], F]:
    """Mark an ``async`` instrument method as a tool.

    ``read_only`` tools change nothing: no matter moved, no kept state replaced (a reference
    spectrum), and no instrument time beyond the seconds a reading takes (a kinetic read that
    runs for hours while reactions go on is not read-only); they are idempotent and not
    destructive. ``destructive`` tools change matter irreversibly (liquid moved, tips used).
    ``name`` replaces the usual ``<instrument>_<method>`` tool name (e.g.
    ``submit_colour_match``).
    ``long_running`` tools take instrument time the caller chooses (a kinetic read, a long
    average): MCP clients may call them as tasks (``execution.taskSupport: "optional"``;
    ``"required"``: only as tasks).
    """
    if read_only and destructive:
        raise ValueError("a read-only tool cannot be destructive")

    def mark(function: F) -> F:
        method = function.__name__
        function.__tool__ = ToolDecl(  # type: ignore[attr-defined]
            method=method,
            function=function,
            hints=Hints(
                read_only,
                destructive,
                idempotent or read_only,
                long_running=bool(long_running),
                task_required=long_running == "required",
            ),
            title=title or method.replace("_", " ").capitalize(),
            name=name,
        )
        return function

    return mark
