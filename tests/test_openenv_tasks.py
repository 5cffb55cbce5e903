"""OpenEnv's Task API on labtools' server: OpenEnv's own routes (``/labtools/splits``,
``/num_tasks``, ``/task``, ``/task_range``, ``/tasks``) over the families' instances by split,
and ``reset(split=, index=)`` through OpenEnv's client playing the instance with the split's
secret — the same episode as in process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from episodes import expert_episode
from served import PATIENCE_S, served

from labtools.session.evaluate import DEV_SECRET
from labtools.session.openenv_manifest import MANIFEST
from labtools.session.splits import SPLITS, TEST_SECRET_ENV, split_instance, split_size

TRAIN_SECRET = "test-openenv-tasks"
TEST_SECRET = "an-evaluators-own-secret-0123456789"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    from labtools.session.openenv import app

    with served(app(secret=TRAIN_SECRET, test_secret=TEST_SECRET, max_sessions=4)) as address:
        yield address


def _post(url: str, route: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/labtools/{route}", json=body, timeout=PATIENCE_S)


def _client(url: str) -> Any:
    from openenv.core.mcp_client import MCPToolClient  # type: ignore[import-untyped]

    return MCPToolClient(
        base_url=url,
        connect_timeout_s=PATIENCE_S,
        message_timeout_s=PATIENCE_S,
        websocket_ping_interval_s=None,
    )


def _index(split: str, family: str, level: int) -> int:
    """The first index of ``split`` whose instance is of ``family`` at ``level``."""
    return next(
        i
        for i in range(split_size(split))
        if (name := split_instance(split, i)).family == family and name.level == level
    )


def test_the_splits_and_their_counts_are_the_manifests(url: str) -> None:
    assert httpx.get(f"{url}/list_environments", timeout=PATIENCE_S).json() == ["labtools"]
    splits = httpx.get(f"{url}/labtools/splits", timeout=PATIENCE_S).json()
    declared = json.loads(MANIFEST.read_text("utf-8").split("\n{", 1)[1].join(["{", ""]))
    counts = declared["validation"]["capabilities"]["declared_task_count"]
    assert declared["validation"]["capabilities"]["task_api"] is True
    assert [s["name"] for s in splits] == list(SPLITS) == list(counts)
    assert [s["type"] for s in splits] == ["train", "validation", "test", "test"]
    for split in splits:
        number = _post(url, "num_tasks", {"split": split["name"]}).json()["num_tasks"]
        assert number == split["num_tasks"] == counts[split["name"]] > 10_000
    # test-ood holds instances no other split has; the other three share theirs
    assert counts["train"] == counts["validation"] == counts["test-id"]
    assert counts["train"] + counts["test-ood"] == sum(
        f["instances"] for f in declared["labtools"]["families"]
    )
    assert httpx.get(f"{url}/nope/splits", timeout=PATIENCE_S).status_code == 404


def test_tasks_by_index_and_range(url: str) -> None:
    last = split_size("test-ood") - 1
    task = _post(url, "task", {"split": "test-ood", "index": last}).json()["task"]
    name = split_instance("test-ood", last)
    assert task == {
        "id": str(name),
        "index": last,
        "split": "test-ood",
        "family": name.family,
        "level": name.level,
        "structure": name.structure,
    }
    assert task["id"].startswith(f"{task['family']}/{task['level']}/")
    window = _post(url, "task_range", {"split": "train", "start": 5, "stop": 9}).json()["tasks"]
    assert [t["index"] for t in window] == [5, 6, 7, 8]
    assert [t["id"] for t in window] == [str(split_instance("train", i)) for i in range(5, 9)]
    tail = _post(url, "task_range", {"split": "train", "start": -2}).json()["tasks"]
    assert [t["index"] for t in tail] == [split_size("train") - 2, split_size("train") - 1]
    preview = _post(url, "tasks", {"split": "validation"}).json()
    assert preview["env_name"] == "labtools" and len(preview["tasks"]) == 1000
    # the families' instances, each once per split, every structure of a level in order
    ids = [t["id"] for t in preview["tasks"]]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    ("route", "body", "says"),
    [
        ("task", {"split": "train", "index": 10**9}, "Invalid task index"),
        ("task", {"split": "train", "index": -1}, "Invalid task index"),
        ("task", {"split": "holdout", "index": 0}, "unknown split 'holdout'"),
        ("num_tasks", {"split": "TRAIN"}, "unknown split 'TRAIN'"),
        ("task_range", {"split": "train"}, "at most 1000 per request"),
        ("task_range", {"split": "train", "start": 0, "stop": 1001}, "at most 1000"),
    ],
)
def test_a_bad_task_request_is_a_400_naming_it(
    url: str, route: str, body: dict[str, Any], says: str
) -> None:
    response = _post(url, route, body)
    assert response.status_code == 400 and says in response.json()["detail"]


def _play(url: str, seed: int, reset: dict[str, Any], calls: list[tuple[str, Any]]) -> Any:
    from openenv.core.env_server import CallToolAction  # type: ignore[import-untyped]

    with _client(url).sync() as env:
        first = env.reset(seed=seed, **reset)
        steps = [env.step(CallToolAction(tool_name=n, arguments=a)) for n, a in calls]
    return first, steps


@pytest.mark.parametrize(("split", "secret"), [("validation", DEV_SECRET), ("test-ood", None)])
def test_a_splits_instance_is_the_same_episode_as_in_process(
    url: str, split: str, secret: str | None
) -> None:
    """``reset(split=, index=)`` through OpenEnv's client plays that instance with the split's
    secret: the expert's calls give the results and the reward they give in process."""
    index = _index(split, "quantify", 1)
    instance = str(split_instance(split, index))
    alone = expert_episode(instance, 7, secret or TEST_SECRET)
    first, steps = _play(url, 7, {"split": split, "index": index}, alone.calls)
    assert first.observation.task_id == instance
    assert [s.observation.result for s in steps] == [r.to_dict() for r in alone.results]
    assert steps[-1].done and steps[-1].reward == alone.reward.total > 0.5


