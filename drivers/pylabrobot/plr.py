"""Every PyLabRobot name labtools uses, each imported from one path (PLR 0.2.2's).

``from labtools.drivers.pylabrobot.plr import Plate`` instead of ``from pylabrobot.resources
import Plate``: :data:`PATHS` says where each name lives in PLR 0.2.2, and a name is imported on
first use (so a reader-only lab still does not import PLR's liquid handling). PLR's main branch
moves ``pylabrobot.liquid_handling`` and ``pylabrobot.plate_reading`` under
``pylabrobot.legacy`` and removes some of their 0.2 modules: where a 0.2 module is missing, the
name is taken from its ``pylabrobot.legacy`` twin (:func:`legacy_path`). Any other import error
(a broken PLR install, a missing dependency) is raised as it is. See docs/pylabrobot-upgrade.md.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MOVED_PACKAGES", "PATHS", "legacy_path", "load_module", "resolve"]

#: the 0.2 packages PLR's main branch moves under ``pylabrobot.legacy``
MOVED_PACKAGES = ("pylabrobot.liquid_handling", "pylabrobot.plate_reading")

_RESOURCES = "pylabrobot.resources"
_LH = "pylabrobot.liquid_handling"
_PR = "pylabrobot.plate_reading"
_MD = f"{_PR}.molecular_devices"
_STANDARD = f"{_LH}.standard"

#: name → the PLR 0.2.2 module it is imported from
PATHS: dict[str, str] = {
    # resources: the same paths on PLR main
    **dict.fromkeys(
        (
            "Container",
            "Coordinate",
            "Deck",
            "ItemizedResource",
            "PLT_CAR_L5AC_A00",
            "Plate",
            "PlateHolder",
            "Resource",
            "ResourceHolder",
            "STARLetDeck",
            "TIP_CAR_480_A00",
            "Tip",
            "TipRack",
            "TipSpot",
            "Trash",
            "Well",
            "Greiner_384_wellplate_28ul_Fb",
            "biorad_384_wellplate_50uL_Vb",
            "cor_96_wellplate_360uL_Fb",
            "hamilton_96_tiprack_1000uL",
            "hamilton_96_tiprack_10uL",
            "hamilton_96_tiprack_300uL",
            "hamilton_96_tiprack_50uL",
            "nest_12_troughplate_15000uL_Vb",
        ),
        _RESOURCES,
    ),
    "DeepWell_Greiner_1536_Well": f"{_RESOURCES}.tecan.plates",
    "OTDeck": f"{_RESOURCES}.opentrons",
    "verbose": "pylabrobot",
    "CrossSectionType": f"{_RESOURCES}.well",
    "label_to_row_index": f"{_RESOURCES}.utils",
    "split_identifier": f"{_RESOURCES}.utils",
    "TipTracker": f"{_RESOURCES}.tip_tracker",
    "does_tip_tracking": f"{_RESOURCES}.tip_tracker",
    "set_tip_tracking": f"{_RESOURCES}.tip_tracker",
    "does_volume_tracking": f"{_RESOURCES}.volume_tracker",
    "set_volume_tracking": f"{_RESOURCES}.volume_tracker",
    **dict.fromkeys(
        (
            "HasTipError",
            "NoTipError",
            "ResourceNotFoundError",
            "TooLittleLiquidError",
            "TooLittleVolumeError",
        ),
        f"{_RESOURCES}.errors",
    ),
    # liquid handling: under pylabrobot.legacy on PLR main
    "LiquidHandler": _LH,
    "LiquidHandlerBackend": _LH,
    "LiquidHandlerChatterboxBackend": f"{_LH}.backends",
    "STARChatterboxBackend": f"{_LH}.backends.hamilton.STAR_chatterbox",
    **dict.fromkeys(
        ("ChannelizedError", "ChannelsDoNotFitError", "NoChannelError"), f"{_LH}.errors"
    ),
    **dict.fromkeys(
        (
            "Drop",
            "DropTipRack",
            "MultiHeadAspirationContainer",
            "MultiHeadAspirationPlate",
            "MultiHeadDispenseContainer",
            "MultiHeadDispensePlate",
            "Pickup",
            "PickupTipRack",
            "ResourceDrop",
            "ResourceMove",
            "ResourcePickup",
            "SingleChannelAspiration",
            "SingleChannelDispense",
        ),
        _STANDARD,
    ),
    # plate reading: under pylabrobot.legacy on PLR main
    **dict.fromkeys(
        (
            "PlateReader",
            "PlateReaderChatterboxBackend",
            "CytationBackend",
            "MolecularDevicesSpectraMax384PlusBackend",
            "MolecularDevicesSpectraMaxGeminiEMBackend",
            "MolecularDevicesSpectraMaxM5Backend",
        ),
        _PR,
    ),
    "PlateReaderBackend": f"{_PR}.backend",
    "BioTekPlateReaderBackend": f"{_PR}.agilent",
    "CLARIOstarBackend": f"{_PR}.bmg_labtech",
    "NoPlateError": f"{_PR}.standard",
    **dict.fromkeys(
        ("MolecularDevicesBackend", "MolecularDevicesError", "ReadMode", "ReadType"), _MD
    ),
    "SpectrumSettings": _MD,
}


def legacy_path(module: str) -> str | None:
    """Where PLR main keeps the 0.2 module ``module`` (``pylabrobot.legacy.…``), or ``None``
    for a module main did not move."""
    for package in MOVED_PACKAGES:
        if module == package or module.startswith(package + "."):
            return "pylabrobot.legacy." + module.removeprefix("pylabrobot.")
    return None


def load_module(module: str) -> Any:
    """``module``, or its legacy twin if ``module`` itself (or a parent) does not exist."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        legacy = legacy_path(module)
        missing = exc.name or ""
        if legacy is None or not (module == missing or module.startswith(missing + ".")):
            raise
        return importlib.import_module(legacy)


def resolve(name: str) -> Any:
    """The PLR object ``name`` (a key of :data:`PATHS`), imported once and kept here."""
    try:
        module = PATHS[name]
    except KeyError:
        raise AttributeError(f"labtools imports no PyLabRobot name {name!r}") from None
    value = getattr(load_module(module), name)
    globals()[name] = value
    return value


def __getattr__(name: str) -> Any:
    return resolve(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *PATHS})
