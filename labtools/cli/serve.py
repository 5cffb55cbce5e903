"""``labtools serve``: the lab as an MCP server."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from labtools.cli.common import add_lab_options, open_lab
from labtools.journal import Journal

if TYPE_CHECKING:
    from labtools.host import ToolHost


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve the lab's tools over MCP (stdio or HTTP)")
    add_lab_options(serve)
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="HTTP bind address (default 127.0.0.1; others need a token)",
    )
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name HTTP clients reach the server by, accepted in Host and Origin besides the "
        "bind address (repeatable; others are refused: DNS-rebinding protection)",
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("LABTOOLS_TOKEN"),
        help="bearer token required of HTTP clients (default $LABTOOLS_TOKEN)",
    )
    serve.add_argument(
        "--read-only", action="store_true", help="expose only tools that change nothing"
    )
    serve.add_argument("--journal", default=None, help="write the call journal to this JSONL file")
    serve.add_argument(
        "--shadow",
        action="store_true",
        help="run every call that moves anything on a simulated twin of the lab first; a call "
        "the twin refuses never reaches the instruments (docs/shadow-runs.md)",
    )
    serve.add_argument(
        "--view",
        action="store_true",
        help="also serve the lab's live view in the browser, on loopback (docs/view.md)",
    )
    serve.add_argument(
        "--view-port", type=int, default=8770, help="the live view's port (default 8770; 0: any)"
    )
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from labtools.server import cache
    from labtools.server.app import listing, serve_slot
    from labtools.server.catalogue import Catalogue
    from labtools.server.run import is_loopback, serve_http, serve_stdio
    from labtools.server.slot import LabSlot

    if args.transport == "http" and not is_loopback(args.host) and not args.token:
        print(
            f"labtools serve: binding {args.host} needs a bearer token (--token or LABTOOLS_TOKEN)",
            file=sys.stderr,
        )
        return 2
    # a long-running server keeps no journal in memory unless asked to write one
    journal = Journal(args.journal) if args.journal else Journal(keep=0)
    key = cache.catalogue_key(args.lab, args.seed, args.read_only)
    cached = cache.load(key)
    if cached is None:  # the first run of this lab: build it, then answer
        lab = open_lab(args, journal=journal, shadow=args.shadow)
        catalogue = Catalogue(listing(lab, read_only=args.read_only))
        cache.store(key, catalogue.tools)
        slot = LabSlot.ready(lab)
    else:  # answer from the cached catalogue, then build the lab
        catalogue = Catalogue(cached, may_change=True)
        slot = LabSlot.building(
            lambda: open_lab(args, journal=journal, shadow=args.shadow), deferred=True
        )

        def check(lab: ToolHost) -> None:
            tools = listing(lab, read_only=args.read_only)
            if catalogue.replace(tools):
                cache.store(key, tools)

        slot.on_ready(check)
    views: list[Any] = []
    if args.view:
        slot.on_ready(lambda lab: views.append(_open_view(lab, args.view_port)))
        slot.start()  # the page shows the lab from the start, not from the first request
    server = serve_slot(slot, catalogue)
    try:
        if args.transport == "stdio":
            serve_stdio(server)
        else:
            serve_http(
                server, host=args.host, port=args.port, token=args.token, allowed=args.allow_host
            )
    finally:
        for view in views:
            view.stop()
        slot.close()
    return 0


def _open_view(lab: ToolHost, port: int) -> Any:
    """Serve the live view of ``lab`` on loopback; its URL on stderr (stdout may carry MCP)."""
    from labtools.view import open_view

    view = open_view(lab, port=port)
    print(f"labtools serve: live view at {view.url}", file=sys.stderr, flush=True)
    return view
