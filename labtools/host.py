"""What serves tools: a :class:`~labtools.Lab`, or a grounded-reward session wrapping one.

The MCP server and the provider loops take either.
"""

from __future__ import annotations

from typing import Any, Protocol

from labtools.progress import ProgressCallback
from labtools.result import ToolResult

__all__ = ["ToolHost"]


class ToolHost(Protocol):
    def tools(self, format: str = ..., *, read_only: bool = ...) -> list[dict[str, Any]]:
        """The tool catalogue in a provider's format."""
        ...

    def tool_names(self) -> list[str]: ...

    def call(self, name: str, arguments: object) -> ToolResult: ...

    async def acall(
        self, name: str, arguments: object, *, progress: ProgressCallback | None = None
    ) -> ToolResult: ...

    def state(self) -> dict[str, Any]: ...

    def data(self, handle: str) -> dict[str, Any]: ...
