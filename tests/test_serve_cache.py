"""``labtools serve`` answers ``tools/list`` before its lab is built, from a cached catalogue.

The lab here is built only once the test opens a gate (tests/gated.py), so "answered before
the lab was built" is a fact the test sees (no ``.built`` file yet), not a timing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import TESTS, refusal

from labtools.server import cache

GATED_LAB = '[instruments.lh]\nclass = "gated:GatedLiquidHandler"\n'


class Gate:
    """A gated lab config in ``tmp_path``, its gate file and a private catalogue cache."""

    def __init__(self, tmp_path: Path) -> None:
        self.lab = tmp_path / "gated_lab.toml"
        self.lab.write_text(GATED_LAB, encoding="utf-8")
        self.file = tmp_path / "gate"
        self.built = tmp_path / "gate.built"
        self.cache = tmp_path / "cache"

    def open(self) -> None:
        self.file.write_text("open", encoding="utf-8")

    def close(self) -> None:
        self.file.unlink(missing_ok=True)
        self.built.unlink(missing_ok=True)

    def server(self, *extra: str, **env: str) -> Any:
        """``labtools serve`` with the gate and the cache, as a stdio transport."""
        environment = dict(os.environ)
        environment.update(
            PYTHONPATH=os.pathsep.join([str(TESTS), environment.get("PYTHONPATH", "")]),
            LABTOOLS_CACHE_DIR=str(self.cache),
            LABTOOLS_TEST_GATE=str(self.file),
            **env,
        )
        command = [sys.executable, "-m", "labtools", "serve", "--lab", str(self.lab), *extra]
        params = StdioServerParameters(command=command[0], args=command[1:], env=environment)
        return stdio_client(params)

    def entries(self) -> list[Path]:
        return sorted(self.cache.glob("catalogue-*.json"))


def _names(listing: types.ListToolsResult) -> list[str]:
    return [tool.name for tool in listing.tools]


def _dumped(listing: types.ListToolsResult) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listing.tools]


async def _warm(gate: Gate, *extra: str) -> list[dict[str, Any]]:
    """Serve once with the gate open: the lab is built first, its catalogue stored."""
    gate.open()
    async with Client(gate.server(*extra)) as client:
        listing = await client.list_tools()
    gate.close()
    return _dumped(listing)


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return Gate(tmp_path)


def test_a_cached_catalogue_is_listed_before_the_lab_is_built(gate: Gate) -> None:
    async def main() -> None:
        cold = await _warm(gate)
        assert len(gate.entries()) == 1, "the first run did not store its catalogue"
        async with Client(gate.server()) as client:
            listing = await client.list_tools()
            assert not gate.built.exists(), "the lab was built before tools/list was answered"
            assert _dumped(listing) == cold
            gate.open()
            result = await client.call_tool("lh_get_deck", {})  # waits for the lab
            assert not result.is_error and gate.built.exists()
            assert result.structured_content["labware"]

    anyio.run(main)


def test_a_stale_catalogue_is_replaced_and_the_client_told(gate: Gate) -> None:
    """The cached entry lists a tool the lab lacks and misses one it has: once the lab is built,
    the server says its tools changed, and lists the lab's own."""

    async def main() -> None:
        real = await _warm(gate)
        (entry,) = gate.entries()
        stale = [t for t in real if t["name"] != "lh_drop_tips"]
        stale.append({**stale[0], "name": "lh_teleport"})
        entry.write_text(json.dumps(stale), encoding="utf-8")
        # the Python client speaks 2026-07-28, where the change arrives on a listen stream
        async with Client(gate.server()) as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True) as events:
                assert _names(await client.list_tools()) == [t["name"] for t in stale]
                gate.open()
                with anyio.fail_after(60):
                    async for _event in events:  # the only kind asked for: tools changed
                        break
            assert _dumped(await client.list_tools()) == real
            assert (await client.call_tool("lh_teleport", {})).is_error
        assert json.loads(entry.read_text("utf-8")) == real, "the cache entry was not corrected"

    anyio.run(main)


def test_a_legacy_client_is_sent_tools_list_changed(gate: Gate) -> None:
    """Before 2026-07-28 the notification goes on the session, and ``listChanged`` is declared
    while the catalogue may still change."""

    async def main() -> None:
        real = await _warm(gate)
        (entry,) = gate.entries()
        entry.write_text(json.dumps(real[:-1]), encoding="utf-8")
        changed = anyio.Event()

        async def on_message(message: object) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with Client(gate.server(), mode="legacy", message_handler=on_message) as client:
            assert client.protocol_version == "2025-11-25"
            tools = client.server_capabilities.tools
            assert tools is not None and tools.list_changed
            assert len((await client.list_tools()).tools) == len(real) - 1
            gate.open()
            with anyio.fail_after(60):
                await changed.wait()
            assert _dumped(await client.list_tools()) == real

    anyio.run(main)


