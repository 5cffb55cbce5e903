"""Opentrons OT-2 decks from the labware definitions Opentrons publishes, offline.

PyLabRobot 0.2.2's Opentrons tip racks (``pylabrobot.resources.opentrons``) download their
definition JSON from GitHub when first built, so offline they fail or hang. The same
definitions ship in the PyPI package ``opentrons-shared-data`` (``labware/definitions/2/
<load name>/<version>.json``); :func:`tip_rack` builds a PLR ``TipRack`` from one of them, with
the geometry PLR's own loader derives from the same fields (the tests hold the two equal), and
:func:`ot2_deck` puts labware on an ``OTDeck`` by slot. Plates, reservoirs and tubes are PLR
resources (``pylabrobot.resources:cor_96_wellplate_360uL_Fb``, …), which need no download.

Configuration (TOML)::

    [shared.deck]
    class = "labtools.drivers.pylabrobot.opentrons_labware:ot2_deck"
    [shared.deck.slots.1]
    class = "labtools.drivers.pylabrobot.opentrons_labware:tip_rack"
    name = "tips_300ul"
    definition = "opentrons_96_tiprack_300ul"
    [shared.deck.slots.2]
    class = "pylabrobot.resources:cor_96_wellplate_360uL_Fb"
    name = "plate_1"

Everything wrong raises :class:`~labtools.config.ConfigError` naming the setting.
"""

from __future__ import annotations

import difflib
import importlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labtools.config import ConfigError
from labtools.drivers.pylabrobot import plr
from labtools.drivers.pylabrobot.plr import Coordinate, Deck, Resource, Tip, TipRack, TipSpot
from labtools.errors import brief

__all__ = [
    "DEFINITIONS",
    "INSTALL_HINT",
    "SLOTS",
    "definition_names",
    "load_definition",
    "ot2_deck",
    "tip_rack",
]

#: where labware definitions live inside opentrons-shared-data's data root
DEFINITIONS = "labware/definitions/2"
INSTALL_HINT = 'pip install "opentrons-shared-data>=8.8,<9"'
#: the OT-2's deck slots; slot 12 holds the fixed trash unless the deck is built without it
SLOTS = range(1, 13)
_TRASH_SLOT = 12


def _data_root() -> Path:
    """opentrons-shared-data's data directory (``OT_SHARED_DATA_PATH`` overrides it)."""
    try:
        load = importlib.import_module("opentrons_shared_data.load")
    except ImportError as exc:
        raise ConfigError(
            f"Opentrons labware definitions need opentrons-shared-data ({exc}): {INSTALL_HINT}",
            key="definition",
        ) from exc
    return Path(load.get_shared_data_root())


