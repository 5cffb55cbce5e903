"""Shadow runs: every call that moves anything runs on a simulated twin of the lab first.

``Lab.load(config, shadow=True)`` (``labtools serve --shadow``) builds the lab and its twin: the
same configuration with each hardware backend replaced by its physics backend, the contents from
the operator's declared volumes and labels (``labtools.simulators.shadow_twin``). Before a call
of a tool that is not read-only (:func:`moves`) reaches an instrument, the twin is made to
believe what the real lab believes now — tips, volumes, plate places
(``labtools.simulators.shadow_mirror``) — and the call runs on it. A call the twin refuses
(overdraw, overfill, no tip, a plate in the reader, a taken site, anything its physics cannot
do) never reaches the instrument: it is refused with the twin's error, marked ``"shadow": true``
and in its message (:data:`SHADOW_MARK`), so the text a model reads says so too.

Instruments the twin cannot follow (no simulated counterpart, e.g. an OBP spectrometer on a
serial port) are not shadowed: their calls go straight through. The core names the simulator
modules by import path only, as configurations name their classes.
"""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Iterable, Mapping
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from labtools.config import ConfigError, LabConfig, import_object
from labtools.errors import ToolError
from labtools.instrument import Instrument
from labtools.result import ToolResult
from labtools.spec import ToolSpec

__all__ = [
    "SHADOW_MARK",
    "Mirror",
    "Shadow",
    "ShadowRefusal",
    "moves",
    "shadow_error",
    "twin_config",
]

#: builds a twin's configuration from a parsed lab file (``twin_config(raw, **overrides)``)
TWIN_CONFIG = "labtools.simulators.shadow_twin:twin_config"
#: pairs real instruments with their twins' mirrors (``mirrors(real, twin)``)
MIRRORS = "labtools.simulators.shadow_mirror:mirrors"


def moves(spec: ToolSpec) -> bool:
    """Whether calls of ``spec`` move anything, so a shadow run checks them first: every tool
    not declared read-only (liquid, tips, plates, settings, instrument time)."""
    return not spec.hints.read_only


class Mirror(Protocol):
    def sync(self) -> None:
        """Make the twin believe what the real instrument believes now."""
        ...


class TwinLab(Protocol):
    """What a shadow needs of its twin (a :class:`~labtools.lab.Lab`)."""

    instruments: dict[str, Instrument]

    async def aconnect(self, names: Iterable[str] | None = None) -> None: ...

    async def acall(self, name: str, arguments: object) -> ToolResult: ...

    def close(self) -> None: ...


TwinT = TypeVar("TwinT", bound=TwinLab)


#: what a shadow refusal's message starts with, so the text a model reads says where it came from
SHADOW_MARK = "refused by the shadow twin (the instrument was not called): "


class ShadowRefusal:
    """Marks a :class:`ToolError` as the shadow run's: a call the twin refused, so the
    instrument was not called. Its error is the twin's (code, field, hint; the message after
    :data:`SHADOW_MARK`) with ``"shadow": true``. :func:`shadow_error` builds one, of the twin's
    error class."""

    def to_dict(self) -> dict[str, Any]:
        return {**ToolError.to_dict(cast(ToolError, self)), "shadow": True}


_REFUSALS: dict[str, type[ToolError]] = {}


def shadow_error(error: Mapping[str, Any]) -> ToolError:
    """The twin's refusal ``error`` (a result's error object) as the :class:`ToolError` of its
    code, marked :class:`ShadowRefusal`."""
    code = str(error["code"])
    kind = _REFUSALS.get(code)
    if kind is None:
        base = type(ToolError.of(code, ""))
        kind = _REFUSALS[code] = type(f"Shadow{base.__name__}", (ShadowRefusal, base), {})
    return kind(
        SHADOW_MARK + str(error["message"]), field=error.get("field"), hint=error.get("hint")
    )


def read_raw(path: str | Path | Traversable) -> dict[str, Any]:
    """A lab file's TOML, parsed (a :class:`ConfigError` naming the file if it cannot be)."""
    source = Path(path) if isinstance(path, str) else path
    try:
        with source.open("rb") as handle:
            return tomllib.load(handle)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read it: {exc}", source=str(path)) from exc


def twin_config(path: str | Path | Traversable, **overrides: Any) -> LabConfig:
    """The twin of the lab file at ``path``, built (see ``labtools.simulators.shadow_twin``)."""
    build = import_object(TWIN_CONFIG)
    try:
        config: LabConfig = build(read_raw(path), **overrides)
    except ConfigError as exc:
        exc.located(source=f"{path} (its shadow twin)")
        raise
    return config


class Shadow(Generic[TwinT]):
    """A lab's twin, and the mirrors that make it follow the lab's belief.

    ``refusal(spec, arguments)`` runs one call on the twin from the real lab's current belief
    and returns the twin's refusal, or ``None`` if the twin did it (or does not shadow that
    instrument). Calls are checked one at a time.
    """

    def __init__(self, twin: TwinT, mirrors: Mapping[str, Mirror]) -> None:
        self.twin = twin
        self.mirrors = dict(mirrors)
        self._distinct = list({id(m): m for m in self.mirrors.values()}.values())
        self._lock: asyncio.Lock | None = None
        self._connected = False

    @classmethod
    def pairing(cls, real: Mapping[str, Instrument], twin: TwinT) -> Shadow[TwinT]:
        """The shadow of instruments ``real`` by ``twin`` (its instruments of the same names)."""
        pair = import_object(MIRRORS)
        return cls(twin, pair(dict(real), twin.instruments))

    @property
    def shadowed(self) -> list[str]:
        """The instruments whose moving calls run on the twin first."""
        return list(self.mirrors)

    def sync(self) -> None:
        """Make the twin believe what the real lab believes now."""
        for mirror in self._distinct:
            mirror.sync()

    async def refusal(self, spec: ToolSpec, arguments: object) -> ToolError | None:
        if spec.instrument not in self.mirrors:
            return None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self._connected:
                await self.twin.aconnect()
                self._connected = True
            self.sync()
            result = await self.twin.acall(spec.name, arguments)
        if result.ok or result.error is None:
            return None
        return shadow_error(result.error)

    def close(self) -> None:
        self.twin.close()
