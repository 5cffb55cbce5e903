"""Replay in the view: a lab's scene after each call of a journal, kept per step.

:func:`lab_of` builds a fresh simulated lab from a journal's own lab record (a lab loaded from
a file names it on a journal's first call: its TOML and overrides); :func:`replay_lab` makes
the journal's calls on a lab in order and reads the scene (:class:`Scene`) before the first
call and after each one. Step ``k`` is the state after the first ``k`` calls; every step is
kept as the JSON text sent to the page, so stepping back and forth or scrubbing shows exactly
what was read at that step, and costs a look-up. A call whose result on the replay differs
from the one recorded is listed in :attr:`Replay.diverged`. Reading the files (a journal, a
run bundle, an episode, an eval export) is :mod:`labtools.view.sources`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labtools.errors import NotSupported
from labtools.journal import Journal
from labtools.view.scene import Calls, Scene

__all__ = ["Replay", "ReplayError", "lab_of", "replay_lab"]


class ReplayError(ValueError):
    """A file that cannot be replayed: missing, not a journal, or its lab cannot be built."""


@dataclass
class Replay:
    """An episode's steps: ``states[k]`` is the scene after the first ``k`` calls (JSON
    text), drawn on ``layouts[layout_of[k]]``; ``calls`` the log's entries, one per call."""

    source: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    layouts: list[str] = field(default_factory=list)
    layout_of: list[int] = field(default_factory=list)
    #: the steps whose call's result on the replay differs from the journal's
    diverged: list[int] = field(default_factory=list)

    @property
    def n(self) -> int:
        """The number of calls (steps run from 0 to ``n``)."""
        return len(self.states) - 1

    def state(self, k: int) -> dict[str, Any]:
        """The scene at step ``k`` (``0 <= k <= n``)."""
        return dict(json.loads(self.states[k]))

    def step_text(self, k: int) -> str:
        """Step ``k`` as the page takes it: ``{"k", "layout", "state"}`` (JSON text)."""
        return f'{{"k":{k},"layout":{self.layout_of[k]},"state":{self.states[k]}}}'

    def outline_text(self) -> str:
        """What the page needs once: the source, ``n``, the layouts, the calls, divergences."""
        return (
            f'{{"source":{json.dumps(self.source)},"n":{self.n},'
            f'"layouts":[{",".join(self.layouts)}],'
            f'"calls":{_dumps(self.calls)},"diverged":{_dumps(self.diverged)}}}'
        )


def lab_of(calls: list[dict[str, Any]], source: str) -> Any | None:
    """A fresh lab built from the journal's lab record (``None``: the journal has none);
    :class:`ReplayError` if it cannot be built or is not simulated."""
    from labtools.config import ConfigError
    from labtools.lab import Lab

    origin = next((e["lab"] for e in calls if isinstance(e.get("lab"), dict)), None)
    if origin is None:
        return None
    text, overrides = origin.get("text"), origin.get("overrides") or {}
    name = Path(str(origin.get("config") or "lab.toml")).name
    if not isinstance(text, str) or not isinstance(overrides, dict):
        raise ReplayError(f"{source}: its lab record holds no lab file")
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            lab = Lab.load(path, journal=Journal(keep=0), **overrides)
    except (ConfigError, ValueError, TypeError) as exc:
        said = str(exc).replace(str(path), name)  # not the temporary copy's path
        raise ReplayError(f"{source}: its lab ({name}) cannot be built: {said}") from exc
    try:
        lab.checkpoint()  # refuses a lab with a real instrument: replay moves nothing real
    except NotSupported as exc:
        raise ReplayError(f"{source}: replay runs on simulated labs only: {exc}") from exc
    lab.connect()
    return lab


def replay_lab(
    lab: Any,
    calls: list[dict[str, Any]],
    source: str = "journal",
    call: Callable[[str, object], Any] | None = None,
) -> Replay:
    """Make ``calls`` (journal events) on ``lab`` in order, reading its scene at each step;
    ``call``: what makes a call (a session's ``call_tool``; the lab's ``call`` by default)."""
    make = call if call is not None else lab.call
    watcher = Calls(kept=len(calls) + 1)
    scene = Scene(lab, watcher)
    unwatch = lab.watch(watcher)
    replay = Replay(source)
    try:
        _keep(replay, scene)
        for k, event in enumerate(calls, start=1):
            result = make(event["tool"], event.get("arguments"))
            if _recorded(event) != _recorded(result.to_dict()):
                replay.diverged.append(k)
            _keep(replay, scene)
    finally:
        unwatch()
    replay.calls = watcher.since(0)
    return replay


def _keep(replay: Replay, scene: Scene) -> None:
    state, moved = scene.read()
    if moved or not replay.layouts:
        replay.layouts.append(_dumps(scene.layout()))
    replay.layout_of.append(len(replay.layouts) - 1)
    replay.states.append(_dumps(state))


def _recorded(event: dict[str, Any]) -> Any:
    """What must match between a recorded call and its replay: the result or refusal's code."""
    if event.get("ok"):
        return True, json.loads(_dumps(event.get("data")))
    error = event.get("error") or {}
    return False, error.get("code") if isinstance(error, dict) else error


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), default=repr)
