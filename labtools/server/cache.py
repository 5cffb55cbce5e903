"""A lab's ``tools/list`` answer kept between runs of ``labtools serve``.

Keyed on what decides it: the lab's configuration (its file's bytes, or the virtual lab and its
seed), the server's options, and the code that builds the tools (the size and modification
time of every file of labtools and of the packages it describes labware and units with). A hit
lets the server answer before its lab is built; the lab, once built, corrects a stale entry
(:class:`labtools.server.catalogue.Catalogue`). Files live in ``$LABTOOLS_CACHE_DIR``, else
``$XDG_CACHE_HOME/labtools``, else ``~/.cache/labtools``; ``LABTOOLS_CACHE_DIR=off`` disables it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import mcp_types as types

from labtools import __version__
from labtools.server.catalogue import dump_tools, load_tools

__all__ = ["cache_dir", "catalogue_key", "load", "store"]

log = logging.getLogger(__name__)

#: the packages whose files build the tool catalogue
PACKAGES = ("labtools", "labtools.drivers", "labtools.simulators", "pylabrobot", "pint")
#: entries kept; the oldest go first
KEEP = 32


def cache_dir() -> Path | None:
    """Where catalogues are kept, or ``None`` if caching is off."""
    configured = os.environ.get("LABTOOLS_CACHE_DIR")
    if configured:
        return None if configured.lower() == "off" else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "labtools"


def catalogue_key(lab: str, *options: object) -> str:
    """The key of the catalogue of ``lab`` ('virtual' or a config file) served with ``options``."""
    digest = hashlib.sha256()
    for part in (__version__, sys.version, lab, *map(repr, options)):
        digest.update(part.encode() + b"\0")
    if lab != "virtual":
        try:
            digest.update(Path(lab).read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
    for folder in _package_folders():
        for path, size, mtime in _files(folder):
            digest.update(f"{path}\0{size}\0{mtime}\0".encode())
    return digest.hexdigest()[:32]


def load(key: str) -> list[types.Tool] | None:
    """The catalogue stored under ``key``, or ``None`` (none, unreadable, or caching off)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        entries = json.loads((folder / f"catalogue-{key}.json").read_text("utf-8"))
        return load_tools(entries)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a damaged entry is rebuilt, never trusted
        log.warning("ignoring the cached tool catalogue %s: %s", key, exc)
        return None


def store(key: str, tools: Iterable[types.Tool]) -> None:
    """Keep ``tools`` under ``key`` (best effort: an unwritable cache is skipped)."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=folder, suffix=".tmp", delete=False, encoding="utf-8"
        ) as handle:
            json.dump(dump_tools(tools), handle)
        os.replace(handle.name, folder / f"catalogue-{key}.json")
        _prune(folder)
    except OSError as exc:
        log.info("tool catalogue not cached in %s: %s", folder, exc)


def _package_folders() -> list[str]:
    folders = []
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            folders += list(spec.submodule_search_locations)
    return sorted(set(folders))


def _files(folder: str) -> Iterable[tuple[str, int, int]]:
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            try:
                stat = os.stat(os.path.join(root, name))
            except OSError:
                continue
            yield os.path.join(root, name), stat.st_size, stat.st_mtime_ns


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("catalogue-*.json"), key=lambda p: p.stat().st_mtime_ns)
    for stale in entries[:-KEEP]:
        stale.unlink(missing_ok=True)
