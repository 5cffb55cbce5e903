"""Large results for MCP hosts: a valid JSON summary inline and a resource link to the whole,
never JSON cut in the middle; unknown resources answered as the SDK's own servers do."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp_helpers import virtual_lab_file

from labtools import Lab
from labtools.server import build_server
from labtools.server.results import INLINE_TEXT, ResultStore, inline, summary

NOTE = " (summarised: the whole result is at "


@pytest.fixture
def full_plates(tmp_path: Path) -> Path:
    """The virtual lab believing 150 µL in every well of plate_1 and plate_2."""
    return virtual_lab_file(tmp_path / "full.toml", full_plates=("plate_1", "plate_2"))


def test_a_deck_of_two_full_plates_comes_summarised_with_a_link_to_the_whole(
    full_plates: Path,
) -> None:
    async def main() -> None:
        with Lab.load(full_plates) as lab:
            whole = lab.call("lh_get_deck", {}).data
            assert len(json.dumps(whole, separators=(",", ":"))) > INLINE_TEXT
            async with Client(build_server(lab)) as client:  # validates structuredContent
                result = await client.call_tool("lh_get_deck", {})
                assert not result.is_error and result.structured_content == whole
                text, link = result.content
                assert link.type == "resource_link" and link.uri == "labtools://result/1"
                assert text.text.endswith(f"{NOTE}{link.uri} and in structuredContent)")
                shown = json.loads(text.text[: text.text.index(NOTE)])  # valid JSON, not cut
                assert len(text.text) < INLINE_TEXT + 100
                assert {lw["name"] for lw in shown["labware"]} == {
                    lw["name"] for lw in whole["labware"]
                }
                read = await client.read_resource(link.uri)
                assert json.loads(read.contents[0].text) == whole

    anyio.run(main)


def test_small_results_come_whole_and_alone() -> None:
    async def main() -> None:
        with Lab.virtual(seed=0) as lab:
            async with Client(build_server(lab)) as client:
                result = await client.call_tool("lh_get_deck", {})
                assert [block.type for block in result.content] == ["text"]
                assert json.loads(result.content[0].text) == result.structured_content

    anyio.run(main)


def test_unknown_resources_are_invalid_params_with_the_uri() -> None:
    async def main() -> None:
        with Lab.virtual(seed=0) as lab:
            async with Client(build_server(lab)) as client:
                for uri, words in (
                    ("labtools://nothing", "Resource not found: labtools://nothing"),
                    ("labtools://result/7", "results kept: none"),
                    ("labtools://data/spec/99", "Resource not found: labtools://data/spec/99"),
                ):
                    with pytest.raises(MCPError) as caught:
                        await client.read_resource(uri)
                    assert caught.value.error.code == -32602
                    assert words in caught.value.error.message
                    assert caught.value.error.data == {"uri": uri}

    anyio.run(main)


def test_the_store_keeps_the_most_recent_results() -> None:
    store = ResultStore(capacity=2)
    uris = [store.put({"n": n}) for n in range(3)]
    assert uris == ["labtools://result/1", "labtools://result/2", "labtools://result/3"]
    assert store.kept() == [2, 3] and store.get(3) == {"n": 2}
    with pytest.raises(KeyError):
        store.get(1)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=400),
    lambda inner: st.lists(inner, max_size=300) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=2000,
)


@settings(max_examples=60, deadline=None)
@given(JSON)
def test_a_summary_is_valid_json_within_the_limit_or_the_whole(value: object) -> None:
    text = summary(value, limit=600)
    json.loads(text)
    whole = inline(value, limit=600)
    assert whole is None or json.loads(whole) == value
    if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) > 600:
        assert whole is None
    assert len(text) <= 600
