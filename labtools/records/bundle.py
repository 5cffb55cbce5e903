"""A run bundle: the journal, the lab configuration, the versions, and the readings exported
the way labs keep them, under a manifest of SHA-256 digests and one content hash."""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from labtools.records.jcamp import jcamp_dx
from labtools.records.readings import Resolve, readings, spectra
from labtools.records.tables import grid_csv, tidy_csv

__all__ = ["DISTRIBUTIONS", "Bundle", "write_bundle"]

#: the distributions whose versions a bundle records
DISTRIBUTIONS = ("labtools-sdk", "pylabrobot", "pint", "numpy", "mcp", "pyvisa", "pyserial")
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Bundle:
    path: Path
    files: dict[str, str]  # relative path → SHA-256
    hash: str  # SHA-256 over the manifest's files and digests

    @classmethod
    def open(cls, path: str | Path) -> Bundle:
        """The bundle written at ``path``, from its manifest."""
        manifest = json.loads((Path(path) / MANIFEST).read_text("utf-8"))
        return cls(Path(path), manifest["files"], manifest["hash"])

    def verify(self) -> list[str]:
        """The files whose content no longer matches the manifest (``[]``: intact)."""
        return [name for name, digest in self.files.items() if _digest(self.path / name) != digest]


def write_bundle(
    events: Iterable[dict[str, Any]],
    out: str | Path,
    *,
    config: str | Path | None = None,
    resolve: Resolve | None = None,
) -> Bundle:
    """Write the bundle of the run in ``events`` (a journal) to the directory ``out``:
    ``journal.jsonl``, the lab configuration, ``versions.json``, ``plate_reads.csv`` (tidy),
    ``plate_reads_grid.csv``, one ``spectra/<n>.jdx`` per spectrum, and ``manifest.json``.

    The configuration is the ``config`` file if given, else the one the journal names (a lab
    loaded from a file records it, with its overrides, on a journal's first call): its TOML as
    read, and ``lab.json`` (its name, path and overrides). The data behind handles is exported
    whole from the journal (a journal written to a file holds it), or else from ``resolve``
    (``lab.data``). ``labtools export`` is this function on a journal file."""
    events = list(events)
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    put("journal.jsonl", "".join(json.dumps(e, sort_keys=True) + "\n" for e in events))
    origin = next((e["lab"] for e in events if isinstance(e.get("lab"), dict)), None)
    if config is not None:
        shutil.copyfile(config, root / Path(config).name)
        written.append(root / Path(config).name)
    elif origin is not None:
        put(Path(origin["config"]).name, origin["text"])
        described = {k: v for k, v in origin.items() if k != "text"}
        put("lab.json", json.dumps(described, indent=2, sort_keys=True) + "\n")
    put("versions.json", json.dumps(_versions(), indent=2, sort_keys=True) + "\n")
    values = readings(events, resolve)
    if values:
        put("plate_reads.csv", tidy_csv(values))
        put("plate_reads_grid.csv", grid_csv(values))
    for n, spectrum in enumerate(spectra(events, resolve), start=1):
        if any(y is not None for y in spectrum.absorbance):
            put(f"spectra/{n:03d}.jdx", jcamp_dx(spectrum))
    files = {p.relative_to(root).as_posix(): _digest(p) for p in sorted(written)}
    content = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    manifest = {"files": files, "hash": content}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return Bundle(root, files, content)


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
