"""The base of every instrument, real or simulated."""

from __future__ import annotations

from abc import ABC
from collections import OrderedDict
from typing import Any, ClassVar

from labtools.errors import NotSupported, UnknownResource, brief
from labtools.tool import ToolDecl

__all__ = ["DataSnapshot", "DataStore", "Instrument"]

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
    simulated: bool = False

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
