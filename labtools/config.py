"""Lab configuration files (TOML) that name instrument classes by import path.

```toml
seed = 0                                   # top-level values, overridable by Lab.load(path, seed=3)
clock = "@world.clock"                     # optional: an object with now() -> seconds

[shared.world]                             # shared objects, built in order
class = "labtools.simulators.world:World"
seed = "@seed"

[shared.reader_backend]
class = "labtools.simulators.plate_reading:PhysicsPlateReaderBackend"
world = "@world"

[shared.deck]
class = "labtools.simulators.deck:virtual_deck"
world = "@world"
reader_backend = "@reader_backend"

[instruments.reader]                       # each instrument gets name="reader"
class = "labtools.drivers.pylabrobot.plate_reader:PLRPlateReader"
reader = "@deck.reader"
```

A table with a ``class`` key is built by calling that import path (a class or factory) with the
table's other keys; ``"@name"`` refers to a top-level value, a shared object or an
instrument defined before it, ``"@name.attr"`` to one of its attributes. Nothing here imports
an instrument package until the file names it.
"""

from __future__ import annotations

import importlib
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "LabConfig", "import_object", "load_config", "packaged"]


class ConfigError(ValueError):
    """A lab configuration that cannot be built."""


class LabConfig:
    """The objects a configuration file describes, once built."""

    def __init__(self, instruments: dict[str, Any], shared: dict[str, Any], clock: Any) -> None:
        self.instruments = instruments
        self.shared = shared
        self.clock = clock


def import_object(path: str) -> Any:
    """``"package.module:Name"`` (or ``"package.module:Class.factory"``) → the object."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{path!r} is not 'module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}") from exc
    value: Any = module
    try:
        for part in attr.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise ConfigError(f"{module_name!r} has no {attr!r}") from None
    return value


def packaged(reference: str) -> Traversable:
    """A configuration file shipped inside a package: ``"package:file.toml"``."""
    package, _, name = reference.partition(":")
    if not package or not name:
        raise ConfigError(f"{reference!r} is not 'package:file'")
    try:
        return resources.files(package).joinpath(name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"cannot import {package!r}: {exc}") from exc


def load_config(path: str | Path | Traversable, **overrides: Any) -> LabConfig:
    """Read and build a lab configuration; ``overrides`` replace top-level values."""
    source = Path(path) if isinstance(path, str) else path
    with source.open("rb") as handle:
        raw = tomllib.load(handle)
    return build_config(raw, **overrides)


def build_config(raw: dict[str, Any], **overrides: Any) -> LabConfig:
    names: dict[str, Any] = {
        k: v for k, v in raw.items() if k not in ("shared", "instruments", "clock")
    }
    unknown = set(overrides) - set(names)
    if unknown:
        raise ConfigError(f"no top-level setting {sorted(unknown)} to override")
    names.update(overrides)
    shared: dict[str, Any] = {}
    for key, table in raw.get("shared", {}).items():
        shared[key] = names[key] = _build(table, names, f"shared.{key}")
    instruments: dict[str, Any] = {}
    for key, table in raw.get("instruments", {}).items():
        if not isinstance(table, dict) or "class" not in table:
            raise ConfigError(f"instruments.{key} needs a 'class'")
        instruments[key] = names[key] = _build({**table, "name": key}, names, f"instruments.{key}")
    if not instruments:
        raise ConfigError("the configuration names no instruments")
    clock = _resolve(raw["clock"], names, "clock") if "clock" in raw else None
    return LabConfig(instruments, shared, clock)


def _build(value: Any, names: dict[str, Any], where: str) -> Any:
    if isinstance(value, dict):
        built = {k: _build(v, names, f"{where}.{k}") for k, v in value.items() if k != "class"}
        if "class" not in value:
            return built
        factory = import_object(value["class"])
        try:
            return factory(**built)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    if isinstance(value, list):
        return [_build(v, names, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith("@"):
        return _resolve(value, names, where)
    return value


def _resolve(reference: str, names: dict[str, Any], where: str) -> Any:
    head, *attrs = reference.removeprefix("@").split(".")
    if head not in names:
        raise ConfigError(f"{where}: {reference!r} names nothing defined before it")
    value = names[head]
    for attr in attrs:
        value = getattr(value, attr)
    return value
