"""How a refused argument is worded for an LLM: the first schema violation as a
:class:`~labtools.errors.ToolError` whose ``field`` is a JSON pointer and whose ``hint`` says
what would be accepted. Caller input is echoed through :func:`labtools.errors.brief` or cut to
:data:`CUT` characters, never whole.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

from labtools.errors import InvalidArguments, ToolError, UnitError, brief
from labtools.units import Dimension

__all__ = [
    "CUT",
    "QuantityAt",
    "escape",
    "json_pointer",
    "label",
    "not_json",
    "schema_error",
]

#: the dimension of the quantity at or above a path, and the length of that quantity's path
QuantityAt = Callable[[list[Any]], "tuple[Dimension, int] | None"]


def schema_error(
    schema: dict[str, Any],
    arguments: object,
    params: Mapping[str, str],
    quantity_at: QuantityAt,
    fallback: Exception | None = None,
) -> ToolError:
    """The first violation of the input ``schema`` by ``arguments``, worded for an LLM.

    ``params``: each argument's description, by name; ``quantity_at(path)``: the dimension of
    the quantity at or above a path, with the length of the quantity's own path (or ``None``);
    ``fallback``: the compiled check's exception, worded when jsonschema cannot walk the
    arguments."""
    import jsonschema  # the reference validator words errors; only rejections pay its import

    foreign = _foreign_key(arguments)
    if foreign is not None:
        return foreign
    validator = jsonschema.Draft202012Validator(schema)
    try:
        errors = list(validator.iter_errors(arguments))
    except (RecursionError, TypeError, ValueError):
        errors = []
    # An unknown argument explains a missing one better than the reverse ('wel' for 'well').
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    error = jsonschema.exceptions.best_match(unknown or errors)
    if error is None:  # jsonschema could not walk the arguments: use the compiled check's words
        message = getattr(fallback, "message", None) or "arguments do not match the schema"
        where = message.split(" ", 1)[0].removeprefix("data")
        return InvalidArguments(
            f"arguments do not match the schema: {_cut(message.replace('data.', '', 1))}",
            field=_cut(re.sub(r"\[(\d+)\]", r".\1", where).replace(".", "/")),
            hint=_arguments(list(params)),
        )
    return _word(error, arguments, params, quantity_at)


def _word(
    error: Any, arguments: object, params: Mapping[str, str], quantity_at: QuantityAt
) -> ToolError:
    """``error``: the jsonschema ``ValidationError`` to explain."""
    path = list(error.absolute_path)
    pointer = json_pointer(path)
    names = list(params)
    if not path and not isinstance(arguments, dict):
        hint = "decode the JSON text first" if isinstance(arguments, str) else None
        return InvalidArguments(
            f"arguments must be a JSON object, not {_json_type(arguments)}",
            field="",
            hint=hint or _arguments(names),
        )
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        allowed = list(error.schema.get("properties", {}))
        close = _close(extra[0], allowed) if extra else None
        hint = f"did you mean {close!r}? " if close else ""
        listed = ", ".join(brief(e) for e in extra[:3]) + (", …" if len(extra) > 3 else "")
        return InvalidArguments(
            f"unknown argument {listed}",
            field=json_pointer([*path, extra[0]]) if extra else pointer,
            hint=hint + _arguments(allowed),
        )
    if error.validator == "required":
        missing = [n for n in error.schema.get("required", []) if n not in error.instance]
        prop = error.schema.get("properties", {}).get(missing[0], {}) if missing else {}
        required = ", ".join(error.schema.get("required", []))
        return InvalidArguments(
            f"missing argument {missing[0]!r}" if missing else _said(error),
            field=json_pointer([*path, missing[0]]) if missing else pointer,
            hint=prop.get("description") or f"{_where(pointer)} needs: {required}",
        )
    described = params.get(path[0]) if path and isinstance(path[0], str) else None
    quantity = quantity_at(path)
    if quantity is not None:
        dimension, depth = quantity
        return _unit_error(dimension, error, pointer, whole=len(path) == depth)
    if error.validator == "enum":
        allowed = error.validator_value
        return InvalidArguments(
            f"{brief(error.instance)} is not allowed here",
            field=pointer,
            hint=_did_you_mean(error.instance, allowed) + f"one of: {_join(allowed)}",
        )
    if error.validator == "type":
        return InvalidArguments(
            f"{_where(pointer)} must be {_article(error.validator_value)}, "
            f"not {_json_type(error.instance)}",
            field=pointer,
            hint=described,
        )
    return InvalidArguments(
        f"{_where(pointer)}: {_said(error)}",
        field=pointer,
        hint=described,
    )


def not_json(arguments: object, exc: Exception) -> ToolError:
    """The error for arguments the compiled check could not walk."""
    foreign = _foreign_key(arguments)
    if foreign is not None:
        return foreign
    if isinstance(exc, RecursionError):
        return InvalidArguments(
            "arguments are nested too deeply", field="", hint="JSON arguments nest a few levels"
        )
    return InvalidArguments(
        f"arguments are not JSON: {_cut(str(exc))}",
        field="",
        hint="send a JSON object of strings, numbers, arrays and objects",
    )


#: how deep :func:`_foreign_key` looks (deeper arguments are refused by the schema anyway)
_DEPTH = 200


def _foreign_key(value: object) -> ToolError | None:
    """An error for the first object key that is not a string (a Python caller's ``{1: 2}``);
    ``None`` if every key is a string."""
    stack: list[tuple[object, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > _DEPTH:
            continue
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str):
                    shown = "" if key is None else f" {brief(key)}"
                    return InvalidArguments(
                        f"object keys must be strings, not {_json_type(key)}{shown}",
                        field=json_pointer([*path, key]),
                        hint='JSON object keys are strings: name each argument, e.g. {"channel":0}',
                    )
            stack.extend((node[k], (*path, k)) for k in reversed(list(node)))
        elif isinstance(node, list | tuple):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node))))
    return None


def _unit_error(dim: Dimension, error: Any, pointer: str, *, whole: bool) -> ToolError:
    """``whole``: the error is about the quantity itself, not its value or unit."""
    instance = error.instance
    if error.validator == "enum":
        return UnitError(
            f"{brief(instance)} is not a {dim.name} unit here",
            field=pointer,
            hint=_did_you_mean(instance, dim.units) + f"units: {', '.join(dim.units)}",
        )
    if whole and isinstance(instance, int | float | str) and not isinstance(instance, bool):
        return UnitError(
            f"{brief(instance)} is not a quantity; a {dim.name} is a value with a unit",
            field=pointer,
            hint=dim.hint(example=instance if not isinstance(instance, str) else 50),
        )
    if error.validator == "type" and pointer.endswith("/value"):
        return InvalidArguments(
            f"{_where(pointer)} must be a number, not {_json_type(instance)}",
            field=pointer,
            hint=dim.hint(),
        )
    if error.validator == "type":
        return UnitError(
            f"{_where(pointer)} must be {_article(error.validator_value)}, "
            f"not {_json_type(instance)}",
            field=pointer,
            hint=dim.hint(),
        )
    return UnitError(f"{_where(pointer)}: {_said(error)}", field=pointer, hint=dim.hint())


def _said(error: Any) -> str:
    """jsonschema's message, the instance it starts with (Python's repr) echoed as
    :func:`~labtools.errors.brief` does (JSON for objects and arrays), cut short."""
    message = str(error.message)
    try:
        shown = repr(error.instance)
    except (RecursionError, ValueError):
        return _cut(message)
    if message.startswith(shown):
        message = brief(error.instance) + message[len(shown) :]
    return _cut(message)


#: characters of a message or field built from caller input, at most
CUT = 200


def _arguments(names: list[str]) -> str:
    """What arguments a tool takes, for a hint."""
    return f"arguments: {', '.join(names)}" if names else "this tool takes no arguments: send {}"


def _cut(text: str, limit: int = CUT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(pointer: str) -> str:
    return pointer.lstrip("/").replace("/", ".")


def json_pointer(path: list[Any] | tuple[Any, ...]) -> str:
    """The JSON pointer of ``path``, cut to :data:`CUT` characters (a 1 MB key is not echoed)."""
    return _cut("".join(f"/{escape(p if _plain_key(p) else brief(p, CUT))}" for p in path))


def _plain_key(part: object) -> bool:
    """A key or index a pointer shows as it is (a boolean shows as JSON's ``true``)."""
    return isinstance(part, str) or (isinstance(part, int) and not isinstance(part, bool))


def _close(word: str, allowed: list[str]) -> str | None:
    """The allowed name closest to ``word``, if one is close."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    close = difflib.get_close_matches(word, allowed, n=1)
    return close[0] if close else None


def _did_you_mean(value: object, allowed: Any) -> str:
    if isinstance(value, str) and len(value) <= 100:
        for candidate in allowed:
            if isinstance(candidate, str) and candidate.lower() == value.lower().strip():
                return f"did you mean {candidate!r}? "
        close = _close(value, [a for a in allowed if isinstance(a, str)])
        if close:
            return f"did you mean {close!r}? "
    return ""


def _where(pointer: str) -> str:
    return repr(label(pointer)) if pointer else "arguments"


def escape(part: object) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _join(values: Any, limit: int = 24) -> str:
    values = list(values)
    text = ", ".join(str(v) if isinstance(v, str) else brief(v) for v in values[:limit])
    return text + (f", … ({len(values)} in all)" if len(values) > limit else "")


_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _article(json_type: object) -> str:
    return {"object": "an object", "array": "an array", "integer": "an integer"}.get(
        str(json_type), f"a {json_type}"
    )
