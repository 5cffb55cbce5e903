"""Large tool results for MCP hosts: a summary inline, the whole result behind a resource link.

A result's JSON goes into the text content whole when it is short. A longer one (a spectrum, a
kinetic series, a deck with two full plates) is never cut mid-JSON: the text is a valid JSON
summary in which long arrays and large objects are described instead of listed, followed by a
``resource_link`` to ``labtools://result/<n>``, where the whole result can be read; the
``structuredContent`` carries it whole too, for hosts that read it.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

__all__ = ["INLINE_TEXT", "RESULT_URI", "ResultStore", "inline", "summary"]

#: characters of result JSON a host gets inline as text; longer results are summarised
INLINE_TEXT = 4000
#: where a summarised result can be read whole
RESULT_URI = "labtools://result/{number}"


class ResultStore:
    """The most recent ``capacity`` summarised results, by number (bounded memory)."""

    def __init__(self, capacity: int = 32) -> None:
        self._capacity = capacity
        self._items: OrderedDict[int, Any] = OrderedDict()
        self._count = 0

    def put(self, result: Any) -> str:
        """Keep ``result``; returns its URI."""
        self._count += 1
        self._items[self._count] = result
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)
        return RESULT_URI.format(number=self._count)

    def get(self, number: int) -> Any:
        """The result kept as ``number``; ``KeyError`` if it was never kept or has been dropped."""
        return self._items[number]

    def kept(self) -> list[int]:
        return list(self._items)


def inline(value: Any, limit: int = INLINE_TEXT) -> str | None:
    """``value`` as compact JSON if that is at most ``limit`` characters, else ``None``."""
    text = _dumps(value)
    return text if len(text) <= limit else None


def summary(value: Any, limit: int = INLINE_TEXT) -> str:
    """``value`` as compact, valid JSON of at most about ``limit`` characters, with ever shorter
    arrays and objects described instead of listed (``"<96 numbers, 0.04 to 1.92>"``)."""
    for items in (16, 8, 4, 2, 0):
        text = _dumps(_shorten(value, items))
        if len(text) <= limit:
            return text
    return _dumps(_describe(value))  # the outline alone: one short string


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _shorten(value: Any, items: int) -> Any:
    """Arrays and objects with more than ``items`` entries described instead of listed."""
    if isinstance(value, list):
        if len(value) <= items:
            return [_shorten(v, items) for v in value]
        return _describe_list(value)
    if isinstance(value, dict):
        if len(value) <= max(items, 1) * 2:
            return {k: _shorten(v, items) for k, v in value.items()}
        return _describe(value)
    if isinstance(value, str) and len(value) > 200:
        return value[:199] + "…"
    return value


def _describe(value: Any) -> Any:
    if isinstance(value, list):
        return _describe_list(value)
    if isinstance(value, dict):
        shown = ", ".join(str(k)[:20] for k in list(value)[:4])
        return f"<object of {len(value)} keys: {shown}{', …' if len(value) > 4 else ''}>"
    return value if not isinstance(value, str) else value[:100]


def _describe_list(values: list[Any]) -> str:
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    finite = [v for v in numbers if math.isfinite(v)]
    if finite and len(numbers) == len(values):
        return f"<{len(values)} numbers, {min(finite):.4g} to {max(finite):.4g}>"
    kinds = sorted({type(v).__name__ for v in values})
    return f"<{len(values)} items ({', '.join(kinds)})>"
