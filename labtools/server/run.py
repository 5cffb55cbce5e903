"""Running the MCP server over stdio or streamable HTTP."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio
from mcp.server import Server
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.stdio import stdio_server
from pydantic import AnyHttpUrl

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

log = logging.getLogger(__name__)

__all__ = ["http_app", "is_loopback", "serve_http", "serve_stdio", "transport_security"]


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


#: the names of this machine's loopback interface a local client may put in ``Host``
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (IPv4-mapped IPv6 as its IPv4 address), or ``None``."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback(host: str) -> bool:
    """Whether ``host`` is the loopback interface, in any spelling (``localhost``,
    ``127.0.0.2``, ``::1``, ``0:0:0:0:0:0:0:1``, ``::ffff:127.0.0.1``)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def _in_url(host: str) -> str:
    """``host`` as it stands in a URL or a ``Host`` header (IPv6 in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def transport_security(
    host: str, port: int, *, token: str | None, allowed: Iterable[str] = ()
) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding protection for a server bound to ``host:port``: ``Host`` must
    name this server and a browser's ``Origin`` must be its own, else the request is refused
    (421, 403) before it reaches the lab.

    On for every loopback bind (any address, any spelling) and for any bind with a ``token``.
    Accepted names: the bind address as given and in its canonical spelling, the loopback
    names when bound to loopback, this machine's host names on a wildcard bind (``0.0.0.0``,
    ``::``), and ``allowed`` (``--allow-host``: names clients reach the server by). ``None``
    (off) only for a bind that could not be served anyway (off loopback, no token)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not (token or is_loopback(host)):
        return None
    names = [host, *allowed]
    address = _address(host)
    if address is not None:
        names.append(str(address))
        if address.is_unspecified:  # every interface, the loopback one too
            names += [socket.gethostname(), socket.getfqdn(), *LOOPBACK_NAMES]
    if is_loopback(host):
        names += LOOPBACK_NAMES
    hosts = list(dict.fromkeys(f"{_in_url(n)}:{port}" for n in names if n))
    if port == 80:  # a client leaves the default port out of Host
        hosts += [h.rsplit(":", 1)[0] for h in hosts]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def http_app(
    server: Server, *, host: str, port: int, token: str | None, allowed: Iterable[str] = ()
) -> Starlette:
    """The Starlette app serving ``server`` at ``/mcp``; a bearer ``token`` guards it if given,
    and :func:`transport_security` checks each request's ``Host`` and ``Origin``."""
    security = transport_security(host, port, token=token, allowed=allowed)
    if token:
        return server.streamable_http_app(
            host=host,
            transport_security=security,
            auth=AuthSettings(
                issuer_url=AnyHttpUrl(f"http://{_in_url(host)}:{port}/"), resource_server_url=None
            ),
            token_verifier=_StaticToken(token),
        )
    return server.streamable_http_app(host=host, transport_security=security)


def serve_http(
    server: Server, *, host: str, port: int, token: str | None, allowed: Iterable[str] = ()
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``.

    Off the loopback interface a bearer token is required (refused otherwise). ``allowed``:
    more names clients may reach the server by (see :func:`transport_security`).
    """
    import uvicorn

    if not is_loopback(host) and not token:
        raise ValueError(f"binding {host} needs a bearer token (--token or LABTOOLS_TOKEN)")
    app = http_app(server, host=host, port=port, token=token, allowed=allowed)
    where = _in_url(host)
    print(f"labtools: serving MCP on http://{where}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host.strip("[]"), port=port, log_level="warning")
