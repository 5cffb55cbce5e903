"""Confirmation of irreversible actions: the lab configuration's ``confirm`` list, and the MCP
server asking its host (elicitation on 2025-11-25, ``InputRequiredResult`` on 2026-07-28) and
never running such a tool unconfirmed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from faults import Slow
from mcp import Client
from mcp_helpers import refusal

from labtools import Lab
from labtools.config import ConfigError
from labtools.server import build_server

SPEND = {"units": 30}
LAB = """
[instruments.reagent]
class = "faults:Reagent"

[instruments.slow]
class = "faults:Slow"
"""


def confirming_lab(tmp_path: Path, confirm: str = '["reagent_spend", "slow_count"]') -> Path:
    path = tmp_path / "confirm_lab.toml"
    path.write_text(f"confirm = {confirm}\n{LAB}", encoding="utf-8")
    return path


def test_the_configuration_lists_tools_to_confirm(tmp_path: Path) -> None:
    with Lab.load(confirming_lab(tmp_path)) as lab:
        assert lab.needs_confirmation("reagent_spend") and lab.needs_confirmation("slow_count")
        assert not lab.needs_confirmation("faults_fail")
        assert lab.call("reagent_spend", SPEND).ok  # Python callers have decided already
    virtual = Lab.virtual(0)
    assert not any(virtual.needs_confirmation(name) for name in virtual.tool_names())
    virtual.close()


@pytest.mark.parametrize(
    "confirm, expected",
    [
        (
            '["reagent_spent"]',
            "confirm[0]: no tool named 'reagent_spent'; did you mean reagent_spend",
        ),
        ('["reagent_spend", "reader_fly"]', "confirm[1]: no tool named 'reader_fly'"),
        ('"reagent_spend"', "confirm: lists tool names"),
        ("[1]", "confirm: lists tool names"),
    ],
)
def test_a_confirm_list_naming_no_tool_is_a_config_error(
    tmp_path: Path, confirm: str, expected: str
) -> None:
    path = confirming_lab(tmp_path, confirm)
    with pytest.raises(ConfigError) as caught:
        Lab.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)


class Host:
    """An elicitation callback answering as a person would."""

    def __init__(self, action: str, confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


async def state(client: Client) -> dict:
    contents = (await client.read_resource("labtools://state")).contents
    return json.loads(contents[0].text)


def run(tmp_path: Path, mode: str, host: Host | None, check) -> Lab:
    lab = Lab.load(confirming_lab(tmp_path))

    async def main() -> None:
        server = build_server(lab)
        async with Client(server, mode=mode, elicitation_callback=host) as client:
            await check(client)

    try:
        anyio.run(main)
    finally:
        lab.close()
    return lab


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_accepted_confirmation_runs_the_tool(tmp_path: Path, mode: str) -> None:
    host = Host("accept")

    async def check(client: Client) -> None:
        spent = await client.call_tool("reagent_spend", SPEND)
        assert not spent.is_error, spent
        assert spent.structured_content == {"left": 70}

    lab = run(tmp_path, mode, host, check)
    assert len(host.asked) == 1
    asked = host.asked[0]
    assert "reagent_spend" in asked.message and '"units": 30' in asked.message
    assert asked.requested_schema["required"] == ["confirm"]
    assert lab.instruments["reagent"].left == 70


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(
    "action, ticked, said",
    [
        ("decline", True, "declined"),
        ("cancel", True, "dismissed"),
        ("accept", False, "did not tick"),
    ],
    ids=["decline", "cancel", "unticked"],
)
def test_a_refused_confirmation_changes_nothing(
    tmp_path: Path, mode: str, action: str, ticked: bool, said: str
) -> None:
    host = Host(action, ticked)

    async def check(client: Client) -> None:
        before = await state(client)
        refused = await client.call_tool("reagent_spend", SPEND)
        error = refusal(refused)
        assert error["code"] == "precondition_failed" and said in error["message"]
        assert "nothing was done" in error["message"] and error["hint"]
        assert await state(client) == before

    lab = run(tmp_path, mode, host, check)
    assert lab.instruments["reagent"].left == 100
    assert len(host.asked) == 1 and lab.journal.events() == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_host_that_cannot_ask_is_refused_and_nothing_changes(tmp_path: Path, mode: str) -> None:
    async def check(client: Client) -> None:
        before = await state(client)
        refused = await client.call_tool("reagent_spend", SPEND)
        error = refusal(refused)
        assert error["code"] == "precondition_failed"
        assert "cannot ask" in error["message"] and "elicitation" in error["hint"]
        assert await state(client) == before

    lab = run(tmp_path, mode, None, check)
    assert lab.instruments["reagent"].left == 100 and lab.journal.events() == []


def test_a_call_refused_anyway_asks_no_one(tmp_path: Path) -> None:
    host = Host("accept")

    async def check(client: Client) -> None:
        bad = await client.call_tool("reagent_spend", {"units": "thirty"})
        assert refusal(bad)["code"] == "invalid_arguments"

    run(tmp_path, "legacy", host, check)
    assert host.asked == []


def test_a_task_needing_confirmation_is_asked_before_it_starts() -> None:
    async def main() -> None:
        with Lab([Slow("slow")], confirm=["slow_count"]) as lab:
            host = Host("decline")
            async with Client(build_server(lab), mode="legacy", elicitation_callback=host) as c:
                params = {"name": "slow_count", "arguments": {"steps": 2}, "task": {}}
                answer = await c.session._dispatcher.send_raw_request("tools/call", params, {})
                result = types.CallToolResult.model_validate(answer)
                assert refusal(result)["code"] == "precondition_failed"
                listed = await c.session._dispatcher.send_raw_request("tasks/list", {}, {})
                assert listed["tasks"] == []  # no task was made
                host.action = "accept"
                answer = await c.session._dispatcher.send_raw_request("tools/call", params, {})
                assert answer["task"]["status"] == "working"
                task = {"taskId": answer["task"]["taskId"]}
                done = await c.session._dispatcher.send_raw_request("tasks/result", task, {})
                assert done["structuredContent"] == {"counted": 2}
            assert len(host.asked) == 2
            assert len(lab.journal.events()) == 1

    anyio.run(main)


def test_a_call_the_shadow_twin_refuses_is_refused_without_asking_anyone(tmp_path: Path) -> None:
    """In a shadow run the twin's verdict comes before the person's: an overdraw it refuses is
    refused at once (no form); a call it does goes to the person, and runs once confirmed."""
    star = Path(__file__).parent.parent / "docs" / "examples" / "star_dry_run.toml"
    host = Host("accept")
    confirming = tmp_path / "star_confirm.toml"
    confirming.write_text('confirm = ["lh_aspirate"]\n' + star.read_text(encoding="utf-8"))
    lab = Lab.load(confirming, shadow=True)

    def aspirate(well: str) -> dict[str, Any]:
        volume = {"value": 50, "unit": "microliter"}
        return {"items": [{"channel": 0, "well": well, "volume": volume}]}

    async def main() -> None:
        async with Client(build_server(lab), mode="legacy", elicitation_callback=host) as c:
            picked = await c.call_tool(
                "lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}
            )
            assert not picked.is_error
            error = refusal(await c.call_tool("lh_aspirate", aspirate("plate_1:A1")))
            assert error["shadow"] is True and error["code"] == "interlock"
            assert host.asked == []
            drawn = await c.call_tool("lh_aspirate", aspirate("reservoir:A1"))
            assert not drawn.is_error and len(host.asked) == 1

    try:
        anyio.run(main)
    finally:
        lab.close()
