"""What a replay is read from: a lab's journal, a run bundle, an episode's journal or a
record of an eval export (``labtools eval --export``), as :func:`replay_journal` reads them.

A lab's journal (or a bundle's ``journal.jsonl``) is replayed on a fresh lab built from its
lab record. An episode (an episode's journal, from its ``reset`` event; or the ``episode``-th
record of an export, its calls read from the chat's tool calls) is replayed on a new session
of its task and seed, under the secret it was recorded with: ``secret``, or else the
evaluation's default secret if the record names that one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labtools.journal import read_journal
from labtools.view.replay import Replay, ReplayError, lab_of, replay_lab

__all__ = ["replay_journal"]


def replay_journal(
    path: str | Path, lab: Any | None = None, *, secret: str | None = None, episode: int = 1
) -> Replay:
    """The replay of the file at ``path`` (see the module's docstring); ``lab``: the lab a
    journal naming no lab file is replayed on, or a function building it (the lab it builds
    is closed after). :class:`ReplayError` for a file that cannot be replayed."""
    path = Path(path)
    source = path.name
    if path.is_dir():
        path = _bundle_journal(path)
    events = _events(path)
    if events and "messages" in events[0]:
        record, exported = _exported(events, episode, str(path))
        who = [str(record[k]) for k in ("agent", "seed") if record.get(k) is not None]
        name = f"{source} #{episode}" + (f" ({', seed '.join(who)})" if len(who) == 2 else "")
        return _episode(record, exported, secret, name, str(path))
    start = next((e for e in events if e.get("event") == "reset"), None)
    if start is not None:
        after = events[events.index(start) + 1 :]
        end = next((n for n, e in enumerate(after) if e.get("event") == "reset"), len(after))
        return _episode(start, _calls(after[:end], str(path)), secret, source, str(path))
    calls = _calls(events, str(path))
    built = lab_of(calls, str(path))
    if built is None and callable(lab):
        built = lab()
    target = built if built is not None else lab
    if target is None:
        raise ReplayError(f"{path}: the journal names no lab file; give the lab (--lab)")
    try:
        return replay_lab(target, calls, source)
    finally:
        if built is not None:
            built.close()


def _bundle_journal(folder: Path) -> Path:
    """A run bundle's journal, once its files match its manifest."""
    from labtools.records.bundle import Bundle

    try:
        bundle = Bundle.open(folder)
        changed = bundle.verify()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReplayError(f"{folder}: not a run bundle (labtools export): {exc}") from exc
    if changed:
        raise ReplayError(f"{folder}: its files no longer match its manifest: {changed}")
    return folder / "journal.jsonl"


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        events = read_journal(path)
    except FileNotFoundError as exc:
        raise ReplayError(f"{path}: no such file") from exc
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError(f"{path}: not a journal (one JSON object a line): {exc}") from exc
    if not all(isinstance(e, dict) for e in events):
        raise ReplayError(f"{path}: not a journal (one JSON object a line)")
    return events


def _calls(events: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    calls = [e for e in events if isinstance(e.get("tool"), str)]
    if not calls:
        raise ReplayError(f"{source}: not a journal: it records no call")
    return calls


def _exported(
    records: list[dict[str, Any]], episode: int, source: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``episode``-th record's start (task, seed, secret) and calls, as journal events."""
    if not 1 <= episode <= len(records):
        raise ReplayError(f"{source}: no episode {episode}: it holds {len(records)}")
    record = records[episode - 1]
    results = {
        m.get("tool_call_id"): m.get("content")
        for m in record.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "tool"
    }
    calls = []
    for message in record.get("messages") or []:
        for tool_call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
            function = tool_call.get("function") or {}
            arguments = function.get("arguments")
            if isinstance(arguments, str):  # OpenAI's form: the arguments as JSON text
                arguments = _json(arguments)
            content = _json(results.get(tool_call.get("id")))
            refused = isinstance(content, dict) and set(content) == {"error"}
            calls.append(
                {"tool": function.get("name"), "arguments": arguments, "ok": not refused}
                | ({"error": content["error"]} if refused else {"data": content})
            )
    return record, _calls(calls, f"{source} episode {episode}")


def _episode(
    start: dict[str, Any],
    calls: list[dict[str, Any]],
    secret: str | None,
    name: str,
    source: str,
) -> Replay:
    """Replay an episode on a new session of its task, seed and secret."""
    from labtools.session import Session
    from labtools.session.evaluate import DEV_SECRET

    task, seed, recorded = start.get("task"), start.get("seed"), start.get("secret_id")
    if not isinstance(task, str) or not isinstance(seed, int):
        raise ReplayError(f"{source}: the episode names no task and seed")
    try:
        session = Session(task, secret=secret if secret is not None else DEV_SECRET)
    except (KeyError, ValueError, ImportError) as exc:
        raise ReplayError(f"{source}: its task {task!r} cannot be set up: {exc}") from exc
    if recorded not in (None, session.secret_id):
        said = "another secret than the one given" if secret is not None else "a secret"
        raise ReplayError(f"{source}: recorded under {said}: give it (--secret)")
    try:
        session.reset(seed, task=task)
        return replay_lab(session.lab, calls, name, call=session.call_tool)
    finally:
        session.close()


def _json(text: object) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return text
