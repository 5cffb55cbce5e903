"""``labtools serve``: the lab as an MCP server."""

from __future__ import annotations

import argparse
import os
import sys

from labtools.cli.common import add_lab_options, open_lab
from labtools.journal import Journal


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
        "--token",
        default=os.environ.get("LABTOOLS_TOKEN"),
        help="bearer token required of HTTP clients (default $LABTOOLS_TOKEN)",
    )
    serve.add_argument(
        "--read-only", action="store_true", help="expose only tools that change nothing"
    )
    serve.add_argument("--journal", default=None, help="write the call journal to this JSONL file")
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from labtools.server.app import build_server
    from labtools.server.run import is_loopback, serve_http, serve_stdio

    if args.transport == "http" and not is_loopback(args.host) and not args.token:
        print(
            f"labtools serve: binding {args.host} needs a bearer token (--token or LABTOOLS_TOKEN)",
            file=sys.stderr,
        )
        return 2
    # a long-running server keeps no journal in memory unless asked to write one
    journal = Journal(args.journal) if args.journal else Journal(keep=0)
    with open_lab(args, journal=journal) as lab:
        server = build_server(lab, read_only=args.read_only)
        if args.transport == "stdio":
            serve_stdio(server)
        else:
            serve_http(server, host=args.host, port=args.port, token=args.token)
    return 0
