"""What every family's :class:`~labtools.session.family.Family` shares: an instance is a
subclass of the family's task class, with its level's physics and budget and the anchors
calibrated for that level (``family_anchors.toml``: :mod:`.anchors`)."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from labtools.session import Task
from labtools.session.family import Family, InstanceName
from labtools.session.reward import Anchors
from labtools.simulators.families.anchors import anchors_of, record_anchors

__all__ = ["LevelledFamily"]


class LevelledFamily(Family):
    """A family whose instances are subclasses of :attr:`task`, each level's physics and
    budget :attr:`LEVEL`'s.

    Subclasses set :attr:`task` and :attr:`LEVEL`, list their :meth:`structures`, and say in
    :meth:`parts` what an instance adds: its ``title`` and its parts' class attributes (a
    ``level`` of its own too, where the level's physics depends on the parts).
    """

    #: the instances' base class
    task: ClassVar[type[Task]]
    #: level number → the level's physics, with its ``budget``
    LEVEL: ClassVar[Mapping[int, Any]]

    @abstractmethod
    def parts(self, level: int, structure: str) -> dict[str, Any]:
        """The instance's ``title`` and the class attributes its parts set."""

    def build(self, level: int, structure: str) -> type[Task]:
        attributes = {"level": self.LEVEL[level], **self.parts(level, structure)}
        attributes.update(
            id=str(InstanceName(self.id, level, structure)),
            budget=self.LEVEL[level].budget,
            anchors=anchors_of(self.id, level),
            __module__=type(self).__module__,
        )
        name = f"{type(self).__name__}_{level}_{re.sub(r'[^0-9A-Za-z]+', '_', structure)}"
        return type(name, (self.task,), attributes)

    def record_anchors(self, measured: Mapping[int, Anchors]) -> str:
        return record_anchors(self.id, measured)