def test_train_worlds_are_the_servers_own(url: str) -> None:
    """``train`` draws with the server's secret: the same seed and index give the same world
    on this server, and another world than the public ``validation`` split's."""
    index = _index("train", "quantify", 1)
    instance = str(split_instance("train", index))
    alone = expert_episode(instance, 3, TRAIN_SECRET)
    _, steps = _play(url, 3, {"split": "train", "index": index}, alone.calls)
    assert steps[-1].reward == alone.reward.total
    public = expert_episode(instance, 3, DEV_SECRET)
    assert public.reward.total != alone.reward.total


def test_a_refused_reset_changes_nothing() -> None:
    """A test split without the evaluator's secret, an unknown split, an index out of range or
    both a task and a split: an error through OpenEnv's client, and the episode running on
    that connection goes on as it was."""
    from labtools.session.openenv import app

    with served(app(secret=TRAIN_SECRET)) as url, _client(url).sync() as env:
        env.reset(seed=1, split="validation", index=0)
        env.call_tool("lh_get_deck")
        before = env.state()
        for reset, says in [
            ({"split": "test-id", "index": 0}, TEST_SECRET_ENV),
            ({"split": "valid", "index": 0}, "unknown split"),
            ({"split": "validation", "index": split_size("validation")}, "has instances 0 to"),
            ({"split": "validation", "index": 0, "task": "dye_quantification"}, "not both"),
            ({"index": 4}, "give split= too"),
        ]:
            with pytest.raises(RuntimeError, match=says):
                env.reset(seed=2, **reset)
            assert env.state() == before
        assert "labware" in env.call_tool("lh_get_deck")


def test_a_split_without_an_index_plays_one_of_its_instances() -> None:
    from labtools.session.family import InstanceName
    from labtools.session.openenv import LabEnvironment
    from labtools.session.registry import load_family

    env = type("WithTestSecret", (LabEnvironment,), {"test_secret": TEST_SECRET})()
    names = {env.reset(seed=s, split="test-ood").task_id for s in range(4)}
    env.close()
    assert len(names) > 1
    for name in map(InstanceName.parse, names):
        assert load_family(name.family).held_out(name.structure)


@pytest.mark.parametrize("given", [DEV_SECRET, DEV_SECRET.encode(), "short"])
def test_a_server_refuses_a_public_or_short_test_secret(given: str | bytes) -> None:
    from labtools.session.openenv import app
    from labtools.session.splits import MissingSecret

    with pytest.raises(MissingSecret, match="public or short"):
        app(test_secret=given)
