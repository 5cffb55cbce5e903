"""The TRL environment class, read the way TRL reads it: tools found with
``inspect.getmembers(type(env), inspect.isfunction)``, schemas from transformers'
``get_json_schema``, calls with keyword arguments, rewards from ``environments=``.
No TRL, no torch, no model."""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.registry import task_ids
from labtools.session.trl import (
    CompletionBudgetWarning,
    LabToolEnv,
    completion_tokens,
    environment_factory,
    expert_completion,
    reward,
)

SECRET = "test-trl"


@pytest.fixture(scope="module")
def get_json_schema() -> Callable[[Callable[..., Any]], dict[str, Any]]:
    from transformers.utils import get_json_schema

    return get_json_schema


def _tools(env: LabToolEnv) -> dict[str, Callable[..., str]]:
    """TRL's discovery (``GRPOTrainer.__init__``): every public function of the class."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.mark.parametrize("task", task_ids())
def test_every_tool_has_the_schema_transformers_reads(task: str, get_json_schema: Any) -> None:
    env = environment_factory(task, secret=SECRET)()
    specs = {spec["name"]: spec for spec in env.session.tools("json-schema")}
    tools = _tools(env)
    assert set(tools) == set(specs) == set(env.session.tool_names())
    for name, method in tools.items():
        function = get_json_schema(method)["function"]
        spec, theirs = specs[name], specs[name]["input_schema"]
        assert function["name"] == name
        assert function["description"] == spec["description"].strip()
        ours = function["parameters"]
        assert set(ours["properties"]) == set(theirs["properties"])
        assert set(ours.get("required", [])) == set(theirs.get("required", []))
        for key, prop in ours["properties"].items():
            _agrees(prop, theirs["properties"][key], f"{name}.{key}")


def _agrees(ours: dict[str, Any], theirs: dict[str, Any], where: str) -> None:
    """What get_json_schema can state equals the tool's schema; an object's (or a list of
    objects') own schema follows its description as JSON."""
    assert ours.get("type") == theirs.get("type"), where
    assert ours.get("enum") == theirs.get("enum"), where
    text = " ".join(theirs.get("description", where.split(".")[-1]).split())
    assert ours["description"].startswith(text), where
    items = theirs.get("items", {})
    if theirs.get("type") == "object" or items.get("type") == "object":
        inner = json.loads(ours["description"].split(" Schema: ", 1)[1])
        assert inner == {k: v for k, v in theirs.items() if k != "description"}, where
    elif items:
        assert ours["items"].get("type") == items.get("type"), where
        assert ours["items"].get("enum") == items.get("enum"), where


@pytest.mark.parametrize("task", ["dye_quantification", "indicator_pka"])
def test_a_scripted_rollout_earns_the_sessions_reward(task: str) -> None:
    seed = 3
    with Session(task, secret=SECRET) as session:  # the expert's calls, in process
        statement = session.reset(seed)["task"]
        AGENTS["expert"](session, seed)
        calls = [(e["tool"], e["arguments"]) for e in session.lab.journal.events() if "tool" in e]
        expected = session.score().total

    factory = environment_factory(task, secret=SECRET)
    env, other = factory(), factory()  # TRL's pool: instances share the secret
    row: dict[str, Any] = {
        "seed": seed,
        "prompt": [{"role": "user", "content": ""}],
    }  # a dataset row
    assert env.reset(**row) == statement
    other.reset(seed=seed + 1)
    tools = _tools(env)
    for name, arguments in calls:  # as TRL's tool loop calls them: keyword arguments
        text = tools[name](**json.loads(json.dumps(arguments)))
        assert isinstance(text, str) and json.loads(text) is not None
    assert env.session.terminated
    rewards = reward(completions=["", ""], environments=[env, other], prompts=[[], []])
    assert rewards == [expected, 0.0] and expected > 0.5
    assert (env.get_reward(), other.get_reward()) == (expected, 0.0)  # TRL's own hook
    # the episode has ended: a call after the submission is refused and moves nothing
    after = json.loads(tools["lh_get_deck"]())
    assert after["error"]["code"] and "ended" in after["error"]["message"]
    assert env.get_reward() == expected


@pytest.mark.parametrize("task", ["dye_quantification", "quantify/2/tartrazine+sunset_yellow"])
def test_trl_offers_the_tools_and_no_other_method(task: str) -> None:
    """The methods TRL's GRPOTrainer turns into tools: every public method but ``reset`` and
    ``get_reward`` (its environment-owned reward), as its ``inspect.getmembers`` walk finds
    them (trl/trainer/grpo_trainer.py)."""
    env = environment_factory(task, secret=SECRET)()
    offered = {
        name
        for name, _ in inspect.getmembers(env, predicate=inspect.ismethod)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    assert offered == set(env.session.tool_names())


def test_refusals_and_stray_arguments_come_back_as_text() -> None:
    env = environment_factory("dye_quantification", secret=SECRET)()
    env.reset(seed=1)
    refused = json.loads(env.lh_move_plate(plate="no_such_plate", destination="reader"))  # type: ignore[attr-defined]
    assert refused["error"]["code"] == "unknown_resource" and refused["error"]["field"]
    stray = json.loads(env.lh_get_deck(colour="blue"))  # type: ignore[attr-defined]
    assert stray["error"]["code"] == "invalid_arguments"
    assert env.session.usage.calls == 2 and not env.session.done
    with pytest.raises(ValueError, match="environments"):
        reward(completions=[""])


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A byte-level BPE tokenizer trained here on the tasks' tool catalogue (HF ``tokenizers``,
    wrapped as transformers wraps any): no download, and its tokens are no coarser than a
    general model's on this text."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    corpus = [json.dumps(spec) for spec in Session("dye_quantification").tools("openai-chat")]
    model = tokenizers.Tokenizer(tokenizers.models.BPE())
    model.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel()
    model.train_from_iterator(corpus, tokenizers.trainers.BpeTrainer(vocab_size=2000))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=model)


def test_a_completion_budget_too_small_for_the_expert_is_warned_of(tokenizer: Any) -> None:
    """TRL's default ``max_completion_length`` (512, GRPOConfig [L]) cannot hold the expert's
    dye_quantification episode, whose results count toward it: the factory says so; a budget
    that holds it passes in silence."""
    needed = completion_tokens("dye_quantification", tokenizer)
    texts = expert_completion("dye_quantification")
    assert len(texts) == 10  # five calls and their five results
    assert needed > 512
    with pytest.warns(CompletionBudgetWarning, match=f"take {needed} tokens"):
        environment_factory("dye_quantification", max_completion_length=512, tokenizer=tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompletionBudgetWarning)
        environment_factory("dye_quantification", max_completion_length=needed, tokenizer=tokenizer)
