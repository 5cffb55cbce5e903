"""A declared tool bound to one instrument: its schemas and its argument binding.

Binding raw JSON arguments happens in three steps, and nothing acts until all pass:

1. the exported JSON Schema, exactly (compiled with fastjsonschema; jsonschema is the reference
   the tests hold it to, and on rejection it words the error);
2. units: each ``{value, unit}`` becomes a pint quantity (prebuilt units, no string parsing);
3. limits: finite numbers, and every ``within`` range of the instrument's ``limits``.
"""

from __future__ import annotations

import collections.abc
import difflib
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import fastjsonschema
from pydantic import Field, TypeAdapter, create_model

from labtools.errors import InvalidArguments, OutOfRange, ToolError, UnitError
from labtools.schema import NAME_PATTERN, SchemaProfileError, portable
from labtools.tool import Arg, Hints, ToolDecl
from labtools.units import Dimension, Range, magnitude

__all__ = ["Param", "ToolSpec", "build_spec"]

_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    annotation: Any
    description: str
    dimension: Dimension | None
    kind: str  # "quantity", "integer", "integers", "number" or "json"
    within: Range | None
    default: Any


@dataclass(eq=False)
class ToolSpec:
    """Everything the lab needs to export and dispatch one tool of one instrument."""

    name: str
    instrument: str
    method: str
    title: str
    description: str
    hints: Hints
    params: tuple[Param, ...]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    _check: Callable[[Any], Any]

    # -- JSON path -----------------------------------------------------------------------------
    def bind(self, arguments: object) -> dict[str, Any]:
        """Validate raw JSON arguments and return keyword arguments for the method.

        Raises :class:`ToolError` (``invalid_arguments``, ``unit_error`` or ``out_of_range``).
        """
        try:
            self._check(arguments)
        except fastjsonschema.JsonSchemaException as exc:
            raise self.schema_error(arguments, exc) from None
        except (RecursionError, TypeError, ValueError) as exc:
            raise InvalidArguments(f"arguments are not JSON: {exc}", field="") from None
        checked = typing.cast(dict[str, Any], arguments)  # an object, per the schema
        return {param.name: _convert(param, checked[param.name]) for param in self.params}

    def accepts(self, arguments: object) -> bool:
        """Whether the raw arguments satisfy the input schema (step 1 of :meth:`bind` alone)."""
        try:
            self._check(arguments)
        except (fastjsonschema.JsonSchemaException, RecursionError, TypeError, ValueError):
            return False
        return True

    def schema_error(self, arguments: object, fallback: Exception | None = None) -> ToolError:
        """The first schema violation, worded for an LLM."""
        import jsonschema  # the reference validator words errors; only rejections pay its import

        validator = jsonschema.Draft202012Validator(self.input_schema)
        try:
            errors = list(validator.iter_errors(arguments))
        except RecursionError:
            errors = []
        # An unknown argument explains a missing one better than the reverse ('wel' for 'well').
        unknown = [e for e in errors if e.validator == "additionalProperties"]
        error = jsonschema.exceptions.best_match(unknown or errors)
        if error is None:  # jsonschema could not walk the arguments: use the compiled check's words
            message = getattr(fallback, "message", str(fallback))
            where = message.split(" ", 1)[0].removeprefix("data")
            return InvalidArguments(
                f"arguments do not match the schema: {message.replace('data.', '', 1)}",
                field=where.replace(".", "/"),
            )
        return self._word(error, arguments)

    def _word(self, error: Any, arguments: object) -> ToolError:
        """``error``: the jsonschema ``ValidationError`` to explain."""
        path = list(error.absolute_path)
        pointer = "".join(f"/{_escape(p)}" for p in path)
        names = [p.name for p in self.params]
        if not path and not isinstance(arguments, dict):
            hint = "decode the JSON text first" if isinstance(arguments, str) else None
            return InvalidArguments(
                f"arguments must be a JSON object, not {_json_type(arguments)}",
                field="",
                hint=hint or f"arguments: {', '.join(names)}",
            )
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            allowed = list(error.schema.get("properties", {}))
            close = difflib.get_close_matches(extra[0], allowed, n=1) if extra else []
            hint = f"did you mean {close[0]!r}? " if close else ""
            return InvalidArguments(
                f"unknown argument {', '.join(map(repr, extra))}",
                field=f"{pointer}/{_escape(extra[0])}" if extra else pointer,
                hint=f"{hint}arguments: {', '.join(allowed)}",
            )
        if error.validator == "required":
            missing = [n for n in error.schema.get("required", []) if n not in error.instance]
            prop = error.schema.get("properties", {}).get(missing[0], {}) if missing else {}
            return InvalidArguments(
                f"missing argument {missing[0]!r}" if missing else error.message,
                field=f"{pointer}/{_escape(missing[0])}" if missing else pointer,
                hint=prop.get("description"),
            )
        param = self._param(path[0]) if path else None
        if param is not None and param.dimension is not None:
            return _unit_error(param.dimension, error, pointer)
        if error.validator == "enum":
            allowed = error.validator_value
            return InvalidArguments(
                f"{_short(error.instance)} is not allowed here",
                field=pointer,
                hint=_did_you_mean(error.instance, allowed) + f"one of: {_join(allowed)}",
            )
        if error.validator == "type":
            return InvalidArguments(
                f"{_where(pointer)} must be {_article(error.validator_value)}, "
                f"not {_json_type(error.instance)}",
                field=pointer,
                hint=param.description if param else None,
            )
        return InvalidArguments(error.message, field=pointer)

    def _param(self, name: object) -> Param | None:
        for param in self.params:
            if param.name == name:
                return param
        return None

    # -- Python path ---------------------------------------------------------------------------
    def normalize(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Python call arguments → the JSON arguments :meth:`bind` takes.

        Fills defaults, and turns quantities given as pint objects or strings such as ``"50 uL"``
        into ``{value, unit}``. Type checking is left to :meth:`bind`, so both paths agree.
        """
        names = [p.name for p in self.params]
        if len(args) > len(names):
            raise InvalidArguments(
                f"{self.name} takes {len(names)} arguments, got {len(args)}",
                hint=f"arguments: {', '.join(names)}",
            )
        given = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key in given:
                raise InvalidArguments(f"argument {key!r} given twice", field=f"/{key}")
            given[key] = value
        out: dict[str, Any] = {}
        for key, value in given.items():
            param = self._param(key)
            if param is not None and param.dimension is not None:
                value = param.dimension.normalize(value, f"/{key}")
            out[key] = _jsonish(value)
        for param in self.params:
            if param.name not in out and param.default is not _EMPTY:
                out[param.name] = _jsonish(param.default)
        return out


def _convert(param: Param, value: Any) -> Any:
    field = f"/{param.name}"
    if param.kind == "quantity":
        dim = typing.cast(Dimension, param.dimension)  # kind "quantity" implies a dimension
        amount = value["value"]
        _finite(amount, field + "/value")
        quantity = dim.from_json(amount, value["unit"])
        if param.within is not None and not param.within.contains(
            magnitude(quantity, param.within.unit)
        ):
            raise OutOfRange(
                f"{param.name} {amount:g} {value['unit']} is outside the allowed range",
                field=field,
                hint=f"allowed: {param.within.describe(value['unit'])}",
            )
        return quantity
    if param.kind == "integers":
        out = []
        for i, item in enumerate(value):
            out.append(_convert(replace(param, name=f"{param.name}/{i}", kind="integer"), item))
        return out
    if param.kind in ("integer", "number"):
        _finite(value, field)
        if param.kind == "integer":
            value = int(value)
        if param.within is not None and not param.within.contains(value):
            raise OutOfRange(
                f"{param.name} {value:g} is outside the allowed range",
                field=field,
                hint=f"allowed: {param.within.describe()}",
            )
    return value


def _finite(value: float, field: str) -> None:
    try:
        finite = math.isfinite(value)
    except OverflowError:
        finite = False
    if not finite:
        raise InvalidArguments(
            f"{_short(value)} is not a finite number", field=field, hint="give a finite number"
        )


def _unit_error(dim: Dimension, error: Any, pointer: str) -> ToolError:
    instance = error.instance
    if error.validator == "enum":
        return UnitError(
            f"{_short(instance)} is not a {dim.name} unit here",
            field=pointer,
            hint=_did_you_mean(instance, dim.units) + f"units: {', '.join(dim.units)}",
        )
    if (
        pointer.count("/") == 1
        and isinstance(instance, int | float | str)
        and not isinstance(instance, bool)
    ):
        return UnitError(
            f"{_short(instance)} is not a quantity; a {dim.name} is a value with a unit",
            field=pointer,
            hint=dim.hint(example=instance if not isinstance(instance, str) else 50),
        )
    if error.validator == "type" and pointer.endswith("/value"):
        return InvalidArguments(
            f"{_where(pointer)} must be a number, not {_json_type(instance)}",
            field=pointer,
            hint=dim.hint(),
        )
    return UnitError(f"{_where(pointer)}: {error.message}", field=pointer, hint=dim.hint())


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _did_you_mean(value: object, allowed: Any) -> str:
    if isinstance(value, str):
        for candidate in allowed:
            if isinstance(candidate, str) and candidate.lower() == value.lower().strip():
                return f"did you mean {candidate!r}? "
        close = difflib.get_close_matches(value, [a for a in allowed if isinstance(a, str)], n=1)
        if close:
            return f"did you mean {close[0]!r}? "
    return ""


def _where(pointer: str) -> str:
    return repr(pointer.lstrip("/").replace("/", ".")) if pointer else "arguments"


def _escape(part: object) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _join(values: Any, limit: int = 24) -> str:
    values = list(values)
    text = ", ".join(map(str, values[:limit]))
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


def _jsonish(value: Any) -> Any:
    """Tuples to lists, recursively (Python callers may pass tuples for arrays)."""
    if isinstance(value, tuple | list):
        return [_jsonish(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonish(v) for k, v in value.items()}
    return value


# -- building ---------------------------------------------------------------------------------
def build_spec(instrument: Any, decl: ToolDecl) -> ToolSpec:
    """Bind a tool declaration to an instrument: name, descriptions with limits, schemas."""
    name = decl.name or f"{instrument.name}_{decl.method}"
    if not NAME_PATTERN.match(name):
        raise SchemaProfileError(f"tool name {name!r} is not portable")
    hints = typing.get_type_hints(decl.function, include_extras=True)
    signature = inspect.signature(decl.function)
    params: list[Param] = []
    fields: dict[str, Any] = {}
    for pname, parameter in list(signature.parameters.items())[1:]:
        annotation = hints[pname]
        param = _param(instrument, pname, annotation, parameter.default)
        params.append(param)
        fields[pname] = (annotation, Field(description=param.description))
    model = create_model(f"{name}_arguments", **fields)
    input_schema = portable(model.model_json_schema())
    input_schema.pop("description", None)
    returns = hints.get("return")
    output_schema = None
    if returns is not None and returns is not type(None):
        output_schema = portable(
            TypeAdapter(returns).json_schema(mode="serialization"), output=True
        )
    description = inspect.cleandoc(decl.function.__doc__ or "").strip()
    if not description:
        raise SchemaProfileError(f"tool {name!r} has no description (docstring)")
    validator = fastjsonschema.compile(input_schema, detailed_exceptions=False)
    return ToolSpec(
        name=name,
        instrument=instrument.name,
        method=decl.method,
        title=decl.title,
        description=description,
        hints=decl.hints,
        params=tuple(params),
        input_schema=input_schema,
        output_schema=output_schema,
        _check=validator,
    )


def _param(instrument: Any, name: str, annotation: Any, default: Any) -> Param:
    metadata = getattr(annotation, "__metadata__", ())
    arg = next((m for m in metadata if isinstance(m, Arg)), None)
    if arg is None:
        raise SchemaProfileError(f"argument {name!r} needs an Arg(...) description")
    dimension = next((m for m in metadata if isinstance(m, Dimension)), None)
    base = typing.get_args(annotation)[0] if typing.get_origin(annotation) else annotation
    if dimension is not None:
        kind = "quantity"
    elif typing.get_origin(base) in (list, collections.abc.Sequence) and typing.get_args(base) == (
        int,
    ):
        kind = "integers"
    elif base is int:
        kind = "integer"
    elif base is float:
        kind = "number"
    else:
        kind = "json"
    within = None
    description = arg.description
    if arg.within is not None:
        within = getattr(instrument.limits, arg.within)
        if not isinstance(within, Range):
            raise SchemaProfileError(f"limits.{arg.within} of {instrument.name} is not a Range")
        description = f"{description} Allowed: {within.describe()}."
    if arg.note is not None:
        description = f"{description} {getattr(instrument.limits, arg.note)}"
    return Param(name, annotation, description, dimension, kind, within, default)
