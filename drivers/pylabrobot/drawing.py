"""A PyLabRobot deck as a flat drawing, for the live view (:mod:`labtools.view`).

Everything in millimetres in the deck's frame (x to the right, y to the back, as PLR places
resources; rotations are not drawn). Boxes are carriers, sites, labware, the reader and the
trash; wells carry what the liquid handler believes they hold (PLR's volume trackers), tips
whether PLR's tip trackers believe a tip is there. Each plate's and rack's inner geometry is
read once (items never move within their labware); only positions of labware and the
trackers are read on each drawing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labtools.drivers.pylabrobot.naming import item_key, items_by_identifier
from labtools.drivers.pylabrobot.plr import (
    Container,
    Deck,
    Plate,
    PlateHolder,
    PlateReader,
    Resource,
    ResourceHolder,
    TipRack,
    Trash,
)

__all__ = ["DeckDrawing"]


@dataclass(frozen=True)
class _Item:
    key: str
    dx: float
    dy: float
    w: float
    h: float
    round: bool
    capacity_ul: float
    resource: Any  # the PLR well, container or tip spot


class DeckDrawing:
    """``draw()``: the deck as ``{"layout", "volumes", "tips_used"}`` (JSON-able).

    ``layout`` is ``{"size", "boxes", "wells", "tips"}``: every box, well and tip spot with its
    place and size, the same object from one drawing to the next while nothing moved (so a
    viewer sends it again only when it changed). ``volumes``: believed µL of every well that
    holds any; ``tips_used``: the tip spots PLR believes empty."""

    def __init__(self, deck: Deck) -> None:
        self.deck = deck
        self._inner: dict[int, tuple[Resource, list[_Item]]] = {}
        self._layout: dict[str, Any] = {}
        self._placed: list[tuple[bool, Any, str]] = []  # (a tip spot?, PLR item, key)
        self._signature: tuple[Any, ...] = ()

    def draw(self) -> dict[str, Any]:
        signature = self._where()
        if signature != self._signature:
            self._signature = signature
            self._lay_out()
        volumes: dict[str, float] = {}
        used: list[str] = []
        for tip, item, key in self._placed:
            if tip:
                if not item.tracker.has_tip:
                    used.append(key)
            else:
                volume = float(item.tracker.volume)
                if volume > 0.0:
                    volumes[key] = round(volume, 2)
        return {"layout": self._layout, "volumes": volumes, "tips_used": used}

    def _where(self) -> tuple[Any, ...]:
        """Where every labware is: each resource's parent, down to the labware (cheap)."""
        out: list[Any] = []

        def walk(parent: Resource) -> None:
            for child in parent.children:
                out.append((id(child), id(parent), child.location))
                if _kind(child) not in ("plate", "tip_rack", "container"):
                    walk(child)

        walk(self.deck)
        return tuple(out)

    def _lay_out(self) -> None:
        boxes: list[dict[str, Any]] = []
        wells: list[dict[str, Any]] = []
        tips: list[dict[str, Any]] = []
        self._placed = []
        self._walk(self.deck, 0.0, 0.0, boxes, wells, tips, "")
        size = [round(self.deck.get_size_x(), 1), round(self.deck.get_size_y(), 1)]
        self._layout = {"size": size, "boxes": boxes, "wells": wells, "tips": tips}

    def _walk(
        self,
        parent: Resource,
        ox: float,
        oy: float,
        boxes: list[dict[str, Any]],
        wells: list[dict[str, Any]],
        tips: list[dict[str, Any]],
        site: str,
    ) -> None:
        for child in list(parent.children):
            location = child.location
            if location is None:
                continue
            x, y = ox + location.x, oy + location.y
            kind = _kind(child)
            box = {
                "name": child.name,
                "kind": kind,
                "x": round(x, 2),
                "y": round(y, 2),
                "w": round(child.get_size_x(), 2),
                "h": round(child.get_size_y(), 2),
            }
            if site and kind in ("plate", "tip_rack", "container"):
                box["site"] = site
            boxes.append(box)
            if kind == "tip_rack":
                for item in self._items(child):
                    self._placed.append((True, item.resource, item.key))
                    tips.append(
                        {
                            "key": item.key,
                            "x": round(x + item.dx, 2),
                            "y": round(y + item.dy, 2),
                            "d": item.w,
                        }
                    )
            elif kind in ("plate", "container"):
                for item in self._items(child):
                    self._placed.append((False, item.resource, item.key))
                    wells.append(
                        {
                            "key": item.key,
                            "labware": child.name,
                            "x": round(x + item.dx, 2),
                            "y": round(y + item.dy, 2),
                            "w": item.w,
                            "h": item.h,
                            "round": item.round,
                            "capacity_ul": item.capacity_ul,
                        }
                    )
            else:
                holds = child.name if kind in ("site", "reader") else site
                self._walk(child, x, y, boxes, wells, tips, holds)

    def _items(self, labware: Resource) -> list[_Item]:
        """The wells or tip spots of a labware (itself, for a lone container), cached."""
        cached = self._inner.get(id(labware))
        if cached is not None and cached[0] is labware:
            return cached[1]
        if isinstance(labware, Plate | TipRack):
            found = items_by_identifier(labware).items()
            pairs = [(item_key(labware.name, ident), item) for ident, item in found]
        else:
            pairs = [(labware.name, labware)]
        items = []
        for key, item in pairs:
            at = item.location if item is not labware else None
            items.append(
                _Item(
                    key=key,
                    dx=at.x if at is not None else 0.0,
                    dy=at.y if at is not None else 0.0,
                    w=round(item.get_size_x(), 2),
                    h=round(item.get_size_y(), 2),
                    round=getattr(getattr(item, "cross_section_type", None), "name", "")
                    == "CIRCLE",
                    capacity_ul=round(float(getattr(item, "max_volume", 0.0) or 0.0), 1),
                    resource=item,
                )
            )
        self._inner[id(labware)] = (labware, items)
        return items


def _kind(resource: Resource) -> str:
    if isinstance(resource, TipRack):
        return "tip_rack"
    if isinstance(resource, Plate):
        return "plate" if resource.num_items > 0 else "other"
    if isinstance(resource, PlateReader):
        return "reader"
    if type(resource).__name__.endswith("Carrier"):  # PLR's plate, tip, trough … carriers
        return "carrier"
    if isinstance(resource, PlateHolder | ResourceHolder):
        return "site"
    if isinstance(resource, Trash):
        return "trash"
    if isinstance(resource, Container):
        return "container"
    return "other"
