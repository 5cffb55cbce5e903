"""A model's episodes beside the scripted agents' (``labtools eval --model PROVIDER:NAME``).

A :class:`Model` names a provider loop of :mod:`labtools.providers` and a model. A
:class:`ModelRunner` plays the same :class:`~labtools.session.pool.Episode` s the scripted agents
play (the agent is the model's label) on threads in this process, each thread with sessions of
its own; an episode that an API error ends (after the SDK's own retries) is a result with its
``error``, scored as it stood, never an exception.

    with ModelRunner(Model.parse("openai:qwen3", base_url="http://127.0.0.1:8000/v1")) as run:
        results = run.run(episodes("dye_quantification", [run.model.label], range(20)))
"""

from __future__ import annotations

import importlib
import os
import statistics
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from labtools.errors import MissingExtra
from labtools.providers.calls import AgentRun
from labtools.session.evaluate import EvalReport, summarize
from labtools.session.pool import Episode, EpisodeResult, TaskEvaluation, Worker
from labtools.session.rollout import play_model
from labtools.session.session import Session

__all__ = [
    "PLACEHOLDER_KEY",
    "PROVIDERS",
    "MissingKey",
    "Model",
    "ModelRunner",
    "model_report",
    "with_model",
]


@dataclass(frozen=True)
class _Provider:
    loop: str  # the module of labtools.providers
    sdk: str  # the module the client comes from
    extra: str  # labtools' extra that installs it
    keys: tuple[str, ...]  # the environment variables of its API key, in order
    options: tuple[tuple[str, str], ...] = ()  # the loop's own options


#: ``openai``: Chat Completions (OpenAI, vLLM, SGLang, Ollama…); ``openai-responses``: OpenAI's
#: Responses API
PROVIDERS = {
    "openai": _Provider("openai", "openai", "openai", ("OPENAI_API_KEY",), (("api", "chat"),)),
    "openai-responses": _Provider(
        "openai", "openai", "openai", ("OPENAI_API_KEY",), (("api", "responses"),)
    ),
    "anthropic": _Provider("anthropic", "anthropic", "anthropic", ("ANTHROPIC_API_KEY",)),
    "gemini": _Provider("gemini", "google.genai", "gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
}
#: the API key sent to a ``base_url`` endpoint when the environment has none (vLLM, SGLang
#: and Ollama check none unless told to)
PLACEHOLDER_KEY = "none"


class MissingKey(ValueError):
    """The provider's API key is not in the environment."""


@dataclass(frozen=True)
class Model:
    """``provider`` (one of :data:`PROVIDERS`) and the model's ``name``; ``base_url``: another
    endpoint than the provider's; ``max_retries``: the SDK's retries of a transient failure
    (connection errors, 408, 429, 5xx), with its own backoff; ``max_turns``: model turns per
    episode (default: the task's call budget)."""

    provider: str
    name: str
    base_url: str | None = None
    max_retries: int = 5
    max_turns: int | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(
                f"unknown provider {self.provider!r}; providers: {', '.join(PROVIDERS)}"
            )
        if not self.name:
            raise ValueError("the model has no name (PROVIDER:NAME)")

    @classmethod
    def parse(cls, spec: str, **options: Any) -> Model:
        """``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``: the first colon splits."""
        provider, colon, name = spec.partition(":")
        if not colon:
            raise ValueError(f"{spec!r} is not PROVIDER:NAME (providers: {', '.join(PROVIDERS)})")
        return cls(provider, name, **options)

    @property
    def label(self) -> str:
        """The model's agent name in reports and exported records."""
        return f"{self.provider}:{self.name}"

    def client(self) -> Any:
        """The provider SDK's client: the key from the environment (:data:`PLACEHOLDER_KEY`
        for a ``base_url`` without one), retries by the SDK."""
        spec = PROVIDERS[self.provider]
        key = next((os.environ[k] for k in spec.keys if os.environ.get(k)), None)
        if key is None:
            if self.base_url is None:
                raise MissingKey(f"{self.label} needs an API key: set {' or '.join(spec.keys)}")
            key = PLACEHOLDER_KEY
        try:
            sdk = importlib.import_module(spec.sdk)
        except ImportError as exc:
            raise MissingExtra(f"{self.label} needs {spec.sdk} ({exc})", extra=spec.extra) from exc
        if self.provider == "gemini":
            return _gemini_client(key, self.base_url, self.max_retries)
        client_class = sdk.Anthropic if self.provider == "anthropic" else sdk.OpenAI
        return client_class(api_key=key, base_url=self.base_url, max_retries=self.max_retries)

    def play(self, client: Any, session: Session, prompt: str, run: AgentRun) -> AgentRun:
        """The provider loop on ``session``'s current episode (see :func:`play_model`)."""
        spec = PROVIDERS[self.provider]
        return play_model(
            client,
            self.name,
            session,
            prompt,
            provider=spec.loop,
            max_turns=self.max_turns,
            run=run,
            **dict(spec.options),
        )


def _gemini_client(key: str, base_url: str | None, max_retries: int) -> Any:
    """google-genai retries through ``HttpRetryOptions`` (``attempts`` counts the first; a
    google-genai too old to have them retries as it does by default)."""
    from google import genai
    from google.genai import types

    options = getattr(types, "HttpRetryOptions", None)
    retry = {"retry_options": options(attempts=max_retries + 1)} if options else {}
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url, **retry))


