"""Tool names for the things on a PyLabRobot deck, and the compact view of what PLR believes.

Wells are ``"<labware>:<well>"`` (``"plate_1:A1"``); a container that is not in a plate, or a
plate with a single well, may be named alone (``"cuvette"``). Unknown names raise
:class:`UnknownResource` with a hint listing what exists. Volumes are PLR's tracker volumes — the
handler's belief, never a simulator's truth.
"""

from __future__ import annotations

from typing import Any, cast

from pylabrobot.plate_reading import PlateReader
from pylabrobot.resources import (
    Container,
    Deck,
    ItemizedResource,
    Plate,
    PlateHolder,
    Resource,
    ResourceHolder,
    TipRack,
    TipSpot,
    Trash,
    Well,
)

from labtools.errors import PreconditionFailed, UnknownResource
from labtools.units import qty

__all__ = ["RESERVOIR_WELL_UL", "DeckView"]

UL = "microliter"
#: plates whose wells hold at least this much (µL) are reported as reservoirs
RESERVOIR_WELL_UL = 2000.0


class DeckView:
    """Name resolution and belief summaries for one PLR deck.

    Labware, their wells (by identifier) and tip racks are listed once, at construction (PLR's
    own identifier lookups scan the plate); call :meth:`refresh` after changing the deck's layout.
    """

    def __init__(self, deck: Deck) -> None:
        self.deck = deck
        self.labware: list[Resource] = []
        self.tip_racks: list[TipRack] = []
        self._wells: dict[str, dict[str, Container]] = {}
        self._spots: dict[int, str] = {}
        self.refresh()

    def refresh(self) -> None:
        """Re-list the deck's labware, wells and tip racks."""
        resources = self.deck.get_all_resources()
        self.tip_racks = [r for r in resources if isinstance(r, TipRack)]
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
        self._wells = {
            r.name: dict(zip(_identifiers(r), r.get_all_items(), strict=True))
            for r in self.labware
            if isinstance(r, Plate)
        }
        # The deck's layout is fixed once built (plates move between sites, sites stay), so the
        # spots of each rack and the plate sites are listed once, not walked on every call.
        self._rack_spots = {rack.name: list(rack.get_all_items()) for rack in self.tip_racks}
        self._spots = {
            id(spot): f"{rack.name}:{ident}"
            for rack in self.tip_racks
            for ident, spot in zip(_identifiers(rack), self._rack_spots[rack.name], strict=True)
        }
        self._sites = [r for r in self.deck.get_all_resources() if _is_plate_site(r)]

    # -- wells ---------------------------------------------------------------------------------
    def container(self, ref: str, field: str) -> tuple[Container, str]:
        """The container a tool names and its canonical name; refused while its plate is inside
        the plate reader, where no channel can reach it."""
        container, canonical = self._container(ref, field)
        holder = container.parent if isinstance(container, Well) else container
        if holder is not None and isinstance(holder.parent, PlateReader):
            raise PreconditionFailed(
                f"{holder.name} is inside the plate reader; pipetting needs it on the deck",
                field=field,
                hint=f"move it out with lh_move_plate to a free site: "
                f"{', '.join(s for s in self.free_sites() if s != holder.parent.name)}",
            )
        return container, canonical

    def _container(self, ref: str, field: str) -> tuple[Container, str]:
        name, sep, well = ref.partition(":")
        wells = self._wells.get(name)
        if wells is not None and sep:
            item = wells.get(well)
            if item is None:
                item = wells.get(well.upper())
            if item is not None:
                return item, f"{name}:{_item_id(wells, item, well)}"
            raise UnknownResource(
                f"{name!r} has no well {well!r}",
                field=field,
                hint=f"wells of {name}: {_range_hint(wells)}",
            )
        resource = self._resource(name)
        if resource is None or isinstance(resource, TipRack | TipSpot | Trash):
            raise UnknownResource(
                f"no labware named {name!r}", field=field, hint=f"labware: {self.labware_hint()}"
            )
        if wells is not None:
            if len(wells) == 1:
                ident, only = next(iter(wells.items()))
                return only, f"{name}:{ident}"
            raise UnknownResource(
                f"{name!r} has several wells; name one",
                field=field,
                hint=f"e.g. '{name}:A1'; wells: {_range_hint(wells)}",
            )
        if isinstance(resource, Container) and not isinstance(resource, Well):
            if sep:
                raise UnknownResource(
                    f"{name!r} has no wells; name it alone", field=field, hint=f"'{name}'"
                )
            return resource, name
        raise UnknownResource(
            f"{name!r} is not labware that holds liquid",
            field=field,
            hint=f"labware: {self.labware_hint()}",
        )

    def _resource(self, name: str) -> Resource | None:
        if not name or not self.deck.has_resource(name):
            return None
        return self.deck.get_resource(name)

    def labware_hint(self) -> str:
        return ", ".join(r.name for r in self.labware) or "none"

    # -- tips ----------------------------------------------------------------------------------
    def tip_rack(self, name: str, field: str) -> TipRack:
        """One of :attr:`tip_racks` by name."""
        resource = self._resource(name)
        if not isinstance(resource, TipRack) or resource not in self.tip_racks:
            raise UnknownResource(
                f"no tip rack named {name!r}", field=field, hint=f"tip racks: {self.tips_hint()}"
            )
        return resource

    def tips_left(self) -> dict[str, int]:
        """Unused tips per rack, as PLR's tip trackers believe."""
        return {
            rack.name: sum(1 for s in self._rack_spots[rack.name] if s.tracker.has_tip)
            for rack in self.tip_racks
        }

    def tips_hint(self) -> str:
        left = self.tips_left()
        return ", ".join(f"{k} ({v} left)" for k, v in left.items()) or "none"

    def spot_name(self, spot: TipSpot | None) -> str:
        """``"<rack>:<spot>"`` for a tip spot of this deck (``"unknown"`` otherwise)."""
        return self._spots.get(id(spot), "unknown") if spot is not None else "unknown"

    def next_tips(self, rack: TipRack, count: int) -> list[TipSpot]:
        """The first ``count`` spots that hold a tip, in the rack's order (A1, B1, …, H1, A2…)."""
        spots: list[TipSpot] = []
        for spot in self._rack_spots[rack.name]:
            if spot.tracker.has_tip:
                spots.append(spot)
                if len(spots) == count:
                    break
        return spots

    # -- plates and sites ----------------------------------------------------------------------
    def plate(self, name: str, field: str) -> Plate:
        resource = self._resource(name)
        if not isinstance(resource, Plate):
            plates = ", ".join(r.name for r in self.labware if isinstance(r, Plate)) or "none"
            raise UnknownResource(f"no plate named {name!r}", field=field, hint=f"plates: {plates}")
        return resource

    def site(self, name: str, field: str) -> ResourceHolder:
        """A plate site (a carrier's plate holder or a plate reader) named ``name``."""
        resource = self._resource(name)
        if not _is_plate_site(resource):
            raise UnknownResource(
                f"no plate site named {name!r}",
                field=field,
                hint=f"free sites: {', '.join(self.free_sites()) or 'none'}",
            )
        return cast(ResourceHolder, resource)

    def free_sites(self) -> list[str]:
        """Plate sites with nothing on them, readers included."""
        return [site.name for site in self._sites if site.resource is None]

    # -- belief --------------------------------------------------------------------------------
    def labware_state(self) -> list[dict[str, Any]]:
        """Each labware: kind, location, well capacity (µL) and non-empty well volumes (µL)."""
        out = []
        for labware in self.labware:
            wells = self._wells.get(labware.name)
            if wells is not None:
                volumes = {
                    k: round(w.tracker.volume, 4) for k, w in wells.items() if w.tracker.volume > 0
                }
                capacity = next(iter(wells.values())).max_volume
                kind = "reservoir" if capacity >= RESERVOIR_WELL_UL else "plate"
            else:
                volume = labware.tracker.volume
                volumes = {labware.name: round(volume, 4)} if volume > 0 else {}
                capacity = labware.max_volume
                kind = labware.category or "container"
            parent = labware.parent
            out.append(
                {
                    "name": labware.name,
                    "kind": kind,
                    "location": parent.name if parent is not None else "off deck",
                    "well_capacity": qty(round(float(capacity), 4), UL),
                    "wells": volumes,
                }
            )
        return out


def _identifiers(plate: ItemizedResource[Any]) -> list[str]:
    """The plate's well identifiers in item order.

    Read from the plate's ordering (private in PLR 0.2.2, like the trackers the adapter restores):
    ``get_identifier()`` scans that ordering once per well, 45 µs for a 384-well plate's last well.
    """
    return list(plate._ordering)


def _item_id(wells: dict[str, Container], item: Container, asked: str) -> str:
    """The canonical identifier of ``item`` (``asked`` as given, or upper-cased)."""
    return asked if wells.get(asked) is item else asked.upper()


def _range_hint(wells: dict[str, Container]) -> str:
    keys = list(wells)
    return f"{keys[0]}–{keys[-1]} ({len(keys)})" if keys else "none"


def _is_plate_site(resource: Resource | None) -> bool:
    return isinstance(resource, PlateHolder | PlateReader)
