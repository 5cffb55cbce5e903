"""The lab: named instruments, their tool catalogue, validated dispatch and the journal."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from labtools.collector import paused
from labtools.config import ConfigError, load_config, packaged
from labtools.eager import LoopThread, run_eagerly
from labtools.errors import (
    InstrumentError,
    NotSupported,
    ToolError,
    UnknownResource,
    UnknownTool,
)
from labtools.export import render
from labtools.instrument import Instrument, InstrumentProxy
from labtools.jobs import Job, start_job, stop_jobs
from labtools.journal import Journal
from labtools.progress import ProgressCallback, listening
from labtools.result import ToolResult
from labtools.shadow import Shadow, moves, twin_config
from labtools.spec import ToolSpec, build_spec

__all__ = ["VIRTUAL_LAB", "Clock", "Lab"]

#: the built-in virtual lab's configuration (read as data: the core imports no simulator)
VIRTUAL_LAB = "labtools.simulators:virtual_lab.toml"

log = logging.getLogger(__name__)

#: said in the hint of a fault on an instrument: it may have done part of the call
STALE_BELIEF = (
    "the instrument may have done part of the call before it failed, so what the lab believes "
    "may be stale: read its state (labtools://state, lab.state()) and check the instrument "
    "itself before you retry"
)
T = TypeVar("T")


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the lab started (virtual time in a simulator)."""
        ...


