"""The outcome of one tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labtools.errors import ToolError


@dataclass(frozen=True, slots=True)
class ToolResult:
    """``ok`` with JSON-able ``data``, or not ``ok`` with a structured ``error``.

    ``error`` is ``{"code", "message", "field", "hint"}``; ``code`` is one of
    :data:`labtools.errors.ERROR_CODES`.
    """

    ok: bool
    data: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @classmethod
    def success(cls, data: dict[str, Any]) -> ToolResult:
        return cls(True, data, None)

    @classmethod
    def failure(cls, error: ToolError) -> ToolResult:
        return cls(False, None, error.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, "data": self.data} if self.ok else {"ok": False, "error": self.error}

    def _repr_html_(self) -> str | None:
        """A plate reading's result in a notebook: its heatmap (other results: ``None``, and
        the notebook shows the plain form)."""
        from labtools.view.notebook import reading_html

        return reading_html(self.data) if self.ok and self.data is not None else None

    def unwrap(self) -> dict[str, Any]:
        """The data, or the error raised as its typed :class:`ToolError`."""
        if self.ok:
            return self.data if self.data is not None else {}
        error = self.error or {}
        raise ToolError.of(
            error["code"], error["message"], field=error.get("field"), hint=error.get("hint")
        )
