"""The installed layout as a tree of links: ``labtools/`` with ``drivers/`` and ``simulators/``
inside it, as ``pip install`` places them (``package-dir`` in pyproject.toml).

Tools that read files instead of importing them (import-linter, mypy) see the repository's
folders side by side; they run on this tree. ``python tests/installed_layout.py DEST`` builds it.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where each folder of the repository sits in the installed package
MAPPED = {"drivers": "drivers", "simulators": "simulators"}


def link_tree(dest: Path, replace: dict[str, Path] | None = None) -> Path:
    """Build the tree under ``dest`` (emptied first) and return ``dest``.

    ``replace`` maps a path inside the package (``"config.py"``) to a file to link there
    instead of the repository's, so a test can try a variant without touching the repository.
    """
    replace = replace or {}
    if dest.exists():
        shutil.rmtree(dest)
    package = dest / "labtools"
    package.mkdir(parents=True)
    entries = {p.name: p for p in (ROOT / "labtools").iterdir() if p.name != "__pycache__"}
    entries.update({inside: ROOT / folder for inside, folder in MAPPED.items()})
    for name, source in sorted(entries.items()):
        (package / name).symlink_to(replace.get(name, source))
    for name, source in replace.items():
        if name not in entries:
            (package / name).symlink_to(source)
    return dest


if __name__ == "__main__":
    print(link_tree(Path(sys.argv[1]).resolve()))
