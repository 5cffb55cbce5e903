"""Helpers for driving the MCP server with the official client in tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client

TESTS = Path(__file__).parent
FAKE_LAB = TESTS / "fake_lab.toml"
#: the longest a spawned server may take to start (s): ~3 s idle, far more on a loaded machine
SERVER_START_S = 240.0


def serve_command(*extra: str, lab: str | Path = FAKE_LAB) -> list[str]:
    return [sys.executable, "-m", "labtools", "serve", "--lab", str(lab), *extra]


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return env


def stdio_server(*extra: str, lab: str | Path = FAKE_LAB) -> Any:
    """``labtools serve`` as a stdio transport for ``mcp.Client`` (every mcp 2.x takes one; only
    2.3 and later also take the parameters themselves)."""
    command = serve_command(*extra, lab=lab)
    return stdio_client(
        StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[Any], log: IO[str] | None = None) -> None:
    """Return once ``process`` accepts connections on ``port``; raise if it exits first, or
    takes over :data:`SERVER_START_S`, with what it wrote to ``log`` (or to its stderr pipe)."""
    deadline = time.monotonic() + SERVER_START_S
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        exited = process.poll() is not None
        if exited or time.monotonic() > deadline:
            said = ""
            if log is not None:
                log.seek(0)
                said = log.read()
            elif exited and process.stderr is not None:  # a pipe: read only once it is closed
                said = process.stderr.read()
            what = "exited" if exited else f"did not open port {port} in {SERVER_START_S:.0f} s"
            raise RuntimeError(f"the server {what}: {said}")
        time.sleep(0.1)


def refusal(result: Any) -> dict[str, Any]:
    """The error object of a refused MCP tool call, checked against what a host shows: an
    ``isError`` result, no structured content, the code, field and hint in its text."""
    from labtools.server.app import ERROR_META, error_text

    assert result.is_error, result
    assert result.structured_content is None
    error = result.meta[ERROR_META]
    assert [block.text for block in result.content] == [error_text(error)]
    return error


def virtual_lab_file(
    path: Path,
    *,
    in_reader: str | None = None,
    full_plates: tuple[str, ...] = (),
    extra: str = "",
) -> Path:
    """The built-in virtual lab's configuration written to ``path``, with ``in_reader`` starting
    in the reader, every well of ``full_plates`` believed to hold 150 µL, and ``extra`` TOML
    appended (more instruments)."""
    from labtools.config import packaged
    from labtools.lab import VIRTUAL_LAB

    text = packaged(VIRTUAL_LAB).read_text(encoding="utf-8")
    edits = {
        'reader_backend = "@reader_backend"\n': f'in_reader = "{in_reader}"\n' if in_reader else "",
        'labels = "@world.labels"\n': "",
    }
    if full_plates:
        wells = [f"{row}{column}" for row in "ABCDEFGH" for column in range(1, 13)]
        volumes = ", ".join(f'"{plate}:{w}" = 150' for plate in full_plates for w in wells)
        edits['labels = "@world.labels"\n'] = f"volumes = {{ {volumes} }}\n"
    for anchor, added in edits.items():
        assert text.count(anchor) == 1, anchor
        text = text.replace(anchor, anchor + added)
    path.write_text(text + extra, encoding="utf-8")
    return path
