"""The base of every instrument, real or simulated."""

from __future__ import annotations

import functools
import inspect
import types
import typing
import weakref
from abc import ABC
from collections import OrderedDict
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, Union

import typing_extensions

from labtools import units
from labtools.errors import NotSupported, UnknownResource, brief
from labtools.tool import ToolDecl
from labtools.units import Dimension

if TYPE_CHECKING:
    from labtools.result import ToolResult
    from labtools.spec import ToolSpec

__all__ = ["DataSnapshot", "DataStore", "Dispatcher", "Instrument", "InstrumentProxy"]

#: a :class:`DataStore`'s counter and kept entries
DataSnapshot = tuple[int, tuple[tuple[str, dict[str, Any]], ...]]


class DataStore:
    """Large results (spectra, raw counts) kept beside the compact form a tool returns.

    Handles read ``"<instrument>/<n>"``. The store keeps the newest ``capacity`` entries.
    """

    def __init__(self, prefix: str, capacity: int = 64) -> None:
        self._prefix = prefix
        self._capacity = capacity
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._count = 0

    def put(self, payload: dict[str, Any]) -> str:
        self._count += 1
        handle = f"{self._prefix}/{self._count}"
        self._items[handle] = payload
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)
        return handle

    def get(self, handle: str, *, field: str | None = None) -> dict[str, Any]:
        """The payload behind ``handle``; ``UnknownResource`` (naming ``field``, the argument
        that gave it) for a handle not kept."""
        try:
            return self._items[handle]
        except KeyError:
            raise UnknownResource(
                f"no data {brief(handle)}",
                field=field,
                hint=f"kept: {', '.join(self._items) or 'none'}",
            ) from None

    def handles(self) -> list[str]:
        return list(self._items)

    def snapshot(self) -> DataSnapshot:
        """The counter and kept entries, for :meth:`restore` (payloads are never changed)."""
        return self._count, tuple(self._items.items())

    def restore(self, snapshot: DataSnapshot) -> None:
        """Back to ``snapshot``: the next handle and the kept entries as they were then."""
        self._count, items = snapshot
        self._items = OrderedDict(items)


class Instrument(ABC):
    """A named instrument whose tools are the ``@tool`` methods of its interface.

    Subclasses (drivers, simulators) implement the interface's methods; the declaration — the
    signature, docstring and hints — stays the interface's. Constructors do no I/O, so tool
    schemas export offline; :meth:`setup` connects.
    """

    kind: ClassVar[str] = "instrument"
    limits: Any = None
    #: nothing real moves: a simulator, or a dry run of hardware (MCP ``openWorldHint: false``)
    simulated: bool = False
    #: a dry run of hardware (PyLabRobot's chatterboxes): simulated, but it models nothing and
    #: stands for the instrument it prints commands for, so a lab holding one is not rewound
    dry_run: bool = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.data = DataStore(name)

    @classmethod
    def tool_declarations(cls) -> dict[str, ToolDecl]:
        """The class's tools by method name; a subclass's redeclaration replaces the base's."""
        found: dict[str, ToolDecl] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                decl = getattr(value, "__tool__", None)
                if isinstance(decl, ToolDecl):
                    found[attr] = decl
        return found

    async def setup(self) -> None:
        """Connect to the instrument. Called by the lab before the first tool call."""

    async def stop(self) -> None:
        """Disconnect."""

    @property
    def link_lost(self) -> bool:
        """Whether the connection to the device has dropped since :meth:`setup`; the lab's
        ``connect()`` then sets the instrument up again (drivers with a link override it)."""
        return False

    def state(self) -> dict[str, Any]:
        """What the instrument believes about itself, JSON-able. Never hidden simulator truth."""
        return {}

    def snapshot(self) -> Any:
        """Everything :meth:`restore` needs to return to this moment (simulators, episodes)."""
        raise NotSupported(f"{type(self).__name__} cannot take snapshots")

    def restore(self, snapshot: Any) -> None:
        """Return to the moment of ``snapshot``."""
        raise NotSupported(f"{type(self).__name__} cannot restore snapshots")


class Dispatcher(Protocol):
    """What an :class:`InstrumentProxy` calls through: the lab's catalogue and dispatch."""

    def tool_specs(self) -> list[ToolSpec]: ...

    def call(self, name: str, arguments: object) -> ToolResult: ...


