"""Where tasks come from: the ``labtools.tasks`` entry-point group, or a ``module:Class`` path.

A package adds tasks by declaring entry points in its own ``pyproject.toml``::

    [project.entry-points."labtools.tasks"]
    titration = "my_lab_tasks.titration:Titration"

The entry point's name is the task id (it must equal the class's ``id``). A reference with a
colon (``"my_lab_tasks.titration:Titration"``) names a class directly, without registering it.
Nothing is imported until a task is asked for.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from labtools.config import ConfigError, import_object

if TYPE_CHECKING:
    from labtools.session.task import Task

__all__ = ["ENTRY_POINT_GROUP", "UnknownTask", "load_task", "task_class", "task_ids"]

#: the entry-point group tasks are registered in
ENTRY_POINT_GROUP = "labtools.tasks"


class UnknownTask(ValueError):
    """No registered task has that id, or a ``module:Class`` reference names no task."""


@cache
def _registered() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        other = found.setdefault(point.name, point)
        if other.value != point.value:
            raise UnknownTask(
                f"task id {point.name!r} is registered twice ({other.value}, {point.value})"
            )
    return dict(sorted(found.items()))


def task_ids() -> list[str]:
    """The ids of every registered task, sorted."""
    return list(_registered())


def task_class(reference: str) -> type[Task]:
    """The task class a registered id or a ``module:Class`` reference names."""
    from labtools.session.task import Task

    if ":" in reference:
        try:
            cls = import_object(reference)
        except ConfigError as exc:
            raise UnknownTask(str(exc)) from None
        expected_id = None
    else:
        point = _registered().get(reference)
        if point is None:
            known = ", ".join(task_ids()) or "none registered"
            raise UnknownTask(f"unknown task {reference[:80]!r}; tasks: {known}")
        cls = point.load()
        expected_id = point.name
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise UnknownTask(f"{reference!r} is not a labtools Task class")
    if expected_id is not None and cls.id != expected_id:
        raise UnknownTask(f"entry point {expected_id!r} loads a task whose id is {cls.id!r}")
    return cls


def load_task(task: str | Task) -> Task:
    """A task object from a registered id or a ``module:Class`` reference, or ``task`` itself."""
    from labtools.session.task import Task

    if isinstance(task, Task):
        return task
    return task_class(task)()
