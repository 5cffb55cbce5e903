"""The anchors: minimal MCP servers built directly on the official SDK.

- ``bare_server()``: a no-op tool, and optionally an ``echo`` tool returning a fixed result under
  a given ``outputSchema`` (serialised on every call, as any server must): what any server
  returning that result pays with the official client, which validates structured results.
- ``bare_lab_server(lab)``: the lab's tools the shortest way the SDK allows: the same names and
  schemas, each call straight to ``lab.acall``, its data returned as text and
  ``structuredContent``. No refusal text, result summaries, confirmation, tasks or resources:
  what labtools' server adds over it is its own cost.

``python -m bench.mcp_bare [ECHO.json]`` serves the first over stdio (``ECHO.json`` holds
``{"output_schema": ..., "payload": ...}``); ``python -m bench.mcp_bare --virtual`` the second
over the virtual lab.
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

from labtools.host import ToolHost

_OPEN = {"type": "object", "additionalProperties": False}


def _text(data: Any) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=json.dumps(data, separators=(",", ":")))]


def bare_server(echo: dict[str, Any] | None = None) -> Server:
    tools = [types.Tool(name="noop", input_schema=_OPEN)]
    if echo is not None:
        tools.append(
            types.Tool(name="echo", input_schema=_OPEN, output_schema=echo["output_schema"])
        )

    async def list_tools(ctx: ServerRequestContext, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "echo" and echo is not None:
            payload = echo["payload"]
            return types.CallToolResult(content=_text(payload), structured_content=payload)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)


def bare_lab_server(lab: ToolHost) -> Server:
    tools = [
        types.Tool(
            name=entry["name"],
            input_schema=entry["inputSchema"],
            output_schema=entry.get("outputSchema"),
        )
        for entry in lab.tools("mcp")
    ]

    async def list_tools(ctx: ServerRequestContext, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await lab.acall(params.name, params.arguments or {})
        if not result.ok:
            return types.CallToolResult(content=_text(result.error), is_error=True)
        data = result.data or {}
        return types.CallToolResult(content=_text(data), structured_content=data)

    return Server("bare-lab", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(server: Server) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if sys.argv[1:] == ["--virtual"]:
        from labtools import Lab

        anyio.run(_serve, bare_lab_server(Lab.virtual(seed=0)))
    else:
        echo = json.loads(Path(sys.argv[1]).read_text("utf-8")) if len(sys.argv) > 1 else None
        anyio.run(_serve, bare_server(echo))
