"""DNS-rebinding protection over HTTP: ``Host`` and ``Origin`` are checked on every loopback bind,
in any spelling, and on any bind with a token; a request naming another host is refused."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import pytest
from mcp_helpers import FAKE_LAB, serve_command, server_env
from starlette.testclient import TestClient

from labtools import Lab
from labtools.server import build_server
from labtools.server.run import http_app, is_loopback, transport_security

#: a generous ceiling for a server to start on a busy machine (it is waited on, not timed)
START_S = 180.0
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port(family: socket.AddressFamily, address: str) -> int:
    with socket.socket(family) as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@contextmanager
def serving(bind: str, *extra: str) -> Iterator[tuple[str, int]]:
    """``labtools serve --transport http`` bound to ``bind``; yields (address, port) once it
    accepts connections."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    address = str(socket.getaddrinfo(bind, None, family)[0][4][0])
    port = _free_port(family, address)
    process = subprocess.Popen(
        serve_command("--transport", "http", "--host", bind, "--port", str(port), *extra),
        env=server_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # printed just before it binds
        assert line.startswith("labtools: serving MCP on http://"), line
        deadline = time.monotonic() + START_S
        while True:
            with socket.socket(family) as sock:
                if sock.connect_ex((address, port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "never listened"
            time.sleep(0.05)
        yield address, port
    finally:
        process.terminate()
        process.wait(timeout=30)


def post(address: str, port: int, **headers: str) -> int:
    host = f"[{address}]" if ":" in address else address
    response = httpx2.post(
        f"http://{host}:{port}/mcp", json=INITIALIZE, headers={**HEADERS, **headers}, timeout=60
    )
    return response.status_code


@pytest.mark.parametrize("bind", ["127.0.0.2", "0:0:0:0:0:0:0:1"])
def test_a_loopback_bind_in_any_spelling_refuses_a_foreign_host(bind: str) -> None:
    with serving(bind) as (address, port):
        shown = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        assert post(address, port) == 200  # the Host a client sends: the address it dialled
        assert post(address, port, Host=f"localhost:{port}") == 200
        assert post(address, port, Host=shown, Origin=f"http://{shown}") == 200
        assert post(address, port, Host="evil.example.com") == 421
        assert post(address, port, Host=f"evil.example.com:{port}") == 421
        assert post(address, port, Host=f"localhost:{port + 1}") == 421  # another server's
        assert post(address, port, Origin="http://evil.example.com") == 403


def test_a_name_given_with_allow_host_is_accepted() -> None:
    with serving("127.0.0.2", "--allow-host", "lab-pc.example") as (address, port):
        assert post(address, port, Host=f"lab-pc.example:{port}") == 200
        assert post(address, port, Host=f"other.example:{port}") == 421


LOOPBACK = ["localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"]
LOOPBACK += ["[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_every_loopback_spelling_is_loopback_and_protected(host: str) -> None:
    assert is_loopback(host)
    security = transport_security(host, 8765, token=None)
    assert security is not None and security.enable_dns_rebinding_protection
    assert "localhost:8765" in security.allowed_hosts
    assert not any("evil" in h for h in security.allowed_hosts)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "lab-pc.example", "128.0.0.1"])
def test_off_loopback_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)
    assert transport_security(host, 8765, token=None) is None  # refused to serve anyway


def test_a_bind_with_a_token_checks_hosts_too() -> None:
    """Bound to every interface with a token: a request naming a foreign host is refused
    before the token is looked at; one naming an allowed host reaches the token check."""
    with Lab.load(FAKE_LAB) as lab:
        app = http_app(
            build_server(lab), host="0.0.0.0", port=8765, token="s3cret", allowed=["lab-pc"]
        )
        auth = {"Authorization": "Bearer s3cret"}
        with TestClient(app, base_url="http://lab-pc:8765") as client:
            assert client.post("/mcp", json=INITIALIZE, headers={**HEADERS, **auth}).is_success
            assert client.post("/mcp", json=INITIALIZE, headers=HEADERS).status_code == 401
            foreign = {**HEADERS, **auth, "Host": "evil.example.com"}
            assert client.post("/mcp", json=INITIALIZE, headers=foreign).status_code == 421
            origin = {**HEADERS, **auth, "Origin": "http://evil.example.com"}
            assert client.post("/mcp", json=INITIALIZE, headers=origin).status_code == 403
