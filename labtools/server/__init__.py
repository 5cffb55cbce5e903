"""An MCP server for a lab, built on the official ``mcp`` SDK (imported only here)."""

from labtools.server.app import build_server

__all__ = ["build_server"]
