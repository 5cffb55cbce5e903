"""A declared tool bound to one instrument: its schemas and its argument binding.

Binding raw JSON arguments happens in three steps, and nothing acts until all pass:

1. the exported JSON Schema, exactly (compiled with fastjsonschema; jsonschema is the reference
   the tests hold it to, and on rejection it words the error);
2. units: each ``{value, unit}`` becomes a pint quantity (prebuilt units, no string parsing);
3. limits: finite numbers (an integral number where an ``int`` is declared, ``2.0`` among
   them, becomes that exact ``int``), each quantity within its dimension's physical bounds
   (nothing negative but a Celsius temperature) and every ``within`` range of the instrument's
   ``limits`` — for quantities and numbers nested in objects and arrays too, found from the
   annotation when the spec is built.

Every error echoes caller input through :func:`labtools.errors.brief`, never whole.
"""

from __future__ import annotations

import collections.abc
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import fastjsonschema
import pint
import typing_extensions
from pydantic import Field, TypeAdapter, create_model

from labtools.errors import InvalidArguments, OutOfRange, ToolError, brief
from labtools.schema import NAME_PATTERN, SchemaProfileError, portable
from labtools.tool import Arg, Hints, ToolDecl
from labtools.units import Dimension, Range, shown, ureg
from labtools.wording import escape, json_pointer, label, not_json, schema_error

__all__ = ["Param", "Site", "ToolSpec", "build_spec"]

