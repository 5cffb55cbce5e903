"""Lab configuration files (TOML) that name instrument classes by import path.

```toml
seed = 0                                   # top-level values, overridable by Lab.load(path, seed=3)
clock = "@world.clock"                     # optional: an object with now() -> seconds
confirm = ["lh_aspirate", "lh_dispense"]   # optional: tools a person confirms (MCP) before they run

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

Everything is checked while the file is read, before any instrument connects: TOML syntax,
tables, references, and each table's keys against its factory's signature (introspected, so a
key the constructor does not take is named with the ones it does). Constructors check their own
domain (wells exist, volumes fit, channel counts) and raise :class:`ConfigError` with the key;
this module adds the table and the file. Every failure is one ``ConfigError`` whose message
reads ``my_lab.toml: [instruments.lh] volumes."plate_1:A1": <what is wrong>``.

``confirm`` lists the tools that must not run before a person has confirmed them (irreversible
actions on real hardware): the MCP server asks its host, and refuses the call if the host cannot
ask or the person declines. Each name must be a tool of the configured instruments. Virtual labs
list none.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.machinery
import inspect
import json
import re
import sys
import sysconfig
import tomllib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "LabConfig",
    "build_config",
    "import_object",
    "load_config",
    "packaged",
    "setting_key",
    "shadowing_modules",
]

#: the top-level keys that are not values: ``[shared.*]``, ``[instruments.*]``, ``clock`` and
#: ``confirm``
_SECTIONS = ("shared", "instruments", "clock", "confirm")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_KEY_CHARS = 80

Key = tuple[str | int, ...]


def setting_key(parts: Sequence[str | int]) -> str:
    """A setting's path as TOML writes it: ``volumes."plate_1:A1"``, ``stocks[0].well``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
        if len(text) > _KEY_CHARS:
            text = text[: _KEY_CHARS - 2] + "…" + text[-1]
        out += f".{text}" if out else text
    return out


class ConfigError(ValueError):
    """A lab configuration, or one constructor setting, that cannot be used.

    ``key`` is the setting's path inside its table (``("volumes", "plate_1:A1")``): a
    constructor raising it names its argument; :func:`load_config` adds the ``table``
    (``"instruments.lh"``) and the ``source`` file. The message is one line::

        my_lab.toml: [instruments.lh] volumes."plate_1:A1": 99999 µL exceeds the well's ...
    """

    def __init__(
        self,
        message: str,
        *,
        key: str | Sequence[str | int] = (),
        table: str | None = None,
        source: str | None = None,
    ) -> None:
        self.message = " ".join(str(message).split())
        self.key: Key = (key,) if isinstance(key, str) else tuple(key)
        self.table = table
        self.source = source
        super().__init__(self.message)

    def located(
        self,
        *,
        source: str | None = None,
        table: str | None = None,
        key: Sequence[str | int] = (),
    ) -> ConfigError:
        """Add where the error is (outermost last): the file and table where not yet known,
        and ``key`` in front of the key. Returns ``self``."""
        if self.source is None:
            self.source = source
        if self.table is None and table is not None:
            self.table = table
            self.key = (*key, *self.key)
        return self

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(f"{self.source}:")
        if self.table is not None:
            where.append(f"[{self.table}]")
        if self.key:
            where.append(f"{setting_key(self.key)}:")
        return " ".join([*where, self.message])


class LabConfig:
    """The objects a configuration file describes, once built."""

    def __init__(
        self,
        instruments: dict[str, Any],
        shared: dict[str, Any],
        clock: Any,
        confirm: tuple[str, ...] = (),
    ) -> None:
        self.instruments = instruments
        self.shared = shared
        self.clock = clock
        #: tools that need a person's confirmation before they run
        self.confirm = confirm
        #: where it was read from (:func:`load_config`): ``config`` (the file's name), ``path``,
        #: ``text`` (the TOML as read) and ``overrides``; what a journal records of its lab
        self.origin: dict[str, Any] | None = None


def import_object(path: str) -> Any:
    """``"package.module:Name"`` (or ``"package.module:Class.factory"``) → the object."""
    if not isinstance(path, str):
        raise ConfigError(f"a class is named by a 'module:name' string, not {type(path).__name__}")
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{path!r} is not 'module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}{_why()}") from exc
    value: Any = module
    try:
        for part in attr.split("."):
            value = getattr(value, part)
    except AttributeError as exc:
        spec = getattr(module, "__spec__", None)
        partly = " (it is only partly imported: an import cycle)"
        cycle = partly if getattr(spec, "_initializing", False) else ""
        raise ConfigError(f"{module_name!r} has no {attr!r}{cycle}{_why()}") from exc
    return value