def definition_names() -> list[str]:
    """The load names of every labware definition installed."""
    root = _data_root() / DEFINITIONS
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def load_definition(load_name: str, version: int = 1) -> dict[str, Any]:
    """The Opentrons labware definition ``load_name`` (e.g. ``"opentrons_96_tiprack_300ul"``)
    at ``version``, as a dict."""
    if not isinstance(load_name, str) or not load_name:
        raise ConfigError(f"a load name is text, not {brief(load_name)}", key="definition")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(f"a version is a whole number ≥ 1, not {brief(version)}", key="version")
    folder = _data_root() / DEFINITIONS / load_name
    if "/" in load_name or "\\" in load_name or not folder.is_dir():
        names = definition_names()
        close = difflib.get_close_matches(load_name, names, n=3)
        guess = f"did you mean {', '.join(close)}? " if close else ""
        raise ConfigError(
            f"no Opentrons labware definition {brief(load_name)}; {guess}"
            f"{len(names)} are installed (opentrons-shared-data, {DEFINITIONS})",
            key="definition",
        )
    path = folder / f"{version}.json"
    if not path.is_file():
        versions = sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit())
        raise ConfigError(
            f"{load_name} has no version {version}; versions: {', '.join(map(str, versions))}",
            key="version",
        )
    with path.open("rb") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def tip_rack(name: str, definition: str, *, version: int = 1, with_tips: bool = True) -> TipRack:
    """A full (``with_tips``) PLR ``TipRack`` named ``name`` from the Opentrons tip-rack
    definition ``definition`` (a load name, e.g. ``"opentrons_96_tiprack_300ul"``).

    Each spot is the square inscribed in the definition's circular well, centred on it; each
    tip has the rack's ``tipLength`` and ``tipOverlap`` (fitting depth) and the well's
    ``totalLiquidVolume``, which is what the OT-2 backend matches pipettes against."""
    data = load_definition(definition, version)
    if not data.get("parameters", {}).get("isTiprack"):
        category = data.get("metadata", {}).get("displayCategory")
        raise ConfigError(
            f"{definition} is a {category or 'labware'} definition, not a tip rack; plates and "
            "reservoirs are PLR resources, e.g. pylabrobot.resources:cor_96_wellplate_360uL_Fb",
            key="definition",
        )
    params = data["parameters"]
    display = data["metadata"]["displayName"]
    spots: dict[str, TipSpot] = {}
    for column in data["ordering"]:
        for item in column:
            well = data["wells"][item]
            if well.get("shape") != "circular":
                raise ConfigError(
                    f"{definition}: well {item} is {well.get('shape')!r}, not circular",
                    key="definition",
                )
            side = round(well["diameter"] / math.sqrt(2), 3)

            # PLR passes the tip's name only to a function whose parameter is called "name"
            def make_tip(name: str, volume: float = well["totalLiquidVolume"]) -> Tip:
                return Tip(
                    name=name,
                    total_tip_length=params["tipLength"],
                    has_filter="filter" in display.lower(),
                    maximal_volume=volume,
                    fitting_depth=params["tipOverlap"],
                )

            spot = TipSpot(name=item, size_x=side, size_y=side, make_tip=make_tip)
            spot.location = Coordinate(x=well["x"] - side / 2, y=well["y"] - side / 2, z=well["z"])
            spots[item] = spot
    dims = data["dimensions"]
    rack = TipRack(
        name=name,
        size_x=dims["xDimension"],
        size_y=dims["yDimension"],
        size_z=dims["zDimension"],
        ordered_items=spots,
        model=display,
    )
    if with_tips:
        rack.fill()
    else:
        rack.empty()
    return rack


def ot2_deck(slots: Mapping[str | int, Resource], *, with_trash: bool = True) -> Deck:
    """A PLR ``OTDeck`` with ``slots`` (slot number, 1–12 → a PLR resource) placed on it;
    ``with_trash``: the fixed trash in slot 12."""
    deck = plr.OTDeck(with_trash=with_trash)
    if not isinstance(slots, Mapping):
        raise ConfigError(f"maps slot numbers to labware, not {type(slots).__name__}", key="slots")
    for key, resource in slots.items():
        slot = _slot(key)
        if slot == _TRASH_SLOT and with_trash:
            raise ConfigError(
                "slot 12 holds the fixed trash; set with_trash = false to use it",
                key=("slots", str(key)),
            )
        if not isinstance(resource, Resource):
            raise ConfigError(
                f"needs a PyLabRobot resource (a table with a 'class'), not "
                f"{type(resource).__name__}",
                key=("slots", str(key)),
            )
        if deck.slots[slot - 1] is not None:
            raise ConfigError(f"slot {slot} is given twice", key=("slots", str(key)))
        try:
            deck.assign_child_at_slot(resource, slot)
        except ValueError as exc:  # e.g. a name already on the deck
            raise ConfigError(str(exc), key=("slots", str(key))) from exc
    return deck


def _slot(key: str | int) -> int:
    text = str(key)
    if not text.isdigit() or int(text) not in SLOTS:
        raise ConfigError(f"the OT-2's slots are 1–12, not {brief(key)}", key=("slots", text))
    return int(text)
