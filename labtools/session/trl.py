"""A TRL ``environment_factory`` over sessions: one method per tool, the reward at the end.

TRL (``GRPOTrainer(environment_factory=...)``) builds instances with no arguments, calls
``reset(**row)`` with each dataset row, scores a finished rollout with the instance's
``get_reward()`` (the environment owns its reward: ``reward_funcs`` is then optional; the
module-level :func:`reward` does the same for trainers that take reward functions only), and
offers the model every other public method of the class as a tool, its JSON schema read from
the signature and the Google-style docstring (transformers' ``get_json_schema``).
:func:`environment_factory` makes that class for a task: each tool's parameters are typed from
its input schema; a parameter that is an object, or a list of objects, is a ``dict`` (or a
``list`` of them) — ``get_json_schema`` cannot state their inner schema, so the parameter's
description ends with it as JSON. Nothing here imports TRL (the ``trl`` extra installs it and
transformers). TRL's trainer has no episode-end hook: an episode ends at its submission or its
budget, and later calls are refused and cost nothing.

TRL counts the tool results toward ``max_completion_length``: a budget the task's expert
episode does not fit in ends every episode before its submission, with reward 0 and no word
from TRL. :func:`completion_tokens` measures that episode with the trainer's tokenizer, and
:func:`environment_factory` warns (:class:`CompletionBudgetWarning`) when told a budget it
exceeds.
"""

from __future__ import annotations

import inspect
import json
import keyword
import operator
import secrets
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol

from labtools.providers.calls import result_json
from labtools.result import ToolResult
from labtools.session.session import Secret, Session, fresh_seed

__all__ = [
    "CompletionBudgetWarning",
    "LabToolEnv",
    "completion_tokens",
    "environment_factory",
    "expert_completion",
    "reward",
]


class CompletionBudgetWarning(UserWarning):
    """TRL's ``max_completion_length`` cannot hold the task's expert episode."""


class Tokenizer(Protocol):
    """What :func:`completion_tokens` needs of a tokenizer (a transformers one has it)."""

    def __call__(self, text: str, *, add_special_tokens: bool = ...) -> Any: ...


_SCALARS: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
#: names TRL gives a meaning of its own on an environment class
_RESERVED = frozenset({"reset", "get_reward", "session", "task"})


class LabToolEnv:
    """One :class:`~labtools.session.Session` per instance, rewound by :meth:`reset`; the
    tools are methods of the subclass :func:`environment_factory` makes. ``session`` is the
    trainer's: :func:`reward` reads its score."""

    task: ClassVar[str]
    _secret: ClassVar[Secret]

    def __init__(self) -> None:
        self.session = Session(self.task, secret=self._secret)

    def reset(self, seed: int | None = None, **row: Any) -> str:
        """Start an episode on the row's ``seed`` (``None``: a fresh 64-bit one); the other columns
        (``prompt``, ...) are ignored. Returns the task's statement, which TRL adds to the
        prompt."""
        episode_seed = operator.index(seed) if seed is not None else fresh_seed()
        return str(self.session.reset(episode_seed)["task"])

    def get_reward(self) -> float:
        """The episode's ``score().total`` (0 for an episode that did not end by a submission):
        what TRL calls once per finished rollout when the environment owns its reward. An
        episode ends at its submission or its budget; every tool call after that is refused
        ("the episode has ended"), so a rollout that goes on changes nothing."""
        return float(self.session.score().total)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """The text a model reads back: the data, or ``{"error": {code, message, field,
        hint}}`` (a refusal, which changes nothing), compact JSON."""
        return result_json(self.session.call_tool(name, arguments))


def reward(
    completions: list[Any] | None = None, environments: list[LabToolEnv] | None = None, **_: Any
) -> list[float]:
    """TRL's reward function over the rollouts' environments: each session's
    ``score().total`` (0 for an episode that did not end by a submission)."""
    if environments is None:
        raise ValueError("reward needs environments= (GRPOTrainer with environment_factory)")
    return [env.get_reward() for env in environments]


def expert_completion(task: str, seed: int = 0) -> list[str]:
    """What the model writes and reads after the prompt in ``task``'s expert episode (seed
    ``seed`` of a secret of its own): each call as ``{"name", "arguments"}`` JSON, each result
    as the text a tool method returns."""
    texts = []
    with Session(task, secret="completion budget") as session:
        session.reset(seed)
        session.task.expert(session)
        for event in session.lab.journal.events():
            if "tool" not in event:
                continue
            call = {"name": event["tool"], "arguments": event.get("arguments")}
            texts.append(json.dumps(call, separators=(",", ":"), ensure_ascii=False))
            result = ToolResult(bool(event.get("ok")), event.get("data"), event.get("error"))
            texts.append(result_json(result))
    return texts


