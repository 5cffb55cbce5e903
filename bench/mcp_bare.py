"""The anchor: a minimal MCP server built directly on the official SDK.

It has a no-op tool, and optionally an ``echo`` tool that returns a fixed ``structuredContent``
under a given ``outputSchema`` — what any server returning that result pays with the official
client, which validates structured results against the schema. Run as
``python -m bench.mcp_bare [ECHO.json]`` to serve it over stdio; ``ECHO.json`` holds
``{"output_schema": ..., "payload": ...}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

_OPEN = {"type": "object", "additionalProperties": False}


def bare_server(echo: dict[str, Any] | None = None) -> Server:
    tools = [types.Tool(name="noop", input_schema=_OPEN)]
    if echo is not None:
        tools.append(
            types.Tool(name="echo", input_schema=_OPEN, output_schema=echo["output_schema"])
        )
        text = json.dumps(echo["payload"], separators=(",", ":"))

    async def list_tools(ctx: ServerRequestContext, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "echo" and echo is not None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=echo["payload"],
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(server: Server) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    echo = json.loads(Path(sys.argv[1]).read_text("utf-8")) if len(sys.argv) > 1 else None
    anyio.run(_serve, bare_server(echo))
