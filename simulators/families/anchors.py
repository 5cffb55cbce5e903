"""Each family level's anchors: the mean raw scores of its naive and expert protocols over
calibration seeds, measured by ``labtools eval --calibrate --family F`` and kept in
``simulators/data/family_anchors.toml``.

A calibration seed ``s`` plays :func:`~labtools.session.splits.played` of the level's training
structures (consecutive seeds spread over them), so a level's anchors are means over its
structures as well as its seeds.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from labtools.session import Anchors

__all__ = ["ANCHORS_FILE", "anchors_of", "record_anchors", "unmeasured"]

ANCHORS_FILE = "data/family_anchors.toml"
HEADER = (
    "# Each family level's anchors: mean raw scores of its naive and expert protocols over the\n"
    "# calibration seeds, on the training split's structures (simulators/families/anchors.py).\n"
    "# Written by labtools eval --calibrate --family F --save-anchors; not edited by hand.\n"
)


@functools.cache
def _table() -> dict[str, Any]:
    text = resources.files("labtools.simulators").joinpath(ANCHORS_FILE)
    return tomllib.loads(text.read_text("utf-8")) if text.is_file() else {}


def unmeasured(family: str) -> Anchors:
    """The anchors of a level not yet measured: normalised scores are then the raw ones, and
    their ``seeds`` say so."""
    return Anchors(
        naive=0.0, expert=1.0, seeds=f"unmeasured: labtools eval --calibrate --family {family}"
    )


def anchors_of(family: str, level: int) -> Anchors:
    """``family``'s anchors at ``level`` (:func:`unmeasured` where none were measured)."""
    entry = _table().get(family, {}).get(str(level))
    if entry is None:
        return unmeasured(family)
    return Anchors(naive=float(entry["naive"]), expert=float(entry["expert"]), seeds=entry["seeds"])


def record_anchors(family: str, measured: Mapping[int, Anchors]) -> str:
    """Lay ``measured`` (level → anchors) for ``family`` over the package's table (this
    installation's copy: a source tree's where labtools is installed editable); its path."""
    path = Path(str(resources.files("labtools.simulators").joinpath(ANCHORS_FILE)))
    table = tomllib.loads(path.read_text("utf-8")) if path.is_file() else {}
    levels = table.setdefault(family, {})
    for level, anchors in sorted(measured.items()):
        levels[str(level)] = {
            "naive": round(anchors.naive, 4),
            "expert": round(anchors.expert, 4),
            "seeds": anchors.seeds,
        }
    path.write_text(HEADER + tomli_w.dumps(table), "utf-8")
    _table.cache_clear()
    return str(path)
