"""labtools' OpenEnv manifest, ``labtools/session/openenv.yaml``, generated from the task
registry: ``python -m labtools.session.openenv_manifest`` writes it, ``--check`` exits 1 if the
file differs from what the code generates.

The folder holding it is an OpenEnv package root: ``openenv validate labtools/session`` (OpenEnv
0.10) parses its ``validation:`` block into OpenEnv's normalized manifest (reward range and
tolerances, resources, network, capabilities with the oracle, the tools and the task counts,
type tags). The repository's root cannot be one: OpenEnv hashes the whole tree and refuses
symbolic links, which ``build/`` and ``tests/interop/node_modules`` hold. The ``labtools:``
block is labtools' own (OpenEnv reads no key beside ``name``, ``version``, ``description``,
``spec_version`` and ``validation``): each task's and family level's anchors, maximum reward and
tools, and each family's instance counts by split.

Nothing here imports OpenEnv; :mod:`labtools.session.openenv` serves :func:`identity` as the
server's metadata.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labtools import __version__
from labtools.session.family import InstanceName
from labtools.session.registry import family_ids, load_family, task_class, task_ids
from labtools.session.reward import Anchors
from labtools.session.session import Session
from labtools.session.splits import SPLITS, split_instances, split_size

__all__ = ["MANIFEST", "identity", "main", "manifest", "render"]

#: the committed manifest: this folder is the OpenEnv package root
MANIFEST = Path(__file__).with_name("openenv.yaml")
NAME = "labtools"
DESCRIPTION = (
    "Grounded laboratory experiments on a physically simulated lab (liquid handler, plate "
    "reader, spectrometer, balance), driven through unit-checked tools; the reward compares "
    "hidden truth with the submission, normalised between the task's naive and expert protocols."
)
#: what the server's ``app`` serves when no task is named (labtools.session.openenv.app)
DEFAULT_TASK = "dye_quantification"
#: the calibration anchors' mean raw scores sit at these normalised scores
ORACLE_AGENT, FLOOR_AGENT = "expert", "naive"
#: a session's needs, measured on OpenEnv 0.4.1's server: one process, single-threaded; eight
#: sessions of different tasks reset at once ~170 MB RSS; nothing written to disk by a session;
#: an expert episode's own compute well under a second (no wall-clock limit is enforced: an
#: episode's budget is in calls, tips, reagent, wells and virtual hours)
RESOURCES = {"cpu": 1.0, "memory_mb": 1024, "disk_mb": 256, "episode_timeout_s": 600.0}
TAGS = ["lab", "science", "tool-use"]
HEADER = """\
# labtools' OpenEnv manifest, generated from the task registry; not edited by hand:
#   python -m labtools.session.openenv_manifest          (--check: exit 1 if it is stale)
# This folder is the OpenEnv package root: openenv validate labtools/session (OpenEnv 0.10).
# reward.range bounds every reward: score().total is normalised between the naive (0) and
# expert (1) protocols' mean raw scores and not capped, so its maximum is the largest
# (1 - naive) / (expert - naive) of any task or family level (labtools: maximum_reward).
# oracle_tolerance = max - 0.9: the oracle, the expert protocol, averages a normalised 1, so a
# reward of at least 0.9 (the efficiency factor); OpenEnv 0.10's policy allows at most 0.1.
# floor_margin: the floor (an episode without a submission, and the naive protocol's mean)
# scores 0, at least 1 below the maximum. See docs/sessions.md, "OpenEnv".
"""


def identity() -> dict[str, str]:
    """The environment's ``name``, ``version`` and ``description``: the manifest's, and what the
    OpenEnv server's ``/metadata`` serves."""
    return {"name": NAME, "version": __version__, "description": DESCRIPTION}