class Lab:
    """Named instruments behind one tool catalogue.

    ``lab.call(name, arguments)`` validates raw JSON arguments against the tool's exported schema,
    converts units, checks limits and preconditions, acts, journals the call and returns a
    :class:`ToolResult`; it never raises for bad input, and a rejected call changes no state.
    ``lab.<instrument>.<tool>(...)`` is the Python form of the same call: it also accepts pint
    quantities and strings such as ``"50 uL"``, returns the data and raises :class:`ToolError`.

    A lab loaded with ``shadow=True`` runs every call that moves anything on a simulated twin
    first (:mod:`labtools.shadow`); ``lab.shadow`` is that :class:`~labtools.shadow.Shadow`.
    """

    #: the shadow run's twin, if the lab was loaded with ``shadow=True``
    shadow: Shadow[Lab] | None = None
    #: the lab file it was loaded from (:attr:`labtools.config.LabConfig.origin`), if any
    origin: dict[str, Any] | None = None
    _described: Journal | None = None  # the journal whose first call named the lab file
    #: whether a fault on an instrument says the belief may be stale (not on a twin, whose
    #: belief is mirrored afresh before each call and whose refusal never reached hardware)
    _says_stale = True
    #: callbacks given each call's journal event (:meth:`watch`)
    _watchers: tuple[Callable[[dict[str, Any]], None], ...] = ()

    def __init__(
        self,
        instruments: Mapping[str, Instrument] | Iterable[Instrument],
        *,
        journal: Journal | str | Path | None = None,
        clock: Clock | None = None,
        shared: Mapping[str, Any] | None = None,
        confirm: Iterable[str] = (),
    ) -> None:
        self.instruments: dict[str, Instrument] = {}
        self._specs: dict[str, ToolSpec] = {}
        for key, inst in (
            instruments.items()
            if isinstance(instruments, Mapping)
            else ((i.name, i) for i in instruments)
        ):
            if inst.name != key:
                raise ValueError(f"instrument {inst.name!r} registered as {key!r}")
            self.add_instrument(inst)
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        self.clock = clock
        self.shared: dict[str, Any] = dict(shared or {})
        self._ready: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: LoopThread | None = None
        #: held by a synchronous call on the lab's own loop (reentrant: a tool may call the
        #: lab again from inside, which then runs on the helper thread)
        self._calling = threading.RLock()
        self._confirm = frozenset(confirm)
        if unknown := sorted(self._confirm - set(self._specs)):
            raise ValueError(f"confirm names no tool {unknown[0]!r}")

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | Path | Traversable,
        *,
        journal: Journal | str | Path | None = None,
        shadow: bool = False,
        **overrides: Any,
    ) -> Lab:
        """A lab from a TOML configuration file (a path, or a file inside a package from
        :func:`labtools.config.packaged`); ``overrides`` replace its top-level values.

        ``shadow``: also build the lab's simulated twin, and run every call that moves anything
        on it first; a call the twin refuses never reaches the instrument
        (:mod:`labtools.shadow`)."""
        with paused():  # the instruments, the deck, the world: a burst of objects
            config = load_config(path, **overrides)
        try:
            lab = cls(
                config.instruments,
                journal=journal,
                clock=config.clock,
                shared=config.shared,
                confirm=config.confirm,
            )
            lab.origin = config.origin
            if shadow:
                lab.shadow = Shadow.pairing(lab.instruments, cls._twin(path, lab, overrides))
            return lab
        except ConfigError:
            raise
        except ValueError as exc:  # instruments or tools the lab cannot hold side by side
            raise ConfigError(str(exc), source=str(path)) from exc

    @classmethod
    def _twin(cls, path: str | Path | Traversable, real: Lab, overrides: Mapping[str, Any]) -> Lab:
        """The twin of the lab file at ``path``, judging by ``real``'s limits."""
        config = twin_config(path, **overrides)
        for name, inst in config.instruments.items():
            mine = real.instruments.get(name)
            if mine is not None and type(mine) is type(inst):
                inst.limits = mine.limits
        twin = cls(
            config.instruments, journal=Journal(keep=0), clock=config.clock, shared=config.shared
        )
        twin._says_stale = False
        return twin

    @classmethod
    def virtual(
        cls,
        seed: int = 0,
        *,
        profile: Any = None,
        journal: Journal | str | Path | None = None,
        shadow: bool = False,
    ) -> Lab:
        """The built-in virtual lab (liquid handler ``lh``, plate reader ``reader``,
        spectrometer ``spec``), its hidden truth drawn from ``seed``.

        ``profile``: the instruments' physical parameters — a profile TOML file, a
        ``labtools.simulators.profile.Profile`` or a name; the published figures by default
        (``labtools profile show`` prints them)."""
        given = (
            {}
            if profile is None
            else {"profile": str(profile) if isinstance(profile, Path) else profile}
        )
        lab = cls.load(packaged(VIRTUAL_LAB), journal=journal, shadow=shadow, seed=seed, **given)
        lab.connect()  # simulators connect in microseconds; the state is then stable
        return lab

    def add_instrument(self, instrument: Instrument) -> None:
        """Add an instrument and its tools (also to a lab already built)."""
        if hasattr(type(self), instrument.name):
            raise ValueError(
                f"an instrument may not be named {instrument.name!r} (a Lab attribute)"
            )
        if instrument.name in self.instruments:
            raise ValueError(f"two instruments named {instrument.name!r}")
        specs = _specs_of(instrument)
        clash = [s.name for s in specs if s.name in self._specs]
        if clash:
            raise ValueError(f"two tools named {clash[0]!r}")
        self._specs.update((s.name, s) for s in specs)
        self.instruments[instrument.name] = instrument

    # -- catalogue -----------------------------------------------------------------------------
    def offer(self, names: Iterable[str]) -> None:
        """Keep only ``names`` of the instruments' tools in the catalogue: the others are
        unknown tools from now on (an instrument added later brings all of its own). A name no
        instrument has is a ``ValueError``."""
        keep = set(names)
        if missing := sorted(keep - set(self._specs)):
            raise ValueError(f"no instrument of this lab has the tools {', '.join(missing)}")
        self._specs = {name: spec for name, spec in self._specs.items() if name in keep}

    def tool_names(self) -> list[str]:
        return list(self._specs)

    def tool_spec(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise _unknown_tool(name, self._specs) from None

    def tool_specs(self) -> list[ToolSpec]:
        return list(self._specs.values())

    def needs_confirmation(self, name: str) -> bool:
        """Whether ``name`` must be confirmed by a person before it runs (the configuration's
        ``confirm`` list: irreversible actions on real hardware). The MCP server asks its host;
        Python callers are trusted to have decided."""
        return name in self._confirm

    def tools(
        self, format: str = "json-schema", *, read_only: bool = False
    ) -> list[dict[str, Any]]:
        """The tool catalogue in ``format`` (see :data:`labtools.export.FORMATS`)."""
        specs = [s for s in self._specs.values() if s.hints.read_only or not read_only]
        return render(specs, format, lambda name: self.instruments[name].simulated)

    # -- connecting ----------------------------------------------------------------------------
    async def aconnect(self, names: Iterable[str] | None = None) -> None:
        """Set up (connect) instruments now rather than at their first call; an instrument
        whose link has dropped (``link_lost``) is set up again."""
        for name in names if names is not None else self.instruments:
            async with self._lock(name):
                if name not in self._ready or self.instruments[name].link_lost:
                    await self.instruments[name].setup()
                    self._ready.add(name)

    def connect(self, names: Iterable[str] | None = None) -> None:
        """Synchronous :meth:`aconnect`."""
        self.run(self.aconnect(names))

    # -- calling -------------------------------------------------------------------------------
    async def preflight(self, name: str, arguments: object) -> ToolError | None:
        """The refusal a call would get now before reaching an instrument — unknown tool, bad
        arguments or, in a shadow run, the twin's — or ``None``. Calls no instrument (the
        twin, under the instrument's lock, as :meth:`acall` does) and records nothing."""
        spec = self._specs.get(name) if isinstance(name, str) else None
        try:
            if spec is None:
                raise _unknown_tool(name, self._specs)
            spec.bind(arguments)
            async with self._lock(spec.instrument):
                return await self._twin_refusal(spec, arguments)
        except ToolError as error:
            return error
        except Exception as exc:  # the twin failed: acall reports it when the call is made
            return InstrumentError(f"{type(exc).__name__}: {exc}"[:300])

    async def _twin_refusal(self, spec: ToolSpec, arguments: object) -> ToolError | None:
        if self.shadow is None or not moves(spec):
            return None
        return await self.shadow.refusal(spec, arguments)

    async def acall(
        self, name: str, arguments: object, *, progress: ProgressCallback | None = None
    ) -> ToolResult:
        """Call a tool with raw JSON arguments. Never raises for bad input.

        ``progress`` receives ``(done, total, message)`` reports from long operations.
        """
        spec = self._specs.get(name) if isinstance(name, str) else None
        return await self._acall(spec, name, arguments, progress)

    async def _acall(
        self,
        spec: ToolSpec | None,
        name: object,
        arguments: object,
        progress: ProgressCallback | None,
    ) -> ToolResult:
        """:meth:`acall` of the tool ``spec`` (``None``: no tool of that name)."""
        started = time.perf_counter()
        virtual_start = self.clock.now() if self.clock is not None else None
        reached = False  # whether the instrument was set up or called
        try:
            if spec is None:
                raise _unknown_tool(name, self._specs)
            kwargs = spec.bind(arguments)
            instrument = self.instruments[spec.instrument]
            lock = self._lock(spec.instrument)
            await lock.acquire()  # as ``async with lock``, one coroutine fewer
            try:
                if self.shadow is not None:
                    refused = await self._twin_refusal(spec, arguments)
                    if refused is not None:  # the instrument is not called, nor set up
                        raise refused
                reached = True
                if spec.instrument not in self._ready:
                    await instrument.setup()
                    self._ready.add(spec.instrument)
                method = getattr(instrument, spec.method)
                if progress is None:
                    data = await method(**kwargs)
                else:
                    with listening(progress):
                        data = await method(**kwargs)
            finally:
                lock.release()
            result = ToolResult.success(data)
        except ToolError as error:
            if reached and error.code == "instrument_error" and self._says_stale:
                hint = error.hint or ""  # a fault on the instrument: it may have moved
                if STALE_BELIEF not in hint:
                    error.hint = f"{hint}; {STALE_BELIEF}" if hint else STALE_BELIEF
            result = ToolResult.failure(error)
        except Exception as exc:  # a driver fault: report it, keep the lab answering
            log.exception("tool %s failed", name)
            fault = InstrumentError(
                f"{type(exc).__name__}: {exc}"[:300],
                hint=f"the driver failed unexpectedly (the lab's log has the details); "
                f"{STALE_BELIEF}",
            )
            result = ToolResult.failure(fault)
        self._record(name, arguments, result, started, virtual_start)
        return result

    def call(self, name: str, arguments: object) -> ToolResult:
        """Synchronous :meth:`acall`. Inside a running event loop, it runs on a helper thread.

        A simulated instrument's call is stepped without starting the lab's event loop, which
        takes over only if the call suspends (:mod:`labtools.eager`); hardware calls always
        run on the loop. Calls from several threads run one at a time."""
        spec = self._specs.get(name) if isinstance(name, str) else None
        coroutine = self._acall(spec, name, arguments, None)
        if self._runner is None and asyncio._get_running_loop() is None:
            with self._calling:  # one at a time, from whichever threads
                if spec is None or self.instruments[spec.instrument].simulated:
                    return run_eagerly(coroutine, self._own_loop())
                return self._own_loop().run_until_complete(coroutine)
        return self.run(coroutine)

    def start(self, name: str, arguments: object) -> Job:
        """Start a tool call in the background and return its :class:`~labtools.jobs.Job`
        (``status()``, ``result(timeout)``, ``cancel()``). Validated as :meth:`call` is: a
        refusal is a job that has already failed, and nothing runs. Jobs run on the lab's loop
        thread, which then carries the lab's other synchronous calls too."""
        if self._runner is None:
            self._runner = LoopThread()
        return start_job(self, name, arguments, self._runner.loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the lab's own event loop and return its result."""
        if self._runner is not None:  # jobs may be running there: one loop for every call
            return self._runner.run(coroutine)
        if asyncio._get_running_loop() is None:
            return self._own_loop().run_until_complete(coroutine)
        self._runner = LoopThread()
        return self._runner.run(coroutine)

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        """The lab's event loop for synchronous calls on the caller's thread."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    def _lock(self, instrument: str) -> asyncio.Lock:
        lock = self._locks.get(instrument)
        if lock is None:
            lock = self._locks[instrument] = asyncio.Lock()
        return lock

    def _record(
        self,
        name: object,
        arguments: object,
        result: ToolResult,
        started: float,
        virtual_start: float | None,
    ) -> None:
        journal = self.journal
        event: dict[str, Any] = {
            "seq": journal.count + 1,
            "time": time.time(),
            "tool": name,
            "arguments": arguments,
            "ok": result.ok,
        }
        if result.ok:
            event["data"] = result.data
        else:
            event["error"] = result.error
        if virtual_start is not None and self.clock is not None:
            event["virtual_time_s"] = virtual_start
            event["virtual_s"] = self.clock.now() - virtual_start
        event["wall_s"] = time.perf_counter() - started
        if self.origin is not None or journal.path is not None:
            self._describe(event, result)
        journal.record(event)
        for watcher in self._watchers:
            try:
                watcher(event)
            except Exception:  # a watcher's fault never fails the call
                log.exception("a watcher of %s failed", name)

    def watch(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Have ``callback(event)`` called with each call's journal event once it is recorded,
        on the thread that made the call (keep it quick; its exceptions are logged, never
        raised), until the function returned is called. What a live view follows."""
        self._watchers = (*self._watchers, callback)

        def unwatch() -> None:
            self._watchers = tuple(w for w in self._watchers if w is not callback)

        return unwatch

    def _describe(self, event: dict[str, Any], result: ToolResult) -> None:
        """What an export needs besides the call (:mod:`labtools.records`): the first call of
        each journal names the lab file (``"lab"``: :attr:`origin`), and in a journal written
        to a file a result's data handle comes with the data behind it (``"payload"``)."""
        if self.origin is not None and self._described is not self.journal:
            event["lab"] = self.origin
            self._described = self.journal
        handle = result.data.get("data") if isinstance(result.data, dict) else None
        if self.journal.path is not None and isinstance(handle, str):
            with contextlib.suppress(ToolError):
                event["payload"] = self.data(handle)

    # -- state and data ------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What the lab believes, JSON-able: each instrument's state (never hidden truth)."""
        out: dict[str, Any] = {name: inst.state() for name, inst in self.instruments.items()}
        if self.clock is not None:
            out["clock_s"] = self.clock.now()
        return out

    def data(self, handle: str) -> dict[str, Any]:
        """The full data behind a handle such as ``"spec/3"`` returned in a tool result."""
        instrument = self.instruments.get(handle.partition("/")[0])
        if instrument is None:
            raise UnknownResource(f"no data {handle!r}", hint="handles look like 'spec/3'")
        return instrument.data.get(handle)

    def __getattr__(self, name: str) -> InstrumentProxy:
        instruments = self.__dict__.get("instruments", {})
        if name in instruments:
            return InstrumentProxy(self, instruments[name])
        raise AttributeError(name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.instruments]

    def _repr_html_(self) -> str:
        """The lab in a notebook: its decks drawn, wells in their colours, its state."""
        from labtools.view.notebook import lab_html

        return lab_html(self)

    # -- episodes ------------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """A snapshot of every instrument's state, for :meth:`rewind`.

        Simulated labs only: a lab with any real instrument or dry run of one raises
        :class:`~labtools.errors.NotSupported`, since its world cannot be put back."""
        self._rewindable("checkpoint")
        return {name: inst.snapshot() for name, inst in self.instruments.items()}

    def rewind(
        self,
        checkpoint: dict[str, Any],
        *,
        seed: int | None = None,
        journal: Journal | str | Path | None = None,
    ) -> None:
        """Put the lab back as it was at ``checkpoint``, in milliseconds rather than a rebuild.

        Shared objects with a ``reset(seed)`` method (the simulated world) are reset to ``seed``
        (its hidden truth drawn afresh; ``None`` keeps their seed); instruments that were set up
        are set up again (re-reading what they read from the device); the journal starts anew.
        The result must behave exactly like a newly built lab with that seed.

        Simulated labs only: with any real instrument or dry run (a PyLabRobot chatterbox) it
        raises :class:`~labtools.errors.NotSupported` and changes nothing, since only the belief
        could be put back while the instrument keeps what it did (a tip it discarded).
        """
        self.run(self.arewind(checkpoint, seed=seed, journal=journal))

    async def arewind(
        self,
        checkpoint: dict[str, Any],
        *,
        seed: int | None = None,
        journal: Journal | str | Path | None = None,
    ) -> None:
        """:meth:`rewind` on the caller's event loop (an environment server's), the
        instruments set up again there rather than on a helper thread."""
        self._rewindable("rewind")
        for name, inst in self.instruments.items():
            inst.restore(checkpoint[name])
        for shared in self.shared.values():
            reset = getattr(shared, "reset", None)
            if callable(reset):
                reset(seed)
        if seed is not None and self.origin is not None:  # the lab file as it now stands
            self.origin = {**self.origin, "overrides": {**self.origin["overrides"], "seed": seed}}
        connected = [name for name in self.instruments if name in self._ready]
        self._ready.clear()
        self.journal.close()
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        if connected:
            await self.aconnect(connected)

    def _rewindable(self, action: str) -> None:
        """Refuse ``action`` unless every instrument is simulated (not hardware, no dry run)."""
        real = [n for n, i in self.instruments.items() if not i.simulated or i.dry_run]
        if real:
            raise NotSupported(
                f"cannot {action} a lab with real instruments or dry runs of them: "
                f"{', '.join(real)}",
                hint="only simulated labs rewind; to start again on hardware, put the deck "
                "back by hand and load the lab file anew",
            )

    # -- lifetime ------------------------------------------------------------------------------
    async def aclose(self) -> None:
        for name in list(self._ready):
            await self.instruments[name].stop()
        self._ready.clear()

    def close(self) -> None:
        """Stop the instruments that were set up and close the journal."""
        self.run(stop_jobs(self))
        self.run(self.aclose())
        self.journal.close()
        if self.shadow is not None:
            self.shadow.close()
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SPEC_CACHE: dict[tuple[Any, ...], list[ToolSpec]] = {}


def _specs_of(instrument: Instrument) -> list[ToolSpec]:
    """The instrument's tool specs; built once per (class, name, limits)."""
    try:
        key: tuple[Any, ...] | None = (type(instrument), instrument.name, instrument.limits)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _SPEC_CACHE:
        return _SPEC_CACHE[key]
    specs = [build_spec(instrument, decl) for decl in type(instrument).tool_declarations().values()]
    if key is not None:
        _SPEC_CACHE[key] = specs
    return specs


def _unknown_tool(name: object, specs: Mapping[str, ToolSpec]) -> ToolError:
    close = difflib.get_close_matches(name, list(specs), n=3) if isinstance(name, str) else []
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return UnknownTool(
        f"no tool named {str(name)[:80]!r}", field=None, hint=f"{hint}tools: {', '.join(specs)}"
    )
