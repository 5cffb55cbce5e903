"""Errors an LLM can act on: a closed set of codes, each with its own exception class.

Every error carries ``code``, a one-sentence ``message``, the JSON pointer ``field`` of the
offending argument (``None`` when no single argument is to blame) and a ``hint`` saying what would
be accepted: the valid range in the caller's unit, the wells that exist, the tips that are left.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, get_args

ErrorCode = Literal[
    "invalid_arguments",
    "unit_error",
    "out_of_range",
    "unknown_tool",
    "unknown_resource",
    "precondition_failed",
    "interlock",
    "instrument_error",
    "timeout",
    "busy",
    "not_supported",
]
ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))
#: the exception class of each code, filled in as the classes below are defined
_BY_CODE: dict[str, type[ToolError]] = {}


def json_text(value: object) -> str:
    """``value`` as the JSON a model reads in tool results (compact, keys in their order)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def brief(value: object, limit: int = 60) -> str:
    """``value`` as text cut to ``limit`` characters: how an error echoes what the caller sent
    (a 1 MB well name comes back as its first few dozen characters, never whole). Objects,
    arrays, ``null`` and booleans read as JSON; strings and numbers as Python writes them
    (``'A1'``, ``1e+20``); anything JSON cannot hold as its ``repr``."""
    if isinstance(value, str) and len(value) > 4 * limit:
        value = value[: 4 * limit]  # repr of the head only: a 1 MB string is not copied twice
    try:
        text = _as_text(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deep>"
    except ValueError:  # an int past Python's str-conversion digit limit
        return f"<{type(value).__name__} too large to print>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_text(value: object) -> str:
    if value is None or isinstance(value, bool | dict | list | tuple):
        try:
            return json_text(value)
        except (TypeError, ValueError):  # something JSON cannot hold inside: Python's words
            pass
    return repr(value)


class ToolError(Exception):
    """A tool call that was refused or failed. Raising it changes no state.

    Each subclass that sets its own ``code`` is the class for that code (:meth:`of`).
    """

    code: ClassVar[ErrorCode] = "instrument_error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # a refinement of its parent's code
        if cls.code not in ERROR_CODES:
            raise TypeError(f"{cls.__name__}.code {cls.code!r} is not one of ErrorCode")
        if cls.code in _BY_CODE:
            raise TypeError(f"{cls.__name__} and {_BY_CODE[cls.code].__name__} share a code")
        _BY_CODE[cls.code] = cls

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.hint = hint

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "field": self.field, "hint": self.hint}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, field={self.field!r}, hint={self.hint!r})"

    @staticmethod
    def of(
        code: str, message: str, *, field: str | None = None, hint: str | None = None
    ) -> ToolError:
        """The typed error for ``code`` (for errors rebuilt from their JSON form)."""
        return _BY_CODE[code](message, field=field, hint=hint)


class InvalidArguments(ToolError):
    """The arguments do not match the tool's schema (type, missing or unknown field)."""

    code = "invalid_arguments"


class UnitError(ToolError):
    """A quantity has no unit, an unknown unit, or a unit of the wrong dimension."""

    code = "unit_error"


class OutOfRange(ToolError):
    """A value lies outside the instrument's limits."""

    code = "out_of_range"


class UnknownTool(ToolError):
    """No tool of that name exists in this lab."""

    code = "unknown_tool"


class UnknownResource(ToolError):
    """A plate, well, tip rack or data handle that does not exist."""

    code = "unknown_resource"


class PreconditionFailed(ToolError):
    """The instrument is not in a state that allows the call (no tip, tip already mounted, …)."""

    code = "precondition_failed"


class NotConnected(PreconditionFailed):
    """A driver asked for its link before the lab connected it (it connects on the first call)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name} is not connected", hint="the lab connects it on the first tool call"
        )
        self.name = name

    def __reduce__(self) -> tuple[type[NotConnected], tuple[str]]:
        return type(self), (self.name,)


class Interlock(ToolError):
    """The instrument refuses a physically invalid action (overdraw, overfill, collision)."""

    code = "interlock"


class InstrumentError(ToolError):
    """The instrument or its driver failed while acting."""

    code = "instrument_error"


class Timeout(ToolError):
    code = "timeout"


class Busy(ToolError):
    code = "busy"


class NotSupported(ToolError):
    """The instrument cannot do this (e.g. fluorescence on an absorbance-only reader)."""

    code = "not_supported"


class MissingExtra(ImportError):
    """An optional package is not installed (not a tool error: the program's, not the call's);
    ``hint`` is the install command of the extra that brings it."""

    def __init__(self, message: str, *, extra: str) -> None:
        self.hint = install_hint(extra)
        super().__init__(f"{message}: {self.hint}")


def install_hint(extra: str) -> str:
    """The pip command adding ``extra`` to this installation, from where it was installed
    (labtools-sdk is on no package index): ``pip install -e '/path/to/clone[<extra>]'`` for a
    clone (editable or not), ``pip install '/path/to/labtools_sdk-….whl[<extra>]'`` for a
    wheel, else ``pip install "labtools-sdk[<extra>]"``."""
    source, editable = _installed_from()
    if source is None:
        return f'pip install "labtools-sdk[{extra}]"'
    return f"pip install {'-e ' if editable else ''}'{source}[{extra}]'"


def _installed_from() -> tuple[str | None, bool]:
    """The local folder or wheel labtools-sdk was installed from (its PEP 610
    ``direct_url.json``), and whether editably; ``(None, False)`` if not known."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    texts = (d.read_text("direct_url.json") for d in metadata.distributions(name="labtools-sdk"))
    try:  # a clone's own labtools_sdk.egg-info (no direct_url.json) may be found first
        record = json.loads(next((t for t in texts if t), "null"))
    except ValueError:
        return None, False
    url = urlparse(record.get("url", "")) if isinstance(record, dict) else None
    if url is None or url.scheme != "file":
        return None, False
    editable = bool((record.get("dir_info") or {}).get("editable"))
    return unquote(url.path), editable
