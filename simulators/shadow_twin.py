"""A lab's twin: the same configuration with the physics backends in place of the hardware.

:func:`twin_config` rewrites a parsed lab file and builds it. The deck and labware tables stay
as they are (the twin has its own copy of the same deck); every PyLabRobot liquid-handler
backend becomes :class:`~labtools.simulators.liquid_handling.PhysicsLiquidHandlerBackend` and
every plate-reader backend :class:`~labtools.simulators.plate_reading.PhysicsPlateReaderBackend`
(backends that are physics already stay), all on one :class:`~labtools.simulators.world.World`
(the file's own, or a new one with its clock as the lab's). The world is filled from what the
operator declared: each container the liquid handlers believe non-empty (``volumes``) holds that
volume, labelled as configured; a label naming a species and a concentration
(``"tartrazine 500 µM ±1 %"``) is that solution, any other label is water.

The twin's physics is the file's ``twin_profile`` (a top-level value: a profile TOML file, as
``labtools calibrate`` writes, relative to the working directory), else the published profile.

Only instruments that can be simulated are kept: the PyLabRobot liquid handlers and plate
readers, and the simulators' own instruments. Anything else (an OBP spectrometer on a serial
port) is left out of the twin, with the shared tables only it used, so the twin never opens a
real connection.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Iterator, Mapping
from typing import Any

from labtools.config import ConfigError, LabConfig, build_config, import_object
from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.naming import container_key
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader
from labtools.drivers.pylabrobot.plr import Container, LiquidHandlerBackend, PlateReaderBackend
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.plate_reading import PhysicsPlateReaderBackend
from labtools.simulators.world import Mixture, World

__all__ = ["solution_of", "twin_config"]

WORLD = "labtools.simulators.world:World"
PHYSICS_LH = "labtools.simulators.liquid_handling:PhysicsLiquidHandlerBackend"
PHYSICS_READER = "labtools.simulators.plate_reading:PhysicsPlateReaderBackend"
#: the top-level value naming the twin's profile (a profile file, or "published")
TWIN_PROFILE = "twin_profile"
#: the physics liquid handler's channels when the configuration does not say
DEFAULT_CHANNELS = 8

_LABEL = re.compile(
    r"^\s*(?P<name>[A-Za-z][\w \-]*?)\s+(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[nuµμm]?M)\b"
)
_MOLAR = {"M": 1.0, "mM": 1e-3, "uM": 1e-6, "µM": 1e-6, "μM": 1e-6, "nM": 1e-9}


def twin_config(raw: Mapping[str, Any], **overrides: Any) -> LabConfig:
    """The twin of the parsed lab file ``raw``, built (``overrides`` as for the file)."""
    out = copy.deepcopy(dict(raw))
    instruments = out.get("instruments", {})
    shared = out.get("shared", {})
    if not isinstance(instruments, dict) or not isinstance(shared, dict):
        raise ConfigError("[shared.*] and [instruments.*] must be tables")
    out["instruments"] = {k: t for k, t in instruments.items() if _simulable(t)}
    if not out["instruments"]:
        raise ConfigError("no instrument of this lab can be simulated for a shadow run")
    world = _world_table(shared)
    if world is None:
        world = _free_name("twin_world", out)
        seed = "@seed" if "seed" in out else 0
        shared = {world: {"class": WORLD, "seed": seed}, **shared}
        out.setdefault("clock", f"@{world}.clock")
    if TWIN_PROFILE in out:
        shared[world] = {**shared[world], "profile": f"@{TWIN_PROFILE}"}
    out["shared"] = shared
    out["confirm"] = []  # a twin asks nobody: nothing it does is irreversible
    channels = {f"@{k}": t.get("channels") for k, t in out["instruments"].items()}
    for key, table in shared.items():
        shared[key] = _physics(table, world, _channels_for(key, out["instruments"], channels))
    for key, table in out["instruments"].items():
        out["instruments"][key] = _physics(table, world, table.get("channels"))
    _prune(out, keep=world)
    config = build_config(out, **{k: v for k, v in overrides.items() if k in out})
    _fill_world(config.shared[world], config.instruments.values())
    return config


def solution_of(label: str, world: World) -> dict[str, float]:
    """The molar composition a label states (``"tartrazine 500 µM ±1 %"`` → 5e-4 M
    tartrazine) if it names a species of ``world``'s library; else ``{}`` (water)."""
    found = _LABEL.match(label)
    if found is None:
        return {}
    key = "_".join(found["name"].lower().replace("-", " ").split())
    if key not in world.species:
        return {}
    return {key: float(found["value"]) * _MOLAR[found["unit"].replace("u", "µ")]}


