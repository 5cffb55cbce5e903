"""The one owner of the names of things on a PyLabRobot deck: ``"<labware>:<well>"``.

A well (or tip spot) is named by its labware and its PLR identifier (``"plate_1:A1"``,
``"tips_300ul:H12"``); a container that is not an item of labware by its own name
(``"cuvette"``); a plate with a single well may be named alone (``"reservoir_1"``). Identifiers
and their grid positions are PLR's own (``ItemizedResource`` ordering,
``pylabrobot.resources.utils.split_identifier`` and ``label_to_row_index``).

- :func:`container_key` — the key of a PLR resource; :func:`item_key` builds it from parts.
- :class:`ContainerNames` — a key back to its PLR container, with the error a tool call gets
  (:class:`UnknownResource`, names cut with :func:`labtools.errors.brief`, a hint of what
  exists) for a key that names nothing. :func:`find_container` is the one-shot form.

Simulators name world containers with these keys too; they import this module, never the other
way round.
"""

from __future__ import annotations

from typing import Any

from labtools.drivers.pylabrobot.internals import item_identifiers
from labtools.drivers.pylabrobot.plr import (
    Container,
    Deck,
    ItemizedResource,
    Plate,
    Resource,
    ResourceNotFoundError,
    TipRack,
    TipSpot,
    Trash,
    Well,
    label_to_row_index,
    split_identifier,
)
from labtools.errors import UnknownResource, brief

__all__ = [
    "SEPARATOR",
    "ContainerNames",
    "container_key",
    "find_container",
    "grid_position",
    "item_key",
    "items_by_identifier",
]

#: between a labware's name and its item's identifier in a key
SEPARATOR = ":"


def item_key(labware: str, identifier: str) -> str:
    """The key of the item ``identifier`` of labware ``labware``: ``"plate_1:A1"``."""
    return f"{labware}{SEPARATOR}{identifier}"


def container_key(resource: Resource) -> str:
    """The key of a PLR resource: ``"<labware>:<identifier>"`` for an item of labware (a well,
    a tip spot), else the resource's own name. Scans the labware's ordering (PLR's
    ``get_child_identifier``): cache it per resource on hot paths."""
    parent = resource.parent
    if isinstance(parent, ItemizedResource):
        return item_key(parent.name, parent.get_child_identifier(resource))
    return resource.name


def items_by_identifier(labware: ItemizedResource[Any]) -> dict[str, Any]:
    """Identifier → item, in PLR's item order (column-major: A1, B1, …), in one pass.

    Read from the labware's ordering (private in PLR 0.2.2: see
    :func:`~labtools.drivers.pylabrobot.internals.item_identifiers`): ``get_child_identifier()``
    scans it once per item, 45 µs for a 384-well plate's last well.
    """
    return dict(zip(item_identifiers(labware), labware.get_all_items(), strict=True))


def grid_position(identifier: str) -> tuple[int, int]:
    """``"A1"`` → ``(0, 0)``, ``"P24"`` → ``(15, 23)``: row and column (from 0), parsed by PLR;
    ``ValueError`` for an identifier that is not a row letter and a column number."""
    row, column = split_identifier(identifier)
    return label_to_row_index(row), int(column) - 1


def find_container(root: Resource, key: str, field: str = "") -> tuple[Container, str]:
    """The container ``key`` names under ``root`` (a deck) and its canonical key; raises
    :class:`UnknownResource`. Indexes the whole deck: build a :class:`ContainerNames` to
    resolve many keys."""
    return ContainerNames(root).resolve(key, field)


class ContainerNames:
    """Keys of the containers under a PLR resource (a deck), resolved to PLR containers.

    Labware (plates with wells, and containers not inside labware, trash aside) and their
    wells by identifier are listed once, at construction; call :meth:`refresh` after changing
    the deck's layout (plates moving between sites keep their names and wells).
    """

    def __init__(self, root: Resource) -> None:
        self.root = root
        self.labware: list[Resource] = []
        self.wells: dict[str, dict[str, Container]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-list the labware and their wells."""
        root = self.root
        resources = root.get_all_resources() if isinstance(root, Deck) else root.get_all_children()
        self.labware = [
            r
            for r in resources
            if (isinstance(r, Plate) and r.num_items > 0)
            or (
                isinstance(r, Container)
                and not isinstance(r, Trash)
                and not isinstance(r.parent, ItemizedResource)
            )
        ]
        self.wells = {r.name: items_by_identifier(r) for r in self.labware if isinstance(r, Plate)}

    def resource(self, name: str) -> Resource | None:
        """The resource named ``name`` under the root, or ``None``."""
        if not name:
            return None
        root = self.root
        if isinstance(root, Deck):
            return root.get_resource(name) if root.has_resource(name) else None
        try:
            return root.get_resource(name)
        except (ResourceNotFoundError, ValueError):
            return None

    def labware_hint(self) -> str:
        return ", ".join(r.name for r in self.labware) or "none"

    def resolve(self, key: str, field: str = "") -> tuple[Container, str]:
        """The container ``key`` names and its canonical key (identifiers upper-cased:
        ``"plate_1:a1"`` → ``"plate_1:A1"``); :class:`UnknownResource` with a hint otherwise."""
        name, sep, ident = key.partition(SEPARATOR)
        wells = self.wells.get(name)
        if wells is not None and sep:
            item = wells.get(ident)
            canonical = ident
            if item is None:
                canonical = ident.upper()
                item = wells.get(canonical)
            if item is not None:
                return item, item_key(name, canonical)
            raise UnknownResource(
                f"{brief(name)} has no well {brief(ident)}",
                field=field,
                hint=f"wells of {name}: {_range_hint(wells)}",
            )
        resource = self.resource(name)
        if resource is None or isinstance(resource, TipRack | TipSpot | Trash):
            raise UnknownResource(
                f"no labware named {brief(name)}",
                field=field,
                hint=f"labware: {self.labware_hint()}",
            )
        if wells is not None:
            if len(wells) == 1:
                ident, only = next(iter(wells.items()))
                return only, item_key(name, ident)
            raise UnknownResource(
                f"{brief(name)} has several wells; name one",
                field=field,
                hint=f"e.g. {item_key(name, next(iter(wells)))!r}; wells: {_range_hint(wells)}",
            )
        if isinstance(resource, Container) and not isinstance(resource, Well):
            if sep:
                raise UnknownResource(
                    f"{brief(name)} has no wells; name it alone", field=field, hint=repr(name)
                )
            return resource, name
        raise UnknownResource(
            f"{brief(name)} is not labware that holds liquid",
            field=field,
            hint=f"labware: {self.labware_hint()}",
        )


def _range_hint(wells: dict[str, Any]) -> str:
    keys = list(wells)
    return f"{keys[0]}–{keys[-1]} ({len(keys)})" if keys else "none"