def manifest() -> dict[str, Any]:
    """The manifest's contents, from the registry: every task, every family (its instances by
    split, each level's anchors and tools) and what follows from them (the reward's maximum,
    the union of the tools, the task counts)."""
    tasks = [_task(t) for t in task_ids()]
    families = [_family(f) for f in family_ids()]
    entries = tasks + [level for family in families for level in family["levels"]]
    maximum = max([1.0] + [e["maximum_reward"] for e in entries])
    high = math.ceil(maximum * 100 - 1e-9) / 100
    tools = sorted({t for e in tasks + families for t in e["tools"]})
    counts = {split: split_size(split) for split in SPLITS}  # the Task API's, by split
    return {
        "spec_version": 1,
        **identity(),
        "validation": {
            "reward": {
                "range": [0.0, high],
                "oracle_tolerance": round(high - 0.9, 2),
                "floor_margin": 1.0,
            },
            "resources": dict(RESOURCES),
            "network": {"mode": "no-network"},
            "task_distribution": {"dataset_version": f"labtools-sdk {__version__}"},
            "capabilities": {
                "oracle": {"form": "script", "location": "agents.py"},
                "verifier": {"kind": "reward_channel"},
                "set_state": False,
                "llm_judged": False,
                "rubric_tree": False,
                "task_api": True,
                "declared_tools": tools,
                "declared_task_count": counts,
            },
            "types": {"tags": list(TAGS)},
        },
        "labtools": {
            "server": "labtools.session.openenv:app",
            "default_task": DEFAULT_TASK,
            "reward": (
                "total = normalised × validity × (0.9 + 0.1 × efficiency); normalised = "
                "(raw − naive) / (expert − naive), floored at 0, not capped"
            ),
            "oracle": ORACLE_AGENT,
            "floor": FLOOR_AGENT,
            "splits": list(SPLITS),
            "tasks": tasks,
            "families": families,
        },
    }


def _anchors(anchors: Anchors) -> dict[str, Any]:
    return {"naive": anchors.naive, "expert": anchors.expert, "seeds": anchors.seeds}


def _maximum(anchors: Anchors) -> float:
    """The largest reward: a raw score of 1, normalised (the other factors are at most 1)."""
    return math.ceil(anchors.normalize(1.0) * 10_000 - 1e-9) / 10_000


def _tools(task: str) -> list[str]:
    with Session(task) as session:
        return sorted(session.tool_names())


def _task(task: str) -> dict[str, Any]:
    anchors = task_class(task).anchors
    return {
        "id": task,
        "anchors": _anchors(anchors),
        "maximum_reward": _maximum(anchors),
        "tools": _tools(task),
    }


def _family(family_id: str) -> dict[str, Any]:
    """A family's counts, and each level's anchors and tools (those of its first structure: a
    level's instances share its physics, budget and anchors); its ``tools``: the levels' union,
    each level's own only where they differ."""
    family = load_family(family_id)
    structures = family.structures()
    levels: list[dict[str, Any]] = []
    for level in family.levels:
        instance = InstanceName(family_id, level, structures[0])
        anchors = family.task_class(instance).anchors
        levels.append(
            {
                "level": level,
                "anchors": _anchors(anchors),
                "maximum_reward": _maximum(anchors),
                "tools": _tools(instance),
            }
        )
    tools = sorted({t for entry in levels for t in entry["tools"]})
    if all(entry["tools"] == tools for entry in levels):  # the usual case: said once
        for entry in levels:
            del entry["tools"]
    return {
        "id": family_id,
        "instances": family.count(),
        "structures": len(structures),
        "held_out_structures": sum(family.held_out(s) for s in structures),
        "splits": {split: len(split_instances(family, split)) for split in SPLITS},
        "levels": levels,
        "tools": tools,
    }


# -- YAML -------------------------------------------------------------------------------------
# A small emitter for the manifest's plain data (mappings, lists, strings, numbers, booleans):
# labtools does not depend on a YAML library. Strings are JSON-quoted (a JSON string is a YAML
# double-quoted scalar) unless they are plain identifiers; lists of scalars are flow sequences.


def render(data: dict[str, Any] | None = None) -> str:
    """The manifest's text: :data:`HEADER`, then ``data`` (default :func:`manifest`) as JSON,
    which YAML reads as it is (a YAML 1.2 document; PyYAML, OpenEnv's reader, parses it)."""
    data = manifest() if data is None else data
    return HEADER + json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labtools.session.openenv_manifest",
        description="write (or --check) labtools' OpenEnv manifest from the task registry",
    )
    parser.add_argument("--out", type=Path, default=MANIFEST, help="default: %(default)s")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from what is generated"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.out.is_file() or args.out.read_text("utf-8") != text:
            print(
                f"{args.out} is out of date: run python -m labtools.session.openenv_manifest",
                file=sys.stderr,
            )
            return 1
        print(f"{args.out} is in sync")
        return 0
    args.out.write_text(text, "utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
