"""Nothing an agent can see tells it the seed or the hidden truth, on any task or adapter.

Two sessions with different secrets draw different truths for the same seed: every surface
that is not a measurement must read the same in both (``leaks.probe``), through the session,
the MCP plane, Gymnasium and OpenEnv alike. Then whole expert episodes are searched for the
seed, the world seed and the hidden values written out (``leaks.assert_not_revealed``).
"""

from __future__ import annotations

import contextlib
import json

import anyio
import pytest
from leaks import (
    assert_not_revealed,
    dumps,
    hidden_numbers,
    probe,
    seen_by_agent,
    without_data,
    without_id,
)
from mcp import Client

from labtools.errors import ToolError
from labtools.server import build_server
from labtools.session import Session
from labtools.session.agents import AGENTS
from labtools.session.gym import LabEnv
from labtools.session.registry import task_ids

SEED = 48611  # distinctive: a number no reading or label would show by chance
SECRETS = ("truth one", "truth two")
#: every task, and an instance of each family (with a second absorber, at a middle level)
TASKS = [
    *task_ids(),
    "quantify/3/tartrazine+sunset_yellow",
    "mixture/2/tartrazine+brilliant_blue+methylene_blue",
    "equilibrium/3/phenol_red+sunset_yellow+ph3-10",
    "hypothesis/2/tartrazine+brilliant_blue+methylene_blue",
    "identify/3/tartrazine+sunset_yellow+quinoline_yellow",
    "inhibition/3/alp+l_phenylalanine+sunset_yellow",
    "ic50/3/alp+levamisole+tartrazine",
    "kinetics/3/beta_gal+sunset_yellow",
    "activity/3/chymotrypsin+sunset_yellow",
    "arrhenius/3/chymotrypsin+29to41",
    "thermal/3/chymotrypsin+49C",
    "screen/3/2+sunset_yellow+p50",
    "pipette/3/channel3+tip10+10ul",
    "ph/3/phenol_red+sunset_yellow+ph4-10+acid",
    "isosbestic/3/bromothymol_blue+ph4-10",
    "target/3/sunset_yellow+brilliant_blue+peaks",
    "stability/3/tartrazine+sunset_yellow+quinoline_yellow",
    "fluorimetry/3/fluorescein+sunset_yellow",
    "range/3/tartrazine+200ul",
    "fluor_pka/3/pyranine+tartrazine+ph3-10",
    "detection_limit/3/tartrazine+shoulder+200ul",
    "cuvette/3/tartrazine",
    "luminescence/3/n4+edge+dec2",
    "wide_range/3/nadh+4+even+nad",
]


@pytest.mark.parametrize("task", TASKS)
def test_what_the_agent_sees_does_not_depend_on_the_truth(task: str) -> None:
    seen = []
    for secret in SECRETS:
        with Session(task, secret=secret) as session:
            seen.append(probe(session, SEED))
            truth = session.lab.shared["world"].hidden_truth()
    with Session(task, secret=SECRETS[0]) as session:
        probe(session, SEED)
        assert session.lab.shared["world"].hidden_truth() != truth, "the secrets drew one truth"
    differing = [name for name in seen[0] if seen[0][name] != seen[1].get(name)]
    assert not differing, f"{task}: these surfaces depend on the hidden truth: {differing}"


@pytest.mark.parametrize("task", TASKS)
def test_the_adapters_show_nothing_that_depends_on_the_truth(task: str) -> None:
    views = [_adapter_views(task, secret) for secret in SECRETS]
    differing = [name for name in views[0] if views[0][name] != views[1][name]]
    assert not differing, f"{task}: these adapter views depend on the hidden truth: {differing}"


@pytest.mark.parametrize("agent", ["expert", "naive", "random"])
@pytest.mark.parametrize("task", TASKS)
def test_an_episode_never_writes_out_the_seed_or_the_truth(task: str, agent: str) -> None:
    with Session(task, secret=SECRETS[0]) as session:
        for seed in (SEED, SEED + 1):
            observation = session.reset(seed)
            with contextlib.suppress(ToolError):  # a protocol may stop on a refusal
                AGENTS[agent](session, seed)
            truth = session.lab.shared["world"].hidden_truth()
            world_seed = session.world_seed(seed)
            seeds = (seed, world_seed, int(str(world_seed)[:8]))
            assert_not_revealed(seen_by_agent(session, observation), hidden_numbers(truth), seeds)
            assert session.episode_id is not None and str(seed) not in session.episode_id


def _adapter_views(task: str, secret: str) -> dict[str, str]:
    """Gym's and OpenEnv's observations and infos, and the session's MCP resources, after the
    same truth-independent calls (episode ids left out: they are random by design)."""
    views: dict[str, str] = {}
    env = LabEnv(task, secret=secret)
    observation, info = env.reset(seed=SEED)
    views["gym/reset"] = _statement_free(observation) + dumps(without_id(info))
    text, reward, *_, step_info = env.step(json.dumps({"tool": "lh_get_deck", "arguments": {}}))
    views["gym/step"] = text + dumps([reward, step_info])
    env.close()
    views.update(_openenv_views(task, secret))
    return views


def _openenv_views(task: str, secret: str) -> dict[str, str]:
    """OpenEnv's observations and state as its server sends them, and the session's MCP
    plane (OpenEnv is imported here, not at collection: it takes seconds)."""
    from openenv.core.env_server.serialization import (  # type: ignore[import-untyped]
        serialize_observation,
    )

    from labtools.session.openenv import CallToolAction, LabEnvironment, ListToolsAction

    env = LabEnvironment(task, secret=secret)
    first = serialize_observation(env.reset(seed=SEED, episode_id="probe"))
    first["observation"]["task"] = without_data(first["observation"]["task"])
    listed = serialize_observation(env.step(ListToolsAction()))
    deck = serialize_observation(env.step(CallToolAction(tool_name="lh_get_deck", arguments={})))
    views = {
        "openenv/reset": dumps(first),
        "openenv/tools": dumps(listed),
        "openenv/step": dumps(deck),
        "openenv/state": dumps(env.state.model_dump()),
    }
    views.update(anyio.run(_mcp_views, env.session))
    env.close()
    return views


async def _mcp_views(session: Session) -> dict[str, str]:
    async with Client(build_server(session)) as client:
        resources = await client.list_resources()
        state = await client.read_resource("labtools://state")
        listed = await client.list_tools()
    text = json.loads(state.contents[0].text)  # type: ignore[union-attr]
    return {
        "mcp/resources": dumps([r.uri for r in resources.resources]),
        "mcp/state": dumps(without_id(text)),
        "mcp/tools": dumps([t.model_dump(mode="json") for t in listed.tools]),
    }


def _statement_free(observation: str) -> str:
    """A Gym observation with its statement's data (colour_matching's target) out."""
    parsed = json.loads(observation)
    parsed["task"] = without_data(parsed["task"])
    return dumps(parsed)
