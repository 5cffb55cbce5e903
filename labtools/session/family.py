"""Task families: many experiments from composable parts, each instance a task.

A family generates task classes. An instance is named ``<family>/<level>/<structure>``
(``quantify/3/tartrazine+allura_red``): the *level* (1–5) sets the physics and the budget,
never the wording; the *structure* names the parts (analytes, matrix, ...), and so what the
statement says. ``Session("quantify/3/tartrazine+allura_red")`` runs one like any task.

Packages add families through the ``labtools.families`` entry-point group (each entry point
names a :class:`Family` subclass, its name the family's id); :mod:`labtools.session.registry`
resolves instance ids. A family says which structures hold out parts for the
out-of-distribution split (:meth:`Family.held_out`, :mod:`labtools.session.splits`).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from labtools.session.reward import Anchors
    from labtools.session.task import Task

__all__ = ["LEVELS", "Family", "InstanceName", "UnknownInstance"]

#: difficulty levels, easiest first
LEVELS = (1, 2, 3, 4, 5)


class UnknownInstance(ValueError):
    """An instance name that names no level or structure of its family."""


class InstanceName(str):
    """``<family>/<level>/<structure>``, parsed: :attr:`family`, :attr:`level`,
    :attr:`structure`."""

    family: str
    level: int
    structure: str

    def __new__(cls, family: str, level: int, structure: str) -> InstanceName:
        name = super().__new__(cls, f"{family}/{level}/{structure}")
        name.family, name.level, name.structure = family, level, structure
        return name

    @classmethod
    def parse(cls, text: str) -> InstanceName:
        family, _, rest = text.partition("/")
        level, _, structure = rest.partition("/")
        if not family or not structure or not level.isdigit():
            raise UnknownInstance(
                f"{text[:80]!r} is not an instance name: <family>/<level>/<structure>"
            )
        return cls(family, int(level), structure)


class Family(ABC):
    """A question asked of many combinations of parts, at five levels of difficulty.

    Subclasses set :attr:`id` and :attr:`title`, list their :meth:`structures`, and
    :meth:`build` one task class per level and structure; :meth:`held_out` says which
    structures the out-of-distribution split keeps (none by default); :attr:`members` names
    the hand-written tasks that ask the same question.
    """

    id: ClassVar[str]
    title: ClassVar[str]
    levels: ClassVar[tuple[int, ...]] = LEVELS
    #: the registered tasks that ask this family's question, each in a world of its own (its
    #: seeds, anchors and scores its own): ``labtools eval --list`` shows them with the family
    members: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def structures(self) -> Sequence[str]:
        """Every structure, in a fixed order (``+``-joined part names)."""

    @abstractmethod
    def build(self, level: int, structure: str) -> type[Task]:
        """The task class of one instance (its ``id`` the instance name)."""

    def held_out(self, structure: str) -> bool:
        """Whether ``structure`` belongs to the out-of-distribution split only."""
        return False

    def record_anchors(self, measured: Mapping[int, Anchors]) -> str:
        """Keep ``measured`` (level → anchors) where :meth:`build` finds them; where they went
        (``labtools eval --calibrate --family F --save-anchors``)."""
        raise NotImplementedError(f"family {self.id!r} keeps no anchors")

    def instances(self, *, held_out: bool | None = None) -> Iterator[InstanceName]:
        """Every instance name, level by level (only those held out, or only those not, if
        ``held_out`` says so)."""
        structures = [
            s for s in self.structures() if held_out is None or self.held_out(s) == held_out
        ]
        for level in self.levels:
            for structure in structures:
                yield InstanceName(self.id, level, structure)

    def count(self) -> int:
        """How many instances the family has (levels × structures)."""
        return len(self.levels) * len(self.structures())

    def task_class(self, instance: str | InstanceName) -> type[Task]:
        """The task class of ``instance`` (a full instance name of this family)."""
        name = instance if isinstance(instance, InstanceName) else InstanceName.parse(instance)
        if name.family != self.id:
            raise UnknownInstance(f"{name!s} is not an instance of family {self.id!r}")
        if name.level not in self.levels:
            levels = ", ".join(map(str, self.levels))
            raise UnknownInstance(f"{name!s}: family {self.id!r} has levels {levels}")
        if name.structure not in self._structure_set():
            raise UnknownInstance(
                f"{name!s}: family {self.id!r} has no structure {name.structure[:80]!r}",
            )
        return self._built(name.level, name.structure)

    @functools.cache  # noqa: B019 - families are few and live as long as the process
    def _structure_set(self) -> frozenset[str]:
        return frozenset(self.structures())

    @functools.cache  # noqa: B019 - one class per instance, built once
    def _built(self, level: int, structure: str) -> type[Task]:
        cls = self.build(level, structure)
        expected = str(InstanceName(self.id, level, structure))
        if cls.id != expected:
            raise UnknownInstance(f"family {self.id!r} built {cls.id!r} for {expected!r}")
        return cls
