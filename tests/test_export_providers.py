"""Every exported tool, in every format, passes each provider's own SDK checks (offline)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from labtools.export import FORMATS
from labtools.schema import NAME_PATTERN, SchemaProfileError, portable

ALLOWED_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "description",
}


def walk(schema: dict, path: str = "#"):
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}/{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}/items")


@pytest.fixture(scope="module")
def default_lab():
    """The default lab: the tool surface schemas/ describes."""
    from labtools import Lab

    with Lab.virtual(seed=0) as lab:
        yield lab


@pytest.fixture(scope="module")
def tools(default_lab):
    return default_lab.tools("json-schema")


def test_names_and_schemas_follow_the_portable_profile(tools) -> None:
    assert tools, "the lab exports tools"
    for tool in tools:
        assert NAME_PATTERN.match(tool["name"])
        assert tool["description"][0].isupper() and len(tool["description"]) > 20
        schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        for path, node in walk(schema):
            assert set(node) <= ALLOWED_KEYWORDS, (tool["name"], path, set(node) - ALLOWED_KEYWORDS)
            if node.get("type") == "object":
                assert node["additionalProperties"] is False, (tool["name"], path)
                assert node["required"] == list(node["properties"]), (tool["name"], path)
                for name in node["properties"]:
                    assert NAME_PATTERN.match(name)
        if tool["output_schema"] is not None:
            jsonschema.Draft202012Validator.check_schema(tool["output_schema"])


def test_the_simulated_lab_says_so_in_its_hints(default_lab) -> None:
    assert all(t["hints"]["simulated"] for t in default_lab.tools())
    assert all(not e["annotations"]["openWorldHint"] for e in default_lab.tools("mcp"))


def test_schemas_folder_is_in_sync_with_the_code() -> None:
    import subprocess
    import sys
    from pathlib import Path

    folder = Path(__file__).parent.parent / "schemas"
    done = subprocess.run(
        [sys.executable, "-m", "labtools", "schemas", "--check", "--dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_schemas_check_catches_drift(tmp_path) -> None:
    import subprocess
    import sys

    write = subprocess.run(
        [sys.executable, "-m", "labtools", "schemas", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert write.returncode == 0 and len(list(tmp_path.iterdir())) == 6
    catalogue = tmp_path / "anthropic.json"
    catalogue.write_text(catalogue.read_text().replace("Aspirate", "Aspirated", 1))
    check = subprocess.run(
        [sys.executable, "-m", "labtools", "schemas", "--check", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 1 and "anthropic.json" in check.stderr


def test_every_physical_argument_is_a_value_with_a_unit_enum(tools) -> None:
    for tool in tools:
        for name, prop in tool["input_schema"]["properties"].items():
            if prop.get("type") == "object" and "unit" in prop["properties"]:
                assert prop["required"] == ["value", "unit"]
                assert prop["properties"]["unit"]["enum"], (tool["name"], name)
                assert "Allowed:" in prop["description"] or tool["name"].endswith("spectrum"), name


def test_openai_strict_helper_leaves_every_schema_unchanged(tools) -> None:
    from openai.lib._pydantic import _ensure_strict_json_schema

    for tool in tools:
        schema = copy.deepcopy(tool["input_schema"])
        strict = _ensure_strict_json_schema(schema, path=(), root=schema)
        assert strict == tool["input_schema"], tool["name"]


def test_openai_sdk_accepts_both_tool_shapes(default_lab) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam
    from pydantic import TypeAdapter

    for entry in default_lab.tools("openai-chat"):
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(entry)
        assert entry["function"]["strict"] is True
    for entry in default_lab.tools("openai-responses"):
        TypeAdapter(FunctionToolParam).validate_python(entry)
        assert entry["strict"] is True and "function" not in entry


def test_anthropic_transform_keeps_every_constraint(tools) -> None:
    import anthropic

    def without_enum_types(node):
        if isinstance(node, dict):
            out = {k: without_enum_types(v) for k, v in node.items()}
            if "enum" in out:
                out.pop("type", None)  # the transform drops 'type' beside 'enum'
            return out
        if isinstance(node, list):
            return [without_enum_types(v) for v in node]
        return node

    for tool in tools:
        transformed = anthropic.transform_schema(tool["input_schema"])
        assert transformed == without_enum_types(tool["input_schema"]), tool["name"]
        # nothing was moved into a description: strict mode would have rejected it
        assert "{" not in json.dumps([n.get("description", "") for _, n in walk(transformed)])


def test_gemini_accepts_every_schema_with_unsupported_fields_an_error(tools) -> None:
    from google.genai import types

    for tool in tools:
        json_schema = types.JSONSchema(**tool["input_schema"])
        schema = types.Schema.from_json_schema(
            json_schema=json_schema, api_option="GEMINI_API", raise_error_on_unsupported_field=True
        )
        assert set(schema.required or []) == set(tool["input_schema"]["properties"])
        types.FunctionDeclaration(
            name=tool["name"],
            description=tool["description"],
            parameters_json_schema=tool["input_schema"],
        )


def test_mcp_entries_map_hints_to_annotations(default_lab) -> None:
    entries = {e["name"]: e for e in default_lab.tools("mcp")}
    assert entries["reader_read_absorbance"]["annotations"]["readOnlyHint"] is True
    aspirate = entries["lh_aspirate"]["annotations"]
    assert aspirate["destructiveHint"] is True and aspirate["idempotentHint"] is False
    for entry in entries.values():
        assert entry["inputSchema"]["additionalProperties"] is False
        assert entry["outputSchema"]["type"] == "object"


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_every_tool(default_lab, fmt: str) -> None:
    names = json.dumps(default_lab.tools(fmt))
    for name in default_lab.tool_names():
        assert f'"{name}"' in names
    assert default_lab.tool_names() == [t["name"] for t in default_lab.tools()]


def test_the_profile_refuses_what_it_cannot_express() -> None:
    with pytest.raises(SchemaProfileError):
        portable(
            {
                "type": "object",
                "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            }
        )
    with pytest.raises(SchemaProfileError):
        portable({"type": "object", "properties": {"Bad-Name": {"type": "string"}}})
    with pytest.raises(SchemaProfileError):
        portable({"type": "object", "additionalProperties": {"type": "number"}})
    moved = portable(
        {
            "type": "object",
            "title": "T",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3, "title": "N"}
            },
        }
    )
    assert moved == {
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "(minimum 1; maximum 9)"}},
        "required": ["n"],
        "additionalProperties": False,
    }
