"""The reward gap: what a task's expert protocol scores on the lab's profile minus on a twin's.

Per task and seed, the expert (``labtools.session.evaluate.run_episode(..., "expert", seed)``)
plays ``Session(task, secret=DEV_SECRET, profile=P)`` for the lab's profile, the twin's
(its fitted values, the point twin), and the published default. The same task, secret and seed
draw the same samples and the same noise streams whatever the profile (a fixed value still
makes its prior's draws), so each seed's gap is the profile's effect alone. Only a lab whose
profile is known (a virtual one) has a reward to compare: a task's episode is a simulation.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from labtools.simulators.profile import Profile
from labtools.simulators.published import published

__all__ = ["reward_gaps"]


def _scores(task: str, profile: Profile, seeds: Sequence[int]) -> list[float]:
    from labtools.session import Session
    from labtools.session.evaluate import DEV_SECRET, run_episode

    session = Session(task, secret=DEV_SECRET, profile=profile)
    try:
        return [float(run_episode(session, "expert", seed).total) for seed in seeds]
    finally:
        session.close()


def reward_gaps(
    lab_profile: Profile, twin: Profile, tasks: Sequence[str], seeds: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """Per task: ``{"seeds", "lab", "twin", "default", "gap_twin", "gap_default"}``; the
    scores seed by seed, the gaps (lab − twin, lab − default) their means over ``seeds``."""
    out = {}
    default = published()
    for task in tasks:
        lab = _scores(task, lab_profile, seeds)
        on_twin = _scores(task, twin, seeds)
        on_default = _scores(task, default, seeds)
        out[task] = {
            "seeds": list(seeds),
            "lab": lab,
            "twin": on_twin,
            "default": on_default,
            "gap_twin": statistics.fmean(a - b for a, b in zip(lab, on_twin, strict=True)),
            "gap_default": statistics.fmean(a - b for a, b in zip(lab, on_default, strict=True)),
        }
    return out
