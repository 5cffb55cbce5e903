"""What a grounded task declares: its lab, its statement, its submit tool, its scoring, and the
scripted protocols its reward is normalised between.

A task is an :class:`~labtools.instrument.Instrument` so that its submit tool is declared like
any other tool (``@tool(name="submit_<task>")``); the session adds it to the lab.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import TypedDict

from labtools.config import packaged
from labtools.instrument import Instrument
from labtools.lab import Lab
from labtools.session.budget import Budget
from labtools.session.process import Rubric
from labtools.session.reward import Anchors

if TYPE_CHECKING:
    from labtools.session.session import Session

__all__ = ["Submitted", "Task"]


class Submitted(TypedDict):
    """What a submit tool answers: the submission was taken (the episode ends)."""

    received: bool


class Task(Instrument):
    """A grounded experiment with hidden truth.

    Subclasses set ``id``, ``title``, ``budget``, ``anchors`` and ``config`` (a lab config file
    in ``simulators/``), declare one ``@tool(name="submit_<id>")`` method that stores the
    submission in ``self.submission``, and implement :meth:`prepare`, :meth:`statement`,
    :meth:`score`, :meth:`expert` and :meth:`naive`.
    """

    kind = "task"
    id: ClassVar[str]
    title: ClassVar[str]
    budget: ClassVar[Budget] = Budget()
    anchors: ClassVar[Anchors]
    #: the process components of the reward (controls, replicates, range …); ``None``: the
    #: outcome alone
    rubric: ClassVar[Rubric | None] = None
    #: normalised reward at or above which an episode counts as a success (pass^k)
    success_at: ClassVar[float] = 0.5
    #: the lab this task runs in: a config file shipped in ``simulators/``
    config: ClassVar[str] = "virtual_lab.toml"
    #: the lab's tools the task offers the agent, beside its own (``None``: every one): a task
    #: offers what its experiment needs, and an agent reads no catalogue of the rest
    lab_tools: ClassVar[frozenset[str] | None] = None
    simulated = True

    def __init__(self) -> None:
        super().__init__("task")
        self.submission: dict[str, Any] | None = None

    def build_lab(self, seed: int = 0, profile: Any = None) -> Lab:
        """The lab with its hidden truth drawn from ``seed`` (a session builds it once, then
        rewinds it for each episode); ``profile``: its instruments' physics (a profile file or
        object; the lab file's own, the published one, by default)."""
        given = {} if profile is None else {"profile": profile}
        lab = Lab.load(packaged(self.config), seed=seed, **given)
        if self.lab_tools is not None:
            lab.offer(self.lab_tools)
        lab.connect()
        return lab

    @abstractmethod
    def prepare(self, lab: Lab, seed: int) -> None:
        """Set up an episode after the lab was rewound to ``seed``: draw this task's hidden
        truth (through the world's ``hidden``) and put samples in place."""

    @abstractmethod
    def statement(self, lab: Lab) -> str:
        """What the agent is asked to do: the goal, what is on the deck, how to submit.
        Never hidden truth."""

    @abstractmethod
    def score(self, lab: Lab) -> dict[str, float]:
        """Raw outcome components from hidden truth and the physical end state, with the
        total under ``"raw"`` in [0, 1]; ``self.submission`` is ``None`` if none came."""

    @abstractmethod
    def expert(self, session: Session) -> None:
        """The expert protocol, through ``session.call_tool`` only; ends by submitting."""

    @abstractmethod
    def naive(self, session: Session) -> None:
        """A naive protocol (what a careless agent does); ends by submitting."""

    def prior(self, session: Session) -> None:
        """Shortcut: submit the centre of the prior, from the statement and the deck's labels
        alone (no measurement). A sound task scores it near 0."""
        raise NotImplementedError(f"{self.id} has no prior() shortcut")

    def inversion(self, session: Session) -> None:
        """Shortcut: compute the answer from what the package and the literature say (the
        species library, labels, nominal instrument values), no measurement. A sound task
        scores it near 0: its truth holds what only a measurement reveals."""
        raise NotImplementedError(f"{self.id} has no inversion() shortcut")

    def no_controls(self, session: Session) -> None:
        """Shortcut: the experiment without its controls: the unknown read once and converted
        with the package's data (the species library's ε, the reader's nominal path and plate),
        no standard, blank or replicate. A sound task scores it at most 0.5: calibration
        matters as it does in a real lab, and the process rubric weighs what was skipped."""
        raise NotImplementedError(f"{self.id} has no no_controls() shortcut")

    def validity(self, lab: Lab) -> float:
        """1 unless the episode broke a rule the task checks from the trajectory (0 then)."""
        return 1.0

    # -- episode state -------------------------------------------------------------------------
    def snapshot(self) -> Any:
        return None

    def restore(self, snapshot: Any) -> None:
        self.submission = None

    def state(self) -> dict[str, Any]:
        return {"submitted": self.submission is not None}
