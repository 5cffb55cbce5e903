"""Helpers for driving the MCP server with the official client in tests."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

TESTS = Path(__file__).parent
FAKE_LAB = TESTS / "fake_lab.toml"


def serve_command(*extra: str, lab: str | Path = FAKE_LAB) -> list[str]:
    return [sys.executable, "-m", "labtools", "serve", "--lab", str(lab), *extra]


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


def stdio_params(*extra: str, lab: str | Path = FAKE_LAB) -> StdioServerParameters:
    command = serve_command(*extra, lab=lab)
    return StdioServerParameters(command=command[0], args=command[1:], env=server_env())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refusal(result: Any) -> dict[str, Any]:
    """The error object of a refused MCP tool call, checked against what a host shows: an
    ``isError`` result, no structured content, the code, field and hint in its text."""
    from labtools.server.app import ERROR_META, error_text

    assert result.is_error, result
    assert result.structured_content is None
    error = result.meta[ERROR_META]
    assert [block.text for block in result.content] == [error_text(error)]
    return error
