"""The grounded-reward session: one task, episodes that rewind one lab, honest scores."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from labtools.errors import NotSupported, PreconditionFailed
from labtools.journal import Journal
from labtools.progress import ProgressCallback
from labtools.result import ToolResult
from labtools.session.budget import Usage
from labtools.session.process import Rubric, analyse
from labtools.session.registry import load_task
from labtools.session.reward import Reward
from labtools.session.shelf import SHELF, Shelved
from labtools.session.task import Task

__all__ = ["SEED_BITS", "Session", "fresh_seed"]

Secret = str | bytes
#: a fresh seed's size: with 64 random bits, a run of a billion episodes repeats a world with
#: probability ~3 %, and one of a million with ~3 × 10⁻⁸ (the birthday bound n² / 2⁶⁵)
SEED_BITS = 64


def fresh_seed(rng: np.random.Generator | None = None) -> int:
    """A seed no run is likely to draw twice (:data:`SEED_BITS` random bits): from ``rng``
    where the caller keeps one to reproduce its draws, else from the operating system."""
    if rng is None:
        return secrets.randbits(SEED_BITS)
    return int(rng.integers(0, 2**SEED_BITS, dtype=np.uint64))


class Session:
    """Episodes of one task on one lab.

    ``reset(seed)`` rewinds the lab and draws new hidden truth from the seed and the session's
    ``secret``; the agent sees :meth:`tools`, :meth:`call_tool` and :meth:`state`, none of
    which tells the seed; the trainer alone calls :meth:`score`. A ``submit_<task>`` call ends
    the episode (terminated); exceeding the budget ends it too (truncated). Same secret, same
    seed, same calls ⇒ same results and reward. Without a ``secret`` the session draws one of
    its own: a published list of seeds then reproduces nothing. ``profile``: the physics of
    the task's instruments (a profile file or object, ``labtools.simulators.profile``), for a
    stand-in of a real lab or a calibrated twin; the published profile by default.
    """

    def __init__(
        self,
        task: str | Task,
        *,
        secret: Secret | None = None,
        journal_dir: str | Path | None = None,
        profile: Any = None,
    ) -> None:
        self._secret = _secret_bytes(secret)
        #: the instruments' physics of the task's lab (``None``: its lab file's)
        self.profile = profile
        #: names the secret in journals without telling it (a replay checks it)
        self.secret_id = _secret_id(self._secret)
        self._journal_dir = Path(journal_dir) if journal_dir is not None else None
        self._closed = False
        self._open(task)
        self.episode_id: str | None = None
        self.seed: int | None = None
        self.usage = Usage()
        self._spent: Usage | None = None  # the usage when the episode ended
        self.terminated = False
        self.truncated = False

    def _open(self, task: str | Task, seed: int = 0) -> None:
        """Take the task's lab from the shelf (:mod:`labtools.session.shelf`: a closed session's,
        rewound to seed 0) or build it; episodes rewind it to its checkpoint, or, for a lab
        whose instruments cannot take snapshots, rebuild it."""
        #: the shelf's key for this session's lab (``None``: never shelved)
        self._shelf_key = task if isinstance(task, str) and self.profile is None else None
        #: the lab's labelled stocks, read at the first reset (a new task's lab: anew)
        self._stocks: set[str] = set()
        self._pristine: dict[str, Any] | None
        shelved = SHELF.take(self._shelf_key) if self._shelf_key is not None else None
        if shelved is not None:
            self.task, self.lab, self._pristine = shelved.task, shelved.lab, shelved.pristine
            return
        self.task = load_task(task)
        self.lab = self.task.build_lab(seed, self.profile)
        self.lab.add_instrument(self.task)
        try:
            self._pristine = self.lab.checkpoint()
        except NotSupported:
            self._pristine = None

    def _release(self) -> None:
        """Shelve the lab for the next session of its task, or close it."""
        if self._shelf_key is not None and self._pristine is not None:
            SHELF.put(self._shelf_key, Shelved(self.lab, self.task, self._pristine))
        else:
            self.lab.close()

    # -- the trainer's side --------------------------------------------------------------------
    def reset(
        self, seed: int, task: str | Task | None = None, *, secret: Secret | None = None
    ) -> dict[str, Any]:
        """Start an episode; returns the observation: statement, tool names, budget. ``task``
        switches task, ``secret`` the secret this and later episodes draw their worlds with (a
        split's: :func:`labtools.session.splits.split_secret`)."""
        world_seed, journal = self._begin(seed, task, secret)
        if self._pristine is not None:
            self.lab.rewind(self._pristine, seed=world_seed, journal=journal)
        else:
            self._rebuild(world_seed, journal)
        return self._begun(seed, world_seed)

    async def areset(
        self, seed: int, task: str | Task | None = None, *, secret: Secret | None = None
    ) -> dict[str, Any]:
        """:meth:`reset` on the caller's event loop (an environment server's): the rewound
        lab's instruments are set up again there, not on a helper thread. A lab that must be
        built (another task, a lab that cannot rewind) is built as :meth:`reset` builds it."""
        world_seed, journal = self._begin(seed, task, secret)
        if self._pristine is not None:
            await self.lab.arewind(self._pristine, seed=world_seed, journal=journal)
        else:
            self._rebuild(world_seed, journal)
        return self._begun(seed, world_seed)

    def _begin(
        self, seed: int, task: str | Task | None, secret: Secret | None
    ) -> tuple[int, Path | None]:
        """A reset's checks and its new episode: the task switched to (its lab opened), the
        secret taken; the world's seed and the episode's journal file."""
        if self._closed:
            raise RuntimeError("the session is closed")
        _check_seed(seed)  # both checked before anything changes
        key = _secret_bytes(secret) if secret is not None else self._secret
        if task is not None and load_task(task).id != self.task.id:
            self._release()
            self._open(task)
        self._secret, self.secret_id = key, _secret_id(key)
        self.seed = seed
        self.episode_id = secrets.token_hex(8)  # opaque: neither the seed nor a count
        journal = (
            self._journal_dir / f"{self.episode_id}.jsonl"
            if self._journal_dir is not None
            else None
        )
        return self.world_seed(seed), journal

    def _rebuild(self, world_seed: int, journal: Path | None) -> None:
        """A new lab for a task whose lab cannot rewind."""
        self.lab.close()
        self._open(self.task, world_seed)
        self.task.restore(None)
        self.lab.journal = Journal(journal)

    def _begun(self, seed: int, world_seed: int) -> dict[str, Any]:
        """The episode's start once its lab is ready: the task prepared, the counts zeroed, the
        reset journalled; the first observation."""
        self.task.prepare(self.lab, world_seed)
        self.usage = Usage()
        self._spent = None
        self.terminated = self.truncated = False
        if not self._stocks:  # the labelled stocks come with the lab's configuration
            self._stocks = set(_labels(self.lab.state()))
        self.lab.journal.record(
            {
                "event": "reset",
                "task": self.task.id,
                "seed": seed,
                "secret_id": self.secret_id,
                "episode_id": self.episode_id,
                "time": time.time(),
            }
        )
        return self.observation()

    def world_seed(self, seed: int) -> int:
        """The seed the lab's world is drawn from: a hash of the session's secret and ``seed``
        (64 bits), so that ``seed`` alone reproduces nothing."""
        _check_seed(seed)
        digest = hashlib.sha256(b"labtools/world\0" + self._secret + b"\0" + str(seed).encode())
        return int.from_bytes(digest.digest()[:8], "little")

    def observation(self) -> dict[str, Any]:
        """What the agent is told: the statement, the tool names and the budget."""
        return {
            "task": self.task.statement(self.lab),
            "tools": self.tool_names(),
            "budget": self.task.budget.as_dict(),
        }

    def score(self) -> Reward:
        """The episode's reward from hidden truth and the physical end state (trainer only).

        Never raises: a submission the task cannot score scores 0, the reason in
        ``components["unscorable"]``, and the error is logged with its traceback (it is a bug:
        the task's scoring, or a submit tool that should have refused the submission).
        """
        try:
            return self._score()
        except Exception as exc:
            return Reward.unscorable(exc, task=self.task.id, episode=self.episode_id)

    def _score(self) -> Reward:
        components: dict[str, float | str] = dict(self.task.score(self.lab))
        raw = float(components.pop("raw"))
        if not 0.0 <= raw <= 1.0:  # NaN fails too
            raise ValueError(f"the task's raw score {raw!r} is not within 0–1")
        rubric = self.task.rubric
        if rubric is not None:
            process = self._process(rubric) if self.terminated else {}
            components.update({"outcome": raw, **process})
            raw = rubric.combine(raw, process["process"]) if process else 0.0
        validity = self.task.validity(self.lab) if self.terminated else 0.0
        normalized = self.task.anchors.normalize(raw) if self.terminated else 0.0
        # an ended episode's efficiency is what it spent up to its end: calls a trainer's loop
        # makes past the submission are refused and cost nothing
        spent = self._spent if self.done and self._spent is not None else self.usage
        efficiency = max(0.0, 1.0 - spent.fraction(self.task.budget))
        total = normalized * validity * (0.9 + 0.1 * efficiency)
        return Reward(
            total=total,
            raw=raw if self.terminated else 0.0,
            normalized=normalized,
            validity=validity,
            efficiency=efficiency,
            components=components,
            success=normalized * validity >= self.task.success_at,
        )

    def _process(self, rubric: Rubric) -> dict[str, float]:
        """The rubric's components from this episode's journal and the lab's end state."""
        episode = analyse(
            self.lab.journal.events(),
            resolve=self.lab.data,
            submission=self.task.submission,
            shared=self.lab.shared,
        )
        return rubric.score(episode)

    # -- the agent's side ----------------------------------------------------------------------
    def tool_names(self) -> list[str]:
        return self.lab.tool_names()

    def tools(
        self, format: str = "json-schema", *, read_only: bool = False
    ) -> list[dict[str, Any]]:
        return self.lab.tools(format, read_only=read_only)

    def data(self, handle: str) -> dict[str, Any]:
        """Full data behind a handle in a tool result (``"spec/3"``)."""
        return self.lab.data(handle)

    def call_tool(self, name: str, arguments: object) -> ToolResult:
        return self.lab.run(self.acall_tool(name, arguments))

    # the provider loops and the MCP server take anything with call/acall/tools
    call = call_tool

    async def acall_tool(
        self, name: str, arguments: object, *, progress: ProgressCallback | None = None
    ) -> ToolResult:
        if self.episode_id is None or self.done:
            error = PreconditionFailed(
                "the episode has ended" if self.done else "no episode has started",
                hint="the trainer calls reset(seed) to start one",
            )
            self.usage.calls += 1  # a step taken (OpenEnv's step count), not the episode's
            return ToolResult.failure(error)
        result = await self.lab.acall(name, arguments, progress=progress)
        verb = name.partition("_")[2] if isinstance(name, str) else ""
        self.usage.count(verb, arguments, result, self._stocks)
        if self.lab.clock is not None:
            self.usage.hours = self.lab.clock.now() / 3600.0
        if result.ok and self.task.submission is not None:
            self.terminated = True
        elif self.usage.exceeded(self.task.budget):
            self.truncated = True
        if self.done:
            self._spent = replace(self.usage, wells=set(self.usage.wells))
            self.lab.journal.record(
                {
                    "event": "end",
                    "terminated": self.terminated,
                    "truncated": self.truncated,
                    "usage": self.usage.as_dict(),
                    "reward": self.score().as_dict(),
                }
            )
        return result

    acall = acall_tool

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def state(self) -> dict[str, Any]:
        """Episode id, steps, virtual clock, consumables used. Never hidden truth."""
        return {
            "episode_id": self.episode_id,
            "task": self.task.id,
            "steps": self.usage.calls,
            "virtual_time_s": self.lab.clock.now() if self.lab.clock is not None else None,
            "consumables": self.usage.as_dict(),
            "budget": self.task.budget.as_dict(),
            "terminated": self.terminated,
            "truncated": self.truncated,
        }

    def close(self) -> None:
        """End the session: its lab goes on the shelf (or is closed), and it takes no calls."""
        if self._closed:
            return
        self._closed = True
        self.episode_id = None
        self._release()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_seed(seed: object) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")


def _secret_id(secret: bytes) -> str:
    """Names a secret in journals without telling it (a replay checks it)."""
    return hashlib.sha256(b"labtools/secret-id\0" + secret).hexdigest()[:12]


def _secret_bytes(secret: Secret | None) -> bytes:
    if secret is None:
        return secrets.token_bytes(16)
    if isinstance(secret, str):
        return secret.encode()
    if isinstance(secret, bytes):
        return secret
    raise TypeError(f"secret must be str or bytes, not {type(secret).__name__}")


def _labels(state: dict[str, Any]) -> dict[str, str]:
    """The stock labels any instrument reports (the liquid handler's deck)."""
    for value in state.values():
        if isinstance(value, dict) and isinstance(value.get("labels"), dict):
            return value["labels"]
    return {}
