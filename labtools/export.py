"""Tool catalogues in each LLM API's own shape.

Every format carries the same portable-profile input schema; what differs is the envelope. Each
function returns what goes into that API's ``tools`` request parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from labtools.spec import ToolSpec


__all__ = ["FORMATS", "Format", "render"]

Format = Literal["json-schema", "openai-chat", "openai-responses", "anthropic", "gemini", "mcp"]
FORMATS: tuple[str, ...] = get_args(Format)


def _catalogue(specs: Sequence[ToolSpec], simulated: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "title": s.title,
            "description": s.description,
            "input_schema": s.input_schema,
            "output_schema": s.output_schema,
            "hints": {
                "read_only": s.hints.read_only,
                "destructive": s.hints.destructive,
                "idempotent": s.hints.idempotent,
                "long_running": s.hints.long_running,
                "simulated": simulated(s.instrument),
            },
        }
        for s in specs
    ]


def _openai_chat(specs: Sequence[ToolSpec], _: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": s.name,
                "description": s.description,
                "parameters": s.input_schema,
                "strict": True,
            },
        }
        for s in specs
    ]


def _openai_responses(specs: Sequence[ToolSpec], _: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": s.name,
            "description": s.description,
            "parameters": s.input_schema,
            "strict": True,
        }
        for s in specs
    ]


def _anthropic(specs: Sequence[ToolSpec], _: Callable[[str], bool]) -> list[dict[str, Any]]:
    # Strict (grammar-constrained) decoding is budgeted per request; spend it on the tools that
    # move matter, where a malformed call costs most.
    return [
        {
            "name": s.name,
            "description": s.description,
            "input_schema": s.input_schema,
            **({"strict": True} if s.hints.destructive else {}),
        }
        for s in specs
    ]


def _gemini(specs: Sequence[ToolSpec], _: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [
        {
            "function_declarations": [
                {
                    "name": s.name,
                    "description": s.description,
                    "parameters_json_schema": s.input_schema,
                }
                for s in specs
            ]
        }
    ]


def _mcp(specs: Sequence[ToolSpec], simulated: Callable[[str], bool]) -> list[dict[str, Any]]:
    out = []
    for s in specs:
        entry: dict[str, Any] = {
            "name": s.name,
            "title": s.title,
            "description": s.description,
            "inputSchema": s.input_schema,
            "annotations": {
                "title": s.title,
                "readOnlyHint": s.hints.read_only,
                "destructiveHint": s.hints.destructive,
                "idempotentHint": s.hints.idempotent,
                "openWorldHint": not simulated(s.instrument),
            },
        }
        if s.output_schema is not None:
            entry["outputSchema"] = s.output_schema
        if s.hints.long_running:
            support = "required" if s.hints.task_required else "optional"
            entry["execution"] = {"taskSupport": support}
        out.append(entry)
    return out


_RENDERERS: dict[str, Callable[[Sequence[ToolSpec], Callable[[str], bool]], list[dict[str, Any]]]]
_RENDERERS = {
    "json-schema": _catalogue,
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "mcp": _mcp,
}


def render(
    specs: Sequence[ToolSpec], format: str, simulated: Callable[[str], bool] = lambda _: False
) -> list[dict[str, Any]]:
    """The catalogue of ``specs`` in ``format`` (one of :data:`FORMATS`).

    ``simulated(instrument_name)`` tells whether an instrument is virtual (MCP ``openWorldHint``).
    """
    try:
        renderer = _RENDERERS[format]
    except KeyError:
        raise ValueError(f"unknown format {format!r}; formats: {', '.join(FORMATS)}") from None
    return renderer(specs, simulated)
