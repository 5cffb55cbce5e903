"""Gymnasium's vector environments over LabEnv: sync and async give the same episodes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labtools.session.gym import vector_env

TASK = "dye_quantification"
ZERO = {"value": 0, "unit": "micromolar"}
DYES = ("tartrazine", "sunset_yellow", "allura_red", "brilliant_blue")
DECK = json.dumps({"tool": "lh_get_deck", "arguments": {}})
SUBMIT = json.dumps(
    {
        "tool": "submit_dye_quantification",
        "arguments": {"concentrations": dict.fromkeys(DYES, ZERO)},
    }
)


def _run(asynchronous: bool) -> tuple[list, float]:
    env = vector_env(TASK, 2, secret="test-vector", asynchronous=asynchronous)
    try:
        observations, _ = env.reset(seed=[11, 12])
        steps = [(observations, None, None, None)]
        for actions in ((DECK, "not json"), (SUBMIT, DECK), (DECK, SUBMIT), (DECK, DECK)):
            observations, rewards, terminated, truncated, _ = env.step(actions)
            steps.append((observations, rewards.tolist(), terminated.tolist(), truncated.tolist()))
        return steps, _reference_reward()
    finally:
        env.close()


def _reference_reward() -> float:
    """The submission's reward from a plain session on the same secret and seed."""
    from labtools.session.session import Session

    with Session(TASK, secret="test-vector") as session:
        session.reset(11)
        session.call_tool("lh_get_deck", {})
        session.call_tool(*_call(SUBMIT))
        return session.score().total


def _call(action: str) -> tuple[str, dict]:
    call = json.loads(action)
    return call["tool"], call["arguments"]


def test_sync_and_async_vector_envs_agree() -> None:
    sync, reward = _run(asynchronous=False)
    assert _run(asynchronous=True)[0] == sync
    first = [json.loads(o) for o in sync[0][0]]
    assert all("task" in o and "tools" in o for o in first)
    assert json.loads(sync[1][0][0])["ok"]
    assert json.loads(sync[1][0][1])["error"]["code"] == "invalid_arguments"
    _, rewards, terminated, _ = sync[2]
    assert terminated == [True, False] and np.isclose(rewards[0], reward) and rewards[1] == 0
    assert sync[3][2] == [False, True]
    assert "task" in json.loads(sync[3][0][0])  # the ended sub-environment reset itself
    assert "task" in json.loads(sync[4][0][1])


def test_shared_memory_is_refused() -> None:
    with pytest.raises(ValueError, match="shared memory"):
        vector_env(TASK, 2, asynchronous=True, shared_memory=True)
