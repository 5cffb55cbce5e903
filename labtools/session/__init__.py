"""Grounded-reward sessions: experiments with hidden truth and honest rewards for RL trainers.

``Session(task).reset(seed)`` starts an episode; the agent uses ``tools()``, ``call_tool()`` and
``state()``; the trainer reads ``score()``. Tasks are found through the ``labtools.tasks``
entry-point group (:mod:`labtools.session.registry`); the built-in ones live in
``labtools.simulators.tasks``.
"""

from labtools.session.budget import Budget, Usage
from labtools.session.registry import load_task, task_ids
from labtools.session.reward import Anchors, Reward, pass_hat_k
from labtools.session.session import Session
from labtools.session.task import Submitted, Task

__all__ = [
    "Anchors",
    "Budget",
    "Reward",
    "Session",
    "Submitted",
    "Task",
    "Usage",
    "load_task",
    "pass_hat_k",
    "task_ids",
]
