"""The portable strict schema profile, accepted unchanged by every LLM provider.

Every object closed (``additionalProperties: false``) with all its properties required; ``$ref``
inlined; no unions; no ``title`` or ``default``, nor an item's description under a described
list; numeric, length, pattern and format keywords moved into the description (the server
enforces them); names match :data:`NAME_PATTERN`.
"""

from __future__ import annotations

import re
from typing import Any

#: a portable tool or property name; ``\Z``, not ``$``, which matches before a trailing newline
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")

_DROPPED = frozenset({"title", "default", "examples", "$schema", "$defs", "definitions"})
_DESCRIBED = {
    "minimum": "minimum {}",
    "maximum": "maximum {}",
    "exclusiveMinimum": "greater than {}",
    "exclusiveMaximum": "less than {}",
    "multipleOf": "a multiple of {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matching {}",
    "format": "format {}",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "uniqueItems": "unique items",
}
_FORBIDDEN = frozenset(
    {
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "prefixItems",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
    }
)


class SchemaProfileError(ValueError):
    """A declaration cannot be expressed in the portable profile."""


def portable(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    """The portable-profile form of a pydantic-generated JSON Schema.

    ``output=True`` (result schemas, which no provider constrains decoding with) also allows maps
    such as well → value and nullable values; input schemas may contain neither.
    """
    definitions = schema.get("$defs", {})
    return _walk(schema, definitions, "#", not output)


def _walk(
    node: dict[str, Any], defs: dict[str, Any], path: str, closed: bool, seen: tuple[str, ...] = ()
) -> dict[str, Any]:
    if "$ref" in node:
        ref = node["$ref"]
        if ref in seen:
            raise SchemaProfileError(f"{path}: recursive {ref} cannot be inlined")
        target = _resolve(ref, defs, path)
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _walk(merged, defs, path, closed, (*seen, ref))
    out: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "anyOf" and not closed:
            out[key] = [_walk(v, defs, f"{path}/anyOf", closed, seen) for v in value]
        elif key in _FORBIDDEN:
            raise SchemaProfileError(f"{path}: '{key}' is outside the portable profile")
        elif key in _DESCRIBED:
            notes.append(_DESCRIBED[key].format(value))
        elif key == "const":
            out["enum"] = [value]
        elif key == "properties":
            for name in value:
                if not NAME_PATTERN.fullmatch(name):
                    raise SchemaProfileError(f"{path}: property name {name!r} is not portable")
            out[key] = {k: _walk(v, defs, f"{path}/{k}", closed, seen) for k, v in value.items()}
        elif key == "items":
            out[key] = _walk(value, defs, f"{path}/items", closed, seen)
            if "description" in node:  # said once: the list's own description covers its items
                out[key].pop("description", None)
        elif key == "additionalProperties" and isinstance(value, dict):
            if closed:
                raise SchemaProfileError(f"{path}: maps are outside the portable input profile")
            out[key] = _walk(value, defs, f"{path}/*", closed, seen)
        elif key == "type" and isinstance(value, list) and closed:
            raise SchemaProfileError(f"{path}: type unions are outside the portable profile")
        else:
            out[key] = value
    if "enum" in out and "type" not in out:
        out["type"] = _enum_type(out["enum"], path)
    if out.get("type") == "object" and not isinstance(out.get("additionalProperties"), dict):
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    if notes:
        text = out.get("description", "").rstrip()
        out["description"] = (f"{text} " if text else "") + f"({'; '.join(notes)})"
    return out


def _resolve(ref: str, defs: dict[str, Any], path: str) -> dict[str, Any]:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise SchemaProfileError(f"{path}: cannot inline {ref}")
    return defs[ref[len(prefix) :]]


def _enum_type(values: list[Any], path: str) -> str:
    kinds = {type(v) for v in values}
    for python_type, name in ((str, "string"), (bool, "boolean"), (int, "integer")):
        if kinds == {python_type}:
            return name
    if kinds <= {int, float}:
        return "number"
    raise SchemaProfileError(f"{path}: enum values of mixed types")