def _why() -> str:
    """``"; <file> shadows ..."`` for each imported module that hides an installed one."""
    return "".join(f"; {shadow}" for shadow in shadowing_modules())


def shadowing_modules() -> list[str]:
    """The imported top-level modules loaded from a file outside the Python installation
    (a user's folder on ``sys.path``) while a module of the same name lies further down
    ``sys.path``: ``"/home/me/serial.py shadows the installed module 'serial'
    (…/site-packages/serial/__init__.py); rename it"``. A user's script named ``serial.py``
    next to their code hides pyserial this way, and the import fails far from the cause."""
    installed = {
        Path(p).resolve()
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
    found = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if "." in name or name == "__main__" or not isinstance(where, str):
            continue
        path = Path(where).resolve()
        if any(path.is_relative_to(root) for root in installed):
            continue
        folder = path.parent.parent if path.name == "__init__.py" else path.parent
        rest = [p for p in sys.path if Path(p or ".").resolve() != folder]
        try:
            other = importlib.machinery.PathFinder.find_spec(name, rest)
        except (ImportError, ValueError):
            continue
        if other is not None and other.origin not in (None, where):
            found.append(
                f"{where} shadows the installed module {name!r} ({other.origin}); rename it"
            )
    return found


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
    """Read, check and build a lab configuration; ``overrides`` replace top-level values.

    Raises :class:`ConfigError` naming the file (and the table and key) for anything wrong in
    it, before any instrument is set up (constructors do no I/O)."""
    source = Path(path) if isinstance(path, str) else path
    label = str(path)
    try:
        text = source.read_bytes().decode("utf-8")
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"TOML syntax error: {exc}", source=label) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"not UTF-8 text: {exc.reason} at byte {exc.start}", source=label
        ) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", source=label) from exc
    try:
        config = build_config(raw, **overrides)
    except ConfigError as exc:
        exc.located(source=label)
        raise
    config.origin = {"config": source.name, "path": label, "text": text, "overrides": overrides}
    return config


def build_config(raw: Mapping[str, Any], **overrides: Any) -> LabConfig:
    """Build a configuration already parsed from TOML (see :func:`load_config`)."""
    names: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _SECTIONS:
            continue
        if isinstance(value, dict):
            raise ConfigError(
                f"unknown table [{key}]; a configuration has top-level values, "
                "[shared.<name>] and [instruments.<name>] tables"
            )
        names[key] = value
    unknown = set(overrides) - set(names)
    if unknown:
        raise ConfigError(
            f"no top-level setting {sorted(unknown)} to override; "
            f"top-level settings: {', '.join(names) or 'none'}"
        )
    names.update(overrides)
    shared: dict[str, Any] = {}
    for key, table in _section(raw, "shared").items():
        _unique(key, names, f"shared.{key}")
        shared[key] = names[key] = _build(table, names, f"shared.{key}", ())
    instruments: dict[str, Any] = {}
    for key, table in _section(raw, "instruments").items():
        where = f"instruments.{key}"
        _unique(key, names, where)
        if not isinstance(table, dict) or "class" not in table:
            raise ConfigError("needs a 'class' (the import path of its driver)", table=where)
        if "name" in table:
            raise ConfigError(
                f"an instrument is named by its table ({key!r}); remove 'name'",
                key="name",
                table=where,
            )
        built = _build({**table, "name": key}, names, where, (), given=("name",))
        _check_instrument(built, where)
        instruments[key] = names[key] = built
    if not instruments:
        raise ConfigError("the configuration names no instruments")
    clock = None
    if "clock" in raw:
        reference = raw["clock"]
        if not (isinstance(reference, str) and reference.startswith("@")):
            raise ConfigError(
                f"names an object, e.g. '@world.clock', not {reference!r}", key="clock"
            )
        clock = _resolve(reference, names, None, ("clock",))
    if clock is not None and not callable(getattr(clock, "now", None)):
        raise ConfigError(f"{type(clock).__name__} is not a clock (it has no now())", key="clock")
    return LabConfig(instruments, shared, clock, _confirm(raw.get("confirm", []), instruments))