class ModelRunner:
    """A model's episodes on ``concurrency`` threads of this process, each keeping its own
    sessions (a :class:`~labtools.session.pool.Worker`; the SDK's client is shared, as its
    SDK allows). Close it (or use ``with``) to close the sessions."""

    def __init__(self, model: Model, concurrency: int = 1, *, keep: int = 1) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, not {concurrency}")
        self.model = model
        self._client = model.client()
        self._keep = keep
        self._local = threading.local()
        self._workers: list[Worker] = []
        self._guard = threading.Lock()
        self._executor = ThreadPoolExecutor(concurrency, thread_name_prefix="labtools-model")

    def submit(
        self, episodes: Iterable[Episode], *, trajectories: bool = False
    ) -> list[Future[EpisodeResult]]:
        """Start ``episodes`` (their agent is ignored: the model plays); their futures in order."""
        return [self._executor.submit(self._play, e, trajectories) for e in episodes]

    def run(
        self, episodes: Iterable[Episode], *, trajectories: bool = False
    ) -> list[EpisodeResult]:
        return [f.result() for f in self.submit(episodes, trajectories=trajectories)]

    def _worker(self) -> Worker:
        worker: Worker | None = getattr(self._local, "worker", None)
        if worker is None:
            worker = self._local.worker = Worker(self._keep)
            with self._guard:
                self._workers.append(worker)
        return worker

    def _play(self, episode: Episode, trajectories: bool) -> EpisodeResult:
        session = self._worker().session(episode.task, episode.secret)
        observation = session.reset(episode.seed)
        run, error = AgentRun(), None
        try:
            self.model.play(self._client, session, observation["task"], run)
        except Exception as exc:  # the API's, after the SDK's retries: this episode's error
            error = f"{type(exc).__name__}: {exc}"
        reward = session.score()
        record = None
        if trajectories:
            from labtools.session.trajectory import from_session

            record = from_session(session, observation["task"])
            record.update(
                agent=self.model.label,
                tokens=run.usage.as_dict(),
                turns=run.turns,
                stopped=None if error else run.stopped,
                error=error,
            )
        return EpisodeResult(
            episode=replace(episode, agent=self.model.label),
            task=session.task.id,
            reward=reward,
            usage=session.usage.as_dict(),
            terminated=session.terminated,
            truncated=session.truncated,
            episode_id=session.episode_id or "",
            trajectory=record,
            tokens=run.usage.as_dict(),
            error=error,
        )

    def close(self) -> None:
        self._executor.shutdown(cancel_futures=True)
        with self._guard:
            for worker in self._workers:
                worker.close()
            self._workers.clear()

    def __enter__(self) -> ModelRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def model_report(task: str, results: Sequence[EpisodeResult], k: int = 3) -> EvalReport:
    """The :class:`~labtools.session.evaluate.EvalReport` of a model's episodes on ``task``
    (a task or a family level), as the scripted agents' are made, with the mean tokens per
    episode and the count of episodes an error ended."""
    agent = results[0].episode.agent if results else "model"
    report = summarize(task, agent, [r.reward for r in results], [r.usage for r in results], k)
    tokens = [r.tokens or {} for r in results]
    return replace(
        report,
        mean_tokens={key: statistics.fmean(t.get(key, 0) for t in tokens) for key in tokens[0]},
        errors=sum(r.error is not None for r in results),
    )


def with_model(evaluation: TaskEvaluation, results: list[EpisodeResult], k: int) -> TaskEvaluation:
    """``evaluation`` with the model's row after the scripted agents' and its results after
    theirs."""
    report = model_report(evaluation.task, results, k)
    return TaskEvaluation(
        task=evaluation.task,
        reports={**evaluation.reports, report.agent: report},
        results=[*evaluation.results, *results],
    )
