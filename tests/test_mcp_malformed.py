"""A malformed-input suite against the MCP server: it keeps answering, the lab stays consistent."""

from __future__ import annotations

import json
import subprocess

import anyio
from mcp import Client
from mcp_helpers import refusal, serve_command, server_env

from labtools.server import build_server

UL = {"value": 10, "unit": "microliter"}


class RawStdio:
    """Newline-delimited JSON-RPC over a `labtools serve` subprocess's stdin/stdout."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            serve_command(),
            env=server_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, id_: int, method: str, params: dict | None = None) -> dict:
        message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())
        return self.reply(id_)

    def reply(self, id_: int) -> dict:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the server closed its output"
            message = json.loads(line)
            if message.get("id") == id_:
                return message

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def test_garbage_and_invalid_json_rpc_leave_the_server_answering() -> None:
    raw = RawStdio()
    try:
        init = raw.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "0"},
            },
        )
        assert "result" in init
        raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        for garbage in (
            b"not json at all",
            b"{",
            b"[]",
            b"null",
            b'{"jsonrpc": "1.0"}',
            b'{"jsonrpc": "2.0", "id": 2}',
            b"\xff\xfe\x00",
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such"}).encode(),
        ):
            raw.send(garbage)
        wrong = raw.request(4, "tools/call", {"name": "lh_get_deck", "arguments": [1, 2]})
        assert "error" in wrong
        wrong = raw.request(5, "tools/call", {"name": 17})
        assert "error" in wrong
        listed = raw.request(6, "tools/list", {})
        assert len(listed["result"]["tools"]) == 23
        called = raw.request(7, "tools/call", {"name": "lh_get_deck", "arguments": {}})
        assert called["result"]["isError"] is False
    finally:
        raw.close()


def test_megabyte_arguments_are_refused_as_tool_errors() -> None:
    from fakes import fake_lab

    async def main() -> None:
        with fake_lab() as lab:
            before = lab.state()
            async with Client(build_server(lab)) as client:
                huge = {"items": [{"channel": 0, "well": "x" * 1_000_000, "volume": UL}]}
                result = await client.call_tool("lh_aspirate", huge)
                assert refusal(result)["code"] in {
                    "unknown_resource",
                    "precondition_failed",
                }
                many = {"tip_rack": "tips", "channels": list(range(200_000))}
                result = await client.call_tool("lh_pick_up_tips", many)
                assert refusal(result)["code"] == "out_of_range"
                nested: object = {}
                for _ in range(50):
                    nested = {"x": [nested]}
                result = await client.call_tool("lh_get_deck", {"junk": nested})
                assert result.is_error
                assert not (await client.call_tool("lh_get_deck", {})).is_error
            assert lab.state() == before

    anyio.run(main)


def test_twelve_hundred_rapid_calls_from_two_clients_at_once() -> None:
    from fakes import fake_lab

    async def main() -> None:
        with fake_lab() as lab:
            server = build_server(lab)
            lab.call("lh_pick_up_tips", {"tip_rack": "tips", "channels": [0, 1]})
            outcomes: list[bool] = []
            failures: list[str] = []

            async def client_run(channel: int) -> None:
                async with Client(server) as client, anyio.create_task_group() as group:
                    for _ in range(100):  # a burst of concurrent reads beside the writes
                        group.start_soon(read, client)
                    for _ in range(125):  # a channel's own calls stay in order
                        await one_pair(client, channel)

            async def read(client: Client) -> None:
                result = await client.call_tool(
                    "reader_read_luminescence", {"plate": "plate_1", "wells": ["A1"]}
                )
                outcomes.append(result.is_error)  # the plate is not in the reader: refused

            async def one_pair(client: Client, channel: int) -> None:
                bad = await client.call_tool(
                    "lh_aspirate",
                    {"items": [{"channel": channel, "well": "stock:A1", "volume": 10}]},
                )
                outcomes.append(bad.is_error)
                good = await client.call_tool(
                    "lh_aspirate",
                    {"items": [{"channel": channel, "well": "stock:A1", "volume": UL}]},
                )
                outcomes.append(not good.is_error)
                if good.is_error:
                    failures.append(good.content[0].text)
                back = await client.call_tool(
                    "lh_dispense",
                    {"items": [{"channel": channel, "well": "stock:A1", "volume": UL}]},
                )
                outcomes.append(not back.is_error)
                deck = await client.call_tool("lh_get_deck", {})
                outcomes.append(not deck.is_error)

            async with anyio.create_task_group() as group:
                group.start_soon(client_run, 0)
                group.start_soon(client_run, 1)
            assert len(outcomes) == 2 * (100 + 125 * 4) and all(outcomes), failures
            # every aspirate was matched by its dispense: the stock is whole again
            assert lab.instruments["lh"].wells["stock:A1"] == 5000.0
            assert lab.instruments["lh"].tip == {0: 0.0, 1: 0.0}
            assert lab.journal.count == 1 + 2 * (100 + 125 * 4)

    anyio.run(main)