class InstrumentProxy:
    """``lab.reader`` — an instrument's tools as Python methods, through the lab's validation.

    Each method carries the tool's own signature and docstring, from the same
    :class:`~labtools.spec.ToolSpec` its schemas come from: ``help()``, ``inspect.signature``
    and IDE completion show the arguments, their kinds (a quantity's dimension) and defaults.
    """

    def __init__(self, lab: Dispatcher, instrument: Instrument) -> None:
        self._lab = lab
        self._instrument = instrument

    def _tools(self) -> dict[str, ToolSpec]:
        name = self._instrument.name
        return {s.method: s for s in self._lab.tool_specs() if s.instrument == name}

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):  # no tool's name: dunder and private probes (copy, IPython)
            raise AttributeError(method)
        spec = self._tools().get(method)
        if spec is None:
            raise AttributeError(f"{self._instrument.name} has no tool {method!r}")
        lab = self._lab

        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            return lab.call(spec.name, spec.normalize(args, kwargs)).unwrap()

        signature, doc = _python_form(spec, type(self._instrument))
        call.__name__ = method
        call.__qualname__ = f"{spec.instrument}.{method}"
        call.__doc__ = doc
        call.__signature__ = signature  # type: ignore[attr-defined]
        return call

    def __dir__(self) -> list[str]:
        return [*self._tools(), "instrument"]

    @property
    def instrument(self) -> Instrument:
        """The instrument object itself (bypasses validation; for drivers and tests)."""
        return self._instrument


#: each tool's Python signature and docstring, built once per spec
_PYTHON_FORMS: weakref.WeakKeyDictionary[ToolSpec, tuple[inspect.Signature, str]] = (
    weakref.WeakKeyDictionary()
)


def _python_form(spec: ToolSpec, cls: type[Instrument]) -> tuple[inspect.Signature, str]:
    """The signature (annotations as text: a quantity as its dimension, e.g. ``Volume | str``)
    and the docstring (the description, then each argument's) of ``spec`` as a method."""
    form = _PYTHON_FORMS.get(spec)
    if form is not None:
        return form
    parameters = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=p.default,
            annotation=_shown(p.annotation),
        )
        for p in spec.params
    ]
    decl = cls.tool_declarations().get(spec.method)
    returns = typing.get_type_hints(decl.function).get("return") if decl else None
    shown = _shown(returns) if returns not in (None, type(None)) else "dict[str, Any]"
    lines = [spec.description, "", "Args:"] if spec.params else [spec.description]
    for p in spec.params:
        text = p.description
        if p.dimension is not None:
            text += f" {_quantity_forms(p.dimension)}"
        fields = _fields(p.annotation)
        if fields:
            text += f" Keys: {fields}."
        lines.append(f"    {p.name}: {text}")
    lines += [
        "",
        "Returns:",
        f"    The tool's data ({shown}). A refused call raises ToolError "
        "(code, message, field, hint) and changes nothing.",
    ]
    form = inspect.Signature(parameters, return_annotation=shown), "\n".join(lines)
    _PYTHON_FORMS[spec] = form
    return form


def _quantity_forms(dimension: Dimension) -> str:
    example = f"50 {dimension.canonical}"
    return (
        f"A {dimension.name}: a pint quantity, a string such as '{example}', or "
        f'{{"value": 50, "unit": "{dimension.canonical}"}}; units: {", ".join(dimension.units)}.'
    )


def _shown(annotation: Any) -> str:
    """``annotation`` as short text, without its ``Arg`` description: a quantity as the alias
    of its dimension in :mod:`labtools.units` (``Volume | str``), TypedDicts by name."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        dimension = next((m for m in args[1:] if isinstance(m, Dimension)), None)
        if dimension is not None:
            return f"{_aliases().get(dimension, 'Quantity')} | str"
        return _shown(args[0])
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin in (Union, types.UnionType):
        return " | ".join(_shown(a) for a in args)
    if origin is not None:
        inner = ", ".join(_shown(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if args else str(origin)
    if annotation is type(None):
        return "None"
    if annotation is Any:
        return "Any"
    return getattr(annotation, "__name__", str(annotation))


def _fields(annotation: Any) -> str:
    """The keys and kinds of the TypedDict an argument holds or lists, as text (or "")."""
    while typing.get_origin(annotation) is not None and not typing_extensions.is_typeddict(
        annotation
    ):
        args = typing.get_args(annotation)
        if not args or typing.get_origin(annotation) in (Literal, Union, types.UnionType):
            return ""
        annotation = args[0]
    if not typing_extensions.is_typeddict(annotation):
        return ""
    hints = typing.get_type_hints(annotation, include_extras=True)
    return ", ".join(f"{key} ({_shown(hint)})" for key, hint in hints.items())


@functools.cache
def _aliases() -> dict[Dimension, str]:
    """Each dimension's alias in :mod:`labtools.units` (``Volume``, ``Wavelength`` …)."""
    found: dict[Dimension, str] = {}
    for name in units.__all__:
        value = getattr(units, name)
        if typing.get_origin(value) is Annotated:
            for meta in typing.get_args(value)[1:]:
                if isinstance(meta, Dimension):
                    found.setdefault(meta, name)
    return found