def _confirm(value: Any, instruments: Mapping[str, Any]) -> tuple[str, ...]:
    """The ``confirm`` list, each name checked against the instruments' tools."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"lists tool names, e.g. ['lh_aspirate'], not {json.dumps(value, default=str)[:80]}",
            key="confirm",
        )
    tools = [
        decl.name or f"{key}_{decl.method}"
        for key, instrument in instruments.items()
        for decl in type(instrument).tool_declarations().values()
    ]
    for i, name in enumerate(value):
        if name not in tools:
            close = difflib.get_close_matches(name, tools, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise ConfigError(
                f"no tool named {name[:80]!r}; {hint}tools: {', '.join(tools)}", key=("confirm", i)
            )
    return tuple(dict.fromkeys(value))


def _unique(key: str, names: Mapping[str, Any], where: str) -> None:
    if key in names:
        raise ConfigError(
            f"{key!r} is defined twice (as a top-level value or shared object too); "
            "'@name' must name one thing",
            table=where,
        )


def _section(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    section = raw.get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{name} must be tables, [{name}.<name>]", key=name)
    return section


def _check_instrument(built: Any, where: str) -> None:
    from labtools.instrument import Instrument

    if not isinstance(built, Instrument):
        raise ConfigError(
            f"its class builds a {type(built).__name__}, not a labtools Instrument",
            key="class",
            table=where,
        )


def _build(
    value: Any, names: dict[str, Any], table: str, key: Key, given: Sequence[str] = ()
) -> Any:
    if isinstance(value, dict):
        if "class" not in value:
            return {k: _build(v, names, table, (*key, k)) for k, v in value.items()}
        try:
            factory = import_object(value["class"])
        except ConfigError as exc:
            exc.located(table=table, key=(*key, "class"))
            raise
        settings = {k: v for k, v in value.items() if k != "class"}
        _check_settings(factory, settings, table, key, given)
        built = {k: _build(v, names, table, (*key, k)) for k, v in settings.items()}
        return _call(factory, built, table, key)
    if isinstance(value, list):
        return [_build(v, names, table, (*key, i)) for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith("@"):
        return _resolve(value, names, table, key)
    return value


def _name_of(factory: Any) -> str:
    return getattr(factory, "__qualname__", None) or type(factory).__name__


def _check_settings(
    factory: Callable[..., Any],
    settings: Mapping[str, Any],
    table: str,
    key: Key,
    given: Sequence[str],
) -> None:
    """The table's keys against the factory's signature: none it does not take, none it needs
    missing. ``given``: keys the loader supplies itself (an instrument's ``name``)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    params = list(signature.parameters.values())
    by_keyword = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    accepted = [p.name for p in by_keyword]
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        unknown = [k for k in settings if k not in accepted]
        if unknown:
            takes = [n for n in accepted if n not in given]
            close = difflib.get_close_matches(unknown[0], takes, n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            others = f" (nor {', '.join(map(repr, unknown[1:]))})" if unknown[1:] else ""
            if unknown[0] in given:
                others += ", which every instrument is built with"
            takes_text = f"it takes: {', '.join(takes)}" if takes else "it takes no settings"
            raise ConfigError(
                f"{_name_of(factory)} takes no {unknown[0]!r}{others}; {guess}{takes_text}",
                key=(*key, unknown[0]),
                table=table,
            )
    missing = [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in settings
    ]
    if missing:
        raise ConfigError(
            f"{_name_of(factory)} needs {', '.join(map(repr, missing))}", key=key, table=table
        )


def _call(factory: Callable[..., Any], built: dict[str, Any], table: str, key: Key) -> Any:
    """Build one object; what its constructor refuses becomes a ConfigError at ``table``."""
    try:
        return factory(**built)
    except ConfigError as exc:
        exc.located(table=table, key=key)
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{_name_of(factory)}: {exc}", key=key, table=table) from exc
    except (LookupError, RuntimeError, OSError, ImportError) as exc:
        # a missing key, a missing optional dependency, a download a constructor needed:
        # one line naming the table, as for any refused setting
        raise ConfigError(
            f"{_name_of(factory)}: {type(exc).__name__} {exc}", key=key, table=table
        ) from exc


def _resolve(reference: str, names: dict[str, Any], table: str | None, key: Key) -> Any:
    head, *attrs = reference.removeprefix("@").split(".")
    if head not in names:
        defined = ", ".join(f"@{n}" for n in names) or "nothing"
        raise ConfigError(
            f"{reference!r} names nothing defined before it; defined: {defined}",
            key=key,
            table=table,
        )
    value = names[head]
    for attr in attrs:
        try:
            value = getattr(value, attr)
        except AttributeError:
            raise ConfigError(
                f"{reference!r}: a {type(value).__name__} has no {attr!r}", key=key, table=table
            ) from None
    return value