# -- rewriting -------------------------------------------------------------------------------------
def _factory(table: Any) -> Any:
    if not isinstance(table, dict) or not isinstance(table.get("class"), str):
        return None
    try:
        return import_object(table["class"])
    except ConfigError:
        return None  # build_config names it, if the table is kept


def _owner(factory: Any) -> Any:
    """A class, or the class of a classmethod factory (``PLRPlateReader.on_deck``)."""
    return factory if inspect.isclass(factory) else getattr(factory, "__self__", None)


def _simulable(table: Any) -> bool:
    factory = _factory(table)
    owner = _owner(factory)
    if inspect.isclass(owner) and issubclass(owner, PLRLiquidHandler | PLRPlateReader):
        return True
    return str(getattr(factory, "__module__", "")).startswith("labtools.simulators.")


def _world_table(shared: Mapping[str, Any]) -> str | None:
    for key, table in shared.items():
        if _factory(table) is World:
            return key
    return None


def _free_name(base: str, raw: Mapping[str, Any]) -> str:
    taken = set(raw) | set(raw.get("shared", {})) | set(raw.get("instruments", {}))
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _channels_for(key: str, instruments: Mapping[str, Any], channels: Mapping[str, Any]) -> Any:
    """The ``channels`` of the first instrument whose ``backend`` is ``@key``."""
    for name, table in instruments.items():
        if table.get("backend") == f"@{key}":
            return channels.get(f"@{name}")
    return None


def _physics(value: Any, world: str, channels: Any) -> Any:
    """``value`` with every hardware backend table in it replaced by its physics backend."""
    if isinstance(value, list):
        return [_physics(v, world, channels) for v in value]
    if not isinstance(value, dict):
        return value
    owner = _owner(_factory(value))
    if inspect.isclass(owner):
        if issubclass(owner, LiquidHandlerBackend) and not issubclass(
            owner, PhysicsLiquidHandlerBackend
        ):
            given = [c for c in (channels, value.get("num_channels")) if _count(c)]
            count = given[0] if given else DEFAULT_CHANNELS
            return {"class": PHYSICS_LH, "world": f"@{world}", "num_channels": count}
        if issubclass(owner, PlateReaderBackend) and not issubclass(
            owner, PhysicsPlateReaderBackend
        ):
            return {"class": PHYSICS_READER, "world": f"@{world}"}
    return {k: _physics(v, world, channels) for k, v in value.items()}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _references(v)
    elif isinstance(value, list):
        for v in value:
            yield from _references(v)
    elif isinstance(value, str) and value.startswith("@"):
        yield value[1:].split(".")[0]


def _prune(raw: dict[str, Any], keep: str) -> None:
    """Drop the shared tables nothing kept refers to (those of instruments left out)."""
    shared: dict[str, Any] = raw["shared"]
    wanted = {keep, *_references(raw["instruments"]), *_references(raw.get("clock"))}
    for key in reversed(list(shared)):  # a table may refer only to those before it
        if key in wanted:
            wanted.update(_references(shared[key]))
    raw["shared"] = {k: t for k, t in shared.items() if k in wanted}


# -- contents --------------------------------------------------------------------------------------
def _fill_world(world: World, instruments: Any) -> None:
    """Put what each liquid handler believes (the declared volumes) into the world, where the
    world has nothing yet."""
    for instrument in instruments:
        if not isinstance(instrument, PLRLiquidHandler):
            continue
        for resource in instrument.plr.deck.get_all_resources():
            if not isinstance(resource, Container) or resource.tracker.volume <= 0:
                continue
            key = container_key(resource)
            if world.peek(key).volume_ul > 0:
                continue
            label = instrument.labels.get(key)
            molar = solution_of(label, world) if label else {}
            world.fill(key, Mixture.solution(resource.tracker.volume, molar), label)
