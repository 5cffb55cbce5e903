"""Which calibrated parameters a task's reward depends on, measured on the twin.

A task's expert (``run_episode(session, "expert", seed)``) is played on a base instrument set
(:func:`~labtools.simulators.stand_in.drawn_profile` of :data:`BASE_SEED`) and on
:data:`DRAWS` others in which only one group of parameters is changed, to its values on another
drawn instrument set (seeds :data:`ALTERNATIVE_SEED` …): a finite difference across the
parameters' own prior spread, with every episode's samples and noise the same (the same task,
secret and seeds: :mod:`labtools.simulators.fidelity.rewards`). A group's relevance is the sd of
the expert's mean reward over those profiles; a group the reward ignores has 0 (exactly, where
the task never touches the instrument). Groups (:func:`group_of`) are a tip type's channels, the
reader's absorbance, a dye's lot, and so on; only the keys a calibration run fits and a stand-in
draws (a per-unit prior) are changed.

Each key's weight (:func:`key_weights`) is its group's share of the reward variance, split
evenly among the group's keys, summing to 1 over the keys (or all 0 if the reward depends on
none). One task costs about ``(1 + DRAWS · groups) · len(seeds)`` episodes of a fraction of a
second each, and is computed once per process (cached).
"""

from __future__ import annotations

import functools
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from labtools.simulators.profile import Profile

__all__ = [
    "ALTERNATIVE_SEED",
    "BASE_SEED",
    "DRAWS",
    "SEEDS",
    "group_of",
    "key_weights",
    "relevance",
]

#: the base instrument set's seed and the first alternative's: far from the seeds of tests and
#: benchmarks (bench.fidelity 7000-9999, bench.sweet_spot 20000-29999) [A]
BASE_SEED = 50_000
ALTERNATIVE_SEED = 50_001
#: alternative instrument sets per group [A: 3 give a sd from 4 profiles in ~10 s a task]
DRAWS = 3
#: the episodes' seeds (evaluation seeds under the public dev secret) [A]
SEEDS = (0, 1)

_CHANNEL = re.compile(r"^liquid_handler\.channel_\d+\.(tip_\d+)\..+$")


def group_of(key: str) -> str:
    """A profile key's group: ``liquid_handler.tip_300`` for every channel's 300 µL keys,
    ``species.<dye>.lot``, else the key's first two segments (``reader.absorbance``)."""
    channel = _CHANNEL.match(key)
    if channel:
        return f"liquid_handler.{channel[1]}"
    parts = key.split(".")
    if parts[0] == "species" and len(parts) > 2:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


@functools.lru_cache(maxsize=16)
def _drawn(seed: int) -> Profile:
    from labtools.simulators.stand_in import drawn_profile

    return drawn_profile(seed)


def _mean_reward(task: str, profile: Profile, seeds: Sequence[int]) -> float:
    from labtools.session import Session
    from labtools.session.evaluate import DEV_SECRET, run_episode

    session = Session(task, secret=DEV_SECRET, profile=profile)
    try:
        return statistics.fmean(float(run_episode(session, "expert", s).total) for s in seeds)
    finally:
        session.close()


def relevance(
    task: str,
    keys: Iterable[str],
    *,
    draws: int = DRAWS,
    seeds: Sequence[int] = SEEDS,
) -> dict[str, Any]:
    """``{"task", "base", "groups": {group: {"sd", "keys", "rewards"}}}`` for the groups of
    ``keys`` (the keys calibration runs fit) that a stand-in draws (module docstring)."""
    return _relevance(task, tuple(sorted(set(keys))), draws, tuple(seeds))


@functools.lru_cache(maxsize=64)
def _relevance(
    task: str, keys: tuple[str, ...], draws: int, seeds: tuple[int, ...]
) -> dict[str, Any]:
    base = _drawn(BASE_SEED)
    drawn = {k for k, p in base.parameters.items() if p.fixed and p.draws_like is not None}
    groups: dict[str, list[str]] = {}
    for key in keys:
        if key in drawn:
            groups.setdefault(group_of(key), []).append(key)
    base_reward = _mean_reward(task, base, seeds)
    out: dict[str, Any] = {}
    for group, members in sorted(groups.items()):
        rewards = [base_reward]
        for k in range(draws):
            other = _drawn(ALTERNATIVE_SEED + k)
            values = {key: other.parameters[key] for key in members}
            rewards.append(_mean_reward(task, base.with_values(values), seeds))
        out[group] = {
            "sd": statistics.stdev(rewards) if len(rewards) > 1 else 0.0,
            "keys": members,
            "rewards": rewards,
        }
    return {"task": task, "base": base_reward, "seeds": list(seeds), "groups": out}


def key_weights(found: Mapping[str, Any]) -> dict[str, float]:
    """Each key's weight from :func:`relevance`'s result (module docstring)."""
    groups = found["groups"]
    total = sum(g["sd"] ** 2 for g in groups.values())
    if total <= 0.0:
        return {key: 0.0 for g in groups.values() for key in g["keys"]}
    return {
        key: g["sd"] ** 2 / total / len(g["keys"]) for g in groups.values() for key in g["keys"]
    }