_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True)
class Site:
    """A number or a ``{value, unit}`` quantity inside a ``json`` argument.

    ``path`` leads from the argument to it: object keys, ``None`` for every item of an array
    (or value of a map). ``dimension`` is ``None`` for a plain number; ``integer`` marks one
    declared ``int``, which binds to an exact ``int`` (JSON Schema counts ``2.0`` as an integer).
    """

    path: tuple[str | None, ...]
    dimension: Dimension | None
    integer: bool = False


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
    #: for kind "json": the numbers and quantities inside, checked like top-level ones
    sites: tuple[Site, ...] = ()


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
    #: each argument's name and its conversion (:func:`_converter`), in ``params`` order
    _converters: tuple[tuple[str, Callable[[Any], Any]], ...]

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
            raise not_json(arguments, exc) from None
        checked: Any = arguments  # an object, per the schema
        kwargs = {}
        for name, convert in self._converters:
            kwargs[name] = convert(checked[name])
        return kwargs

    def accepts(self, arguments: object) -> bool:
        """Whether the raw arguments satisfy the input schema (step 1 of :meth:`bind` alone)."""
        try:
            self._check(arguments)
        except (fastjsonschema.JsonSchemaException, RecursionError, TypeError, ValueError):
            return False
        return True

    def schema_error(self, arguments: object, fallback: Exception | None = None) -> ToolError:
        """The first schema violation, worded for an LLM (:mod:`labtools.wording`)."""
        params = {p.name: p.description for p in self.params}
        return schema_error(self.input_schema, arguments, params, self._quantity_at, fallback)

    def _quantity_at(self, path: list[Any]) -> tuple[Dimension, int] | None:
        """The dimension of the quantity at or above ``path`` (a top-level quantity argument
        or a nested site), with the length of the quantity's own path."""
        param = self._param(path[0]) if path else None
        if param is None:
            return None
        if param.dimension is not None:
            return param.dimension, 1
        for site in param.sites:
            if site.dimension is None or len(path) <= len(site.path):
                continue
            if all(k is None or k == p for k, p in zip(site.path, path[1:], strict=False)):
                return site.dimension, len(site.path) + 1
        return None

    def _param(self, name: object) -> Param | None:
        for param in self.params:
            if param.name == name:
                return param
        return None

    # -- Python path ---------------------------------------------------------------------------
    def normalize(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Python call arguments → the JSON arguments :meth:`bind` takes.

        Fills defaults, and turns quantities given as pint objects or strings such as ``"50 uL"``
        into ``{value, unit}``, nested ones too. Type checking is left to :meth:`bind`, so both
        paths agree.
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
                raise InvalidArguments(
                    f"argument {brief(key)} given twice", field=json_pointer([key])
                )
            given[key] = value
        out: dict[str, Any] = {}
        for key, value in given.items():
            param = self._param(key)
            if param is not None and param.dimension is not None:
                value = param.dimension.normalize(value, f"/{key}")
            elif param is not None:
                for site in param.sites:
                    if site.dimension is not None:
                        value = _at_site(value, site.path, f"/{key}", site.dimension.normalize)
            out[key] = _jsonish(value)
        for param in self.params:
            if param.name not in out and param.default is not _EMPTY:
                out[param.name] = _jsonish(param.default)
        return out


def _converter(param: Param) -> Callable[[Any], Any]:
    """The function that converts and checks a schema-checked value of ``param`` (built once
    per spec: the sites' walks are laid out ahead, and a pointer is spelled only for an
    error)."""
    where: Where = (None, param.name)
    within = param.within
    if param.kind == "quantity":
        quantity = _quantity_leaf(typing.cast(Dimension, param.dimension), within)
        return lambda value: quantity(value, where)
    if param.kind == "integers":
        return lambda value: [
            _number(item, within, (where, i), integer=True) for i, item in enumerate(value)
        ]
    if param.kind in ("integer", "number"):
        integer = param.kind == "integer"
        return lambda value: _number(value, within, where, integer=integer)
    sites = [(site.path, _leaf(site, within)) for site in param.sites]
    walks = [_walk(path, leaf) for path, leaf in sites]
    merged = _merged(sites) if len(sites) > 1 else None

    def convert(value: Any) -> Any:
        if merged is not None:
            try:
                return merged(value, where)  # every site in one pass
            except ToolError:
                pass  # the error to report is the site-by-site order's first: found below
        for walk in walks:  # site by site: an error is the first site's first violation
            value = walk(value, where)
        return value

    return convert


#: where a value is: ``(parent, key or index)``, from ``(None, argument name)`` down (``None``:
#: the top); spelled as a JSON pointer only for an error
Where = tuple[Any, Any] | None


def _pointer(where: Where) -> str:
    parts = []
    while where is not None:
        where, part = where
        parts.append(f"/{escape(part)}")
    return "".join(reversed(parts))


def _leaf(site: Site, within: Range | None) -> Callable[[Any, Where], Any]:
    """A nested site's check and conversion, as for a top-level argument."""
    if site.dimension is not None:
        return _quantity_leaf(site.dimension, within)
    integer = site.integer
    return lambda value, where: _number(value, within, where, integer=integer)


Walk = Callable[[Any, Where], Any]


def _walk(path: tuple[str | None, ...], convert: Walk) -> Walk:
    """The function giving a node with the value(s) at ``path`` converted, copied along the way
    (the caller's arguments are never modified). A node of another shape than the path's is
    left as it is (for :meth:`ToolSpec.bind` the schema has checked the shape)."""
    if not path:
        return convert
    key, inner = path[0], _walk(path[1:], convert)
    return _each(inner) if key is None else _at_keys({key: inner})


def _merged(sites: list[tuple[tuple[str | None, ...], Walk]]) -> Walk | None:
    """One walk doing what the sites' :func:`_walk` do one after another (they reach disjoint
    values), or ``None`` for sites whose paths do not nest alike."""
    if any(not path for path, _ in sites):
        return sites[0][1] if len(sites) == 1 else None
    heads = list(dict.fromkeys(path[0] for path, _ in sites))
    if heads == [None]:
        inner = _merged([(path[1:], leaf) for path, leaf in sites])
        return None if inner is None else _each(inner)
    if None in heads:
        return None
    children = {}
    for head in heads:
        inner = _merged([(path[1:], leaf) for path, leaf in sites if path[0] == head])
        if inner is None:
            return None
        children[head] = inner
    return _at_keys(children)


def _each(inner: Walk) -> Walk:
    def each(node: Any, where: Where) -> Any:
        if isinstance(node, (list, tuple)):  # a tuple of types: quicker than list | tuple
            return [inner(v, (where, i)) for i, v in enumerate(node)]
        if isinstance(node, dict):
            return {k: inner(v, (where, k)) for k, v in node.items()}
        return node

    return each


def _at_keys(children: dict[str | None, Walk]) -> Walk:
    def at_keys(node: Any, where: Where) -> Any:
        if not isinstance(node, dict):
            return node
        out = None
        for key, inner in children.items():
            if key in node:  # else an optional key left out
                if out is None:
                    out = dict(node)
                out[key] = inner(node[key], (where, key))
        return node if out is None else out

    return at_keys


def _at_site(
    node: Any, path: tuple[str | None, ...], pointer: str, convert: Callable[[Any, str], Any]
) -> Any:
    """:func:`_walk` once, with ``convert`` given the pointer under ``pointer``."""
    walk = _walk(path, lambda value, where: convert(value, pointer + _pointer(where)))
    return walk(node, None)


def _quantity_leaf(dim: Dimension, within: Range | None) -> Callable[[Any, Where], pint.Quantity]:
    """The check of a schema-checked ``{value, unit}``, giving a quantity: finite, within
    ``within`` and within the dimension's physical bounds (compared in each limit's own unit)."""
    limits = tuple(limit for limit in (within, dim.bounds) if limit is not None)
    from_json = dim.from_json

    def quantity(value: Any, where: Where) -> pint.Quantity:
        amount, unit = value["value"], value["unit"]
        _finite(amount, where, "value")
        converted = from_json(amount, unit)
        for limit in limits:
            if not limit.contains(converted):
                pointer = _pointer(where)
                raise OutOfRange(
                    f"{label(pointer)} {shown(amount)} {unit} is outside the allowed range",
                    field=pointer,
                    hint=f"allowed: {limit.describe(unit)}",
                )
        return converted

    return quantity


def _number(value: Any, within: Range | None, where: Where, *, integer: bool) -> Any:
    """A schema-checked number: finite, within ``within``; for an integer the exact ``int``
    (the schema admits only integral numbers there, ``2.0`` among them)."""
    _finite(value, where)
    if integer:
        value = int(value)
    if within is not None and not within.contains(value):
        pointer = _pointer(where)
        raise OutOfRange(
            f"{label(pointer)} {shown(value)} is outside the allowed range",
            field=pointer,
            hint=f"allowed: {within.describe()}",
        )
    return value


def _finite(value: float, where: Where, part: str | None = None) -> None:
    """Refuse a value that is not a finite number (``part``: the key under ``where`` that
    holds it, if any)."""
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond a float's range
        raise InvalidArguments(
            f"{brief(value)} is too large: not a finite number",
            field=_pointer(where if part is None else (where, part)),
            hint="give a finite number within ±1e308",
        ) from None
    if not finite:
        raise InvalidArguments(
            f"{brief(value)} is not a finite number",
            field=_pointer(where if part is None else (where, part)),
            hint="give a finite number",
        )


def _jsonish(value: Any) -> Any:
    """Tuples to lists, recursively (Python callers may pass tuples for arrays)."""
    try:
        return _lists(value)
    except RecursionError:
        raise InvalidArguments(
            "arguments are nested too deeply", field="", hint="JSON arguments nest a few levels"
        ) from None


def _lists(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


# -- building ---------------------------------------------------------------------------------
def build_spec(instrument: Any, decl: ToolDecl) -> ToolSpec:
    """Bind a tool declaration to an instrument: name, descriptions with limits, schemas."""
    name = decl.name or f"{instrument.name}_{decl.method}"
    if not NAME_PATTERN.fullmatch(name):
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
    description = _prose(decl.function.__doc__ or "")
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
        _converters=tuple((param.name, _converter(param)) for param in params),
    )


def _prose(docstring: str) -> str:
    """A docstring as a model reads it: each paragraph on one line, RST's double backquotes
    as Markdown's single ones."""
    paragraphs = inspect.cleandoc(docstring).strip().split("\n\n")
    return "\n".join(" ".join(p.split()) for p in paragraphs).replace("``", "`")


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
    sites = tuple(_sites(base)) if kind == "json" else ()
    if within is not None and kind == "json":
        for site in sites:
            _check_compatible(within, site.dimension, f"{instrument.name}.{name}")
    return Param(name, annotation, description, dimension, kind, within, default, sites)


def _sites(annotation: Any, path: tuple[str | None, ...] = (), depth: int = 0) -> list[Site]:
    """The numbers and ``{value, unit}`` quantities inside an argument's annotation: through
    TypedDicts, lists, sequences, tuples and maps."""
    if depth > 32:
        raise SchemaProfileError(f"argument annotation nests too deep at {path}")
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        dimension = next((m for m in metadata if isinstance(m, Dimension)), None)
        if dimension is not None:
            return [Site(path, dimension)]
        annotation = base
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if typing_extensions.is_typeddict(annotation):
        fields = typing.get_type_hints(annotation, include_extras=True)
        return [s for key, hint in fields.items() for s in _sites(hint, (*path, key), depth + 1)]
    if origin in (list, tuple, collections.abc.Sequence) and args:
        return _sites(args[0], (*path, None), depth + 1)
    if origin in (dict, collections.abc.Mapping) and len(args) == 2:
        return _sites(args[1], (*path, None), depth + 1)
    if annotation in (int, float):
        return [Site(path, None, integer=annotation is int)]
    return []


def _check_compatible(within: Range, dimension: Dimension | None, where: str) -> None:
    """A ``within`` range over a nested argument must fit every number or quantity in it."""
    if dimension is None:
        fits = not within.unit
    else:
        fits = bool(within.unit) and ureg.Quantity(1, within.unit).check(dimension.pint_dimension)
    if not fits:
        raise SchemaProfileError(
            f"{where}: its range in {within.unit!r} does not fit all inside it"
        )
