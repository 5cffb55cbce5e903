"""Where tasks come from: the ``labtools.tasks`` entry-point group, a family's instance
(``labtools.families``), or a ``module:Class`` path.

A package adds tasks and families by declaring entry points in its own ``pyproject.toml``::

    [project.entry-points."labtools.tasks"]
    titration = "my_lab_tasks.titration:Titration"

    [project.entry-points."labtools.families"]
    titrate = "my_lab_tasks.families:Titrate"

A task entry point's name is the task id (it must equal the class's ``id``); a family's is the
family id, and its instances are ``<family>/<level>/<structure>``
(:mod:`labtools.session.family`). A reference with a colon
(``"my_lab_tasks.titration:Titration"``) names a class directly, without registering it.
Nothing is imported until a task is asked for.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from labtools.config import ConfigError, import_object

if TYPE_CHECKING:
    from labtools.session.family import Family
    from labtools.session.task import Task

__all__ = [
    "ENTRY_POINT_GROUP",
    "FAMILY_GROUP",
    "UnknownTask",
    "family_ids",
    "load_family",
    "load_task",
    "task_class",
    "task_ids",
]

#: the entry-point group tasks are registered in
ENTRY_POINT_GROUP = "labtools.tasks"
#: the entry-point group task families are registered in
FAMILY_GROUP = "labtools.families"


class UnknownTask(ValueError):
    """No registered task has that id, or a ``module:Class`` reference names no task."""


@cache
def _registered(group: str = ENTRY_POINT_GROUP) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=group):
        other = found.setdefault(point.name, point)
        if other.value != point.value:
            raise UnknownTask(
                f"id {point.name!r} is registered twice in {group} ({other.value}, {point.value})"
            )
    return dict(sorted(found.items()))


def task_ids() -> list[str]:
    """The ids of every registered task, sorted (a family's instances are not listed)."""
    return list(_registered())


def family_ids() -> list[str]:
    """The ids of every registered task family, sorted."""
    return list(_registered(FAMILY_GROUP))


@cache
def load_family(family: str) -> Family:
    """The registered family ``family`` (one object per process)."""
    from labtools.session.family import Family

    point = _registered(FAMILY_GROUP).get(family)
    if point is None:
        known = ", ".join(family_ids()) or "none registered"
        raise UnknownTask(f"unknown task family {family[:80]!r}; families: {known}")
    cls = point.load()
    if not (isinstance(cls, type) and issubclass(cls, Family)) or cls.id != family:
        raise UnknownTask(f"entry point {family!r} does not load the family {family!r}")
    return cls()


def task_class(reference: str) -> type[Task]:
    """The task class a registered id or a ``module:Class`` reference names."""
    from labtools.session.task import Task

    if ":" in reference:
        try:
            cls = import_object(reference)
        except ConfigError as exc:
            raise UnknownTask(str(exc)) from None
        expected_id = None
    elif "/" in reference:  # a family's instance
        from labtools.session.family import UnknownInstance

        family = load_family(reference.partition("/")[0])
        try:
            return family.task_class(reference)
        except UnknownInstance as exc:
            raise UnknownTask(str(exc)) from None
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
