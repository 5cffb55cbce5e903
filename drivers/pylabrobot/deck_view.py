"""The things on a PyLabRobot deck as the tools name them, and the compact view of what PLR
believes.

Containers are named by :mod:`labtools.drivers.pylabrobot.naming` (``"plate_1:A1"``,
``"cuvette"``); tip racks, plates and plate sites by their PLR names. Unknown names raise
:class:`UnknownResource` with a hint listing what exists. Volumes are PLR's tracker volumes — the
handler's belief, never a simulator's truth.
"""

from __future__ import annotations

from typing import Any, cast

from labtools.drivers.pylabrobot.naming import ContainerNames, item_key, items_by_identifier
from labtools.drivers.pylabrobot.plr import (
    Container,
    Deck,
    Plate,
    PlateHolder,
    PlateReader,
    Resource,
    ResourceHolder,
    TipRack,
    TipSpot,
    Well,
)
from labtools.errors import PreconditionFailed, UnknownResource, brief
from labtools.units import qty

__all__ = ["RESERVOIR_WELL_UL", "DeckView"]

UL = "microliter"
#: plates whose wells hold at least this much (µL) are reported as reservoirs
RESERVOIR_WELL_UL = 2000.0


class DeckView:
    """Name resolution and belief summaries for one PLR deck.

    Labware, their wells (by identifier) and tip racks are listed once, at construction (PLR's
    own identifier lookups scan the plate); call :meth:`refresh` after changing the deck's layout.
    Container keys are :mod:`.naming`'s.
    """

    def __init__(self, deck: Deck) -> None:
        self.deck = deck
        self.names = ContainerNames(deck)
        self.tip_racks: list[TipRack] = []
        self._spots: dict[int, str] = {}
        self.refresh()

    @property
    def labware(self) -> list[Resource]:
        """Plates with wells and free-standing containers (the trash aside)."""
        return self.names.labware

    def refresh(self) -> None:
        """Re-list the deck's labware, wells and tip racks."""
        self.names.refresh()
        resources = self.deck.get_all_resources()
        self.tip_racks = [r for r in resources if isinstance(r, TipRack)]
        # The deck's layout is fixed once built (plates move between sites, sites stay), so the
        # spots of each rack and the plate sites are listed once, not walked on every call.
        self._rack_spots = {rack.name: list(rack.get_all_items()) for rack in self.tip_racks}
        self._spots = {
            id(spot): item_key(rack.name, ident)
            for rack in self.tip_racks
            for ident, spot in items_by_identifier(rack).items()
        }
        self._sites = [r for r in resources if _is_plate_site(r)]

    # -- wells ---------------------------------------------------------------------------------
    def container(self, ref: str, field: str) -> tuple[Container, str]:
        """The container a tool names and its canonical name; refused while its plate is inside
        the plate reader, where no channel can reach it."""
        container, canonical = self.names.resolve(ref, field)
        holder = container.parent if isinstance(container, Well) else container
        if holder is not None and isinstance(holder.parent, PlateReader):
            raise PreconditionFailed(
                f"{holder.name} is inside the plate reader; pipetting needs it on the deck",
                field=field,
                hint=f"move it out with lh_move_plate to a free site: "
                f"{', '.join(s for s in self.free_sites() if s != holder.parent.name)}",
            )
        return container, canonical

    def _resource(self, name: str) -> Resource | None:
        return self.names.resource(name)

    def labware_hint(self) -> str:
        return self.names.labware_hint()

    # -- tips ----------------------------------------------------------------------------------
    def tip_rack(self, name: str, field: str) -> TipRack:
        """One of :attr:`tip_racks` by name."""
        resource = self._resource(name)
        if not isinstance(resource, TipRack) or resource not in self.tip_racks:
            raise UnknownResource(
                f"no tip rack named {brief(name)}",
                field=field,
                hint=f"tip racks: {self.tips_hint()}",
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
            raise UnknownResource(
                f"no plate named {brief(name)}", field=field, hint=f"plates: {plates}"
            )
        return resource

    def site(self, name: str, field: str) -> ResourceHolder:
        """A plate site (a carrier's plate holder or a plate reader) named ``name``."""
        resource = self._resource(name)
        if not _is_plate_site(resource):
            raise UnknownResource(
                f"no plate site named {brief(name)}",
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
            wells = self.names.wells.get(labware.name)
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


def _is_plate_site(resource: Resource | None) -> bool:
    return isinstance(resource, PlateHolder | PlateReader)