def test_a_lab_that_cannot_be_built_fails_every_call_with_the_reason(gate: Gate) -> None:
    async def main() -> None:
        await _warm(gate)
        gate.open()
        async with Client(gate.server(LABTOOLS_TEST_FAIL="1")) as client:
            assert "lh_get_deck" in _names(await client.list_tools())
            error = refusal(await client.call_tool("lh_get_deck", {}))
            assert error["code"] == "instrument_error"
            assert "could not be opened" in error["message"]
            assert "ConnectionError" in error["message"] and "restart" in error["hint"]
            with pytest.raises(Exception, match="could not be opened"):
                await client.read_resource("labtools://state")

    anyio.run(main)


def test_a_damaged_cache_entry_is_ignored_and_rewritten(gate: Gate) -> None:
    async def main() -> None:
        real = await _warm(gate)
        (entry,) = gate.entries()
        entry.write_text('[{"name": 3}', encoding="utf-8")
        gate.open()  # no usable entry: the lab is built before the server answers
        async with Client(gate.server()) as client:
            assert _dumped(await client.list_tools()) == real
        assert json.loads(entry.read_text("utf-8")) == real

    anyio.run(main)


def test_read_only_has_its_own_entry(gate: Gate) -> None:
    async def main() -> None:
        full = await _warm(gate)
        read_only = await _warm(gate, "--read-only")
        assert len(gate.entries()) == 2 and len(read_only) < len(full)
        async with Client(gate.server("--read-only")) as client:
            assert _dumped(await client.list_tools()) == read_only
            assert not gate.built.exists()
            gate.open()

    anyio.run(main)


def test_the_key_follows_the_config_and_the_code(tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "lab.toml"
    config.write_text(GATED_LAB, encoding="utf-8")
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    module = package / "instrument.py"
    module.write_text("X = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "PACKAGES", (*cache.PACKAGES, "plugin"))
    first = cache.catalogue_key(str(config), 0, False)
    assert cache.catalogue_key(str(config), 0, False) == first
    assert cache.catalogue_key(str(config), 0, True) != first
    assert cache.catalogue_key("virtual", 0, False) != first
    config.write_text(GATED_LAB + "# a comment\n", encoding="utf-8")
    second = cache.catalogue_key(str(config), 0, False)
    assert second != first
    module.write_text("X = 22\n", encoding="utf-8")  # another size
    assert cache.catalogue_key(str(config), 0, False) != second


def test_caching_off_stores_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", "off")
    assert cache.cache_dir() is None
    cache.store("k", [types.Tool(name="t", input_schema={"type": "object"})])
    assert cache.load("k") is None
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    cache.store("k", [types.Tool(name="t", input_schema={"type": "object"})])
    assert [t.name for t in cache.load("k") or []] == ["t"]


def test_the_server_answers_before_importing_the_lab() -> None:
    """What ``labtools serve`` imports before its first answer: no units, arrays or robots."""
    from fresh_process import python_json

    heavy = python_json(
        "import json, sys\n"
        "import labtools.cli, labtools.server.app, labtools.server.cache, labtools.server.run\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('pint', 'numpy', 'pylabrobot') or m in ('labtools.lab', 'labtools.spec'))))\n"
    )
    assert heavy == []


def test_a_deferred_build_begins_at_the_first_answer_or_request_and_only_once() -> None:
    """``LabSlot.building(deferred=True)``: nothing is built until :meth:`start` (the server's
    first ``tools/list`` answer) or the first :meth:`get`; both begin it once; a slot closed
    before it began builds nothing."""
    import threading

    from labtools.server.slot import LabSlot

    calls: list[int] = []
    built = threading.Event()

    def build() -> Any:
        calls.append(1)
        built.set()
        return object()

    never = LabSlot.building(build, deferred=True)
    never.close()
    slot = LabSlot.building(build, deferred=True)
    assert not built.is_set() and calls == []
    slot.start()
    slot.start()
    assert built.wait(60)
    lab = anyio.run(slot.get)
    assert calls == [1] and lab is anyio.run(slot.get)
    asked = LabSlot.building(build, deferred=True)
    anyio.run(asked.get)
    assert calls == [1, 1]