def completion_tokens(task: str, tokenizer: Tokenizer) -> int:
    """Tokens of ``task``'s expert episode (:func:`expert_completion`) by ``tokenizer``: a
    floor of what TRL counts toward ``max_completion_length`` (the chat template's own tokens
    around each call and result come on top)."""
    return sum(
        len(tokenizer(text, add_special_tokens=False)["input_ids"])
        for text in expert_completion(task)
    )


def environment_factory(
    task: str = "dye_quantification",
    *,
    secret: Secret | None = None,
    max_completion_length: int | None = None,
    tokenizer: Tokenizer | None = None,
) -> type[LabToolEnv]:
    """The class TRL's ``environment_factory`` takes, for ``task``: instances take no
    arguments and draw their truth with ``secret`` (without one, a secret drawn here, shared
    by every instance, so a row's seed means one episode). One class per task: for several,
    pass TRL a dict of them and an ``environment`` column. Given the trainer's
    ``max_completion_length`` and ``tokenizer``, warns (:class:`CompletionBudgetWarning`)
    where the expert's episode needs more (:func:`completion_tokens`)."""
    if max_completion_length is not None and tokenizer is not None:
        needed = completion_tokens(task, tokenizer)
        if needed > max_completion_length:
            warnings.warn(
                f"max_completion_length={max_completion_length} cannot hold {task}'s expert "
                f"episode: its calls and results alone take {needed} tokens, and TRL counts "
                "the results toward the limit, so episodes end before their submission and "
                f"score 0; give at least {needed} plus the chat template's tokens",
                CompletionBudgetWarning,
                stacklevel=2,
            )
    shared = secret if secret is not None else secrets.token_bytes(16)
    with Session(task, secret=shared) as probe:
        task_id, specs = probe.task.id, probe.tools("json-schema")
    namespace: dict[str, Any] = {"task": task, "_secret": shared, "__module__": __name__}
    cls_name = f"LabToolEnv_{task_id}"
    for spec in specs:
        if spec["name"] in _RESERVED or not spec["name"].isidentifier():
            raise ValueError(f"the tool {spec['name']!r} cannot be a method of {cls_name}")
        namespace[spec["name"]] = _method(spec, cls_name)
    return type(cls_name, (LabToolEnv,), namespace)


def _method(spec: dict[str, Any], cls_name: str) -> Callable[..., str]:
    """A method calling the tool ``spec`` names, with the signature and docstring
    ``get_json_schema`` reads."""
    name, schema = spec["name"], spec["input_schema"]
    required = set(schema.get("required", []))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    properties = schema.get("properties", {})
    for key in sorted(properties, key=lambda k: k not in required):  # required ones first
        if keyword.iskeyword(key) or not key.isidentifier() or key == "self":
            raise ValueError(f"the tool {name!r} has a parameter {key!r} Python cannot name")
        hint = _hint(properties[key])
        optional = key not in required
        annotations[key] = hint | None if optional else hint
        default = None if optional else inspect.Parameter.empty
        parameters.append(
            inspect.Parameter(
                key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[key]
            )
        )
        lines.append(f"    {key}: {_describe(key, properties[key])}")

    def method(self: LabToolEnv, **arguments: Any) -> str:
        return self._call(name, {k: v for k, v in arguments.items() if v is not None})

    method.__name__ = name
    method.__qualname__ = f"{cls_name}.{name}"
    method.__annotations__ = {**annotations, "return": str}
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    args = "\n\nArgs:\n" + "\n".join(lines) if lines else ""
    method.__doc__ = (
        f"{spec.get('description') or spec.get('title') or name}{args}\n\n"
        'Returns:\n    The result as JSON: the data, or {"error": {code, message, field, hint}}.'
    )
    return method


def _hint(schema: dict[str, Any]) -> Any:
    """The Python type ``get_json_schema`` turns back into ``schema`` as far as it can."""
    kind = schema.get("type")
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        return list[_hint(schema.get("items", {}))]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    return Any


def _describe(key: str, schema: dict[str, Any]) -> str:
    """One line (``get_json_schema`` reads a line starting ``word:`` as the next argument);
    an object's or a list of objects' own schema follows as JSON."""
    text = " ".join((schema.get("description") or key).split())
    items = schema.get("items", {})
    if schema.get("type") == "object" or items.get("type") == "object":
        inner = {k: v for k, v in schema.items() if k != "description"}
        text += " Schema: " + json.dumps(inner, separators=(",", ":"), ensure_ascii=False)
    return text
