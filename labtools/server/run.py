"""Running the MCP server over stdio or streamable HTTP."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import sys

import anyio
from mcp.server import Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.stdio import stdio_server
from pydantic import AnyHttpUrl

log = logging.getLogger(__name__)

__all__ = ["is_loopback", "serve_http", "serve_stdio"]


def serve_stdio(server: Server) -> None:
    """Serve one client over this process's stdin/stdout until it disconnects."""

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


class _StaticToken:
    """Accepts exactly one bearer token (compared in constant time)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token.encode()):
            return AccessToken(token=token, client_id="labtools", scopes=[])
        return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_app(server: Server, *, host: str, port: int, token: str | None):
    """The Starlette app serving ``server`` at ``/mcp``; a bearer ``token`` guards it if given."""
    if token:
        return server.streamable_http_app(
            host=host,
            auth=AuthSettings(
                issuer_url=AnyHttpUrl(f"http://{host}:{port}/"), resource_server_url=None
            ),
            token_verifier=_StaticToken(token),
        )
    return server.streamable_http_app(host=host)


def serve_http(server: Server, *, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``.

    Off the loopback interface a bearer token is required (refused otherwise).
    """
    import uvicorn

    if not is_loopback(host) and not token:
        raise ValueError(f"binding {host} needs a bearer token (--token or LABTOOLS_TOKEN)")
    app = http_app(server, host=host, port=port, token=token)
    where = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL
    print(f"labtools: serving MCP on http://{where}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
