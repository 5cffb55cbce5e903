"""The MCP server: the lab's tool catalogue, tool calls through ``lab.call``, state as resources.

Built on the SDK's low-level ``Server`` so that the exported schemas go out verbatim (root
``additionalProperties: false`` included) and every argument is checked by the lab, not dropped:
a failed call is a result with ``isError: true`` whose text carries the error's code, message,
field and hint, so the model can correct itself. A refusal has no ``structuredContent`` (it
would contradict the tool's ``outputSchema``, and hosts validate it); programs read the error
object from ``_meta["labtools/error"]``.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.shared.uri_template import UriTemplate

from labtools import __version__
from labtools.errors import ToolError, UnknownTool, brief
from labtools.host import ToolHost
from labtools.progress import ProgressCallback
from labtools.result import ToolResult
from labtools.server import tasks
from labtools.server.catalogue import Catalogue, TaskSupport
from labtools.server.confirm import Confirmation
from labtools.server.results import RESULT_URI, ResultStore, inline, summary
from labtools.server.slot import LabSlot

__all__ = ["ERROR_META", "build_server", "error_text", "listing", "mcp_tool", "serve_slot"]

STATE_URI = "labtools://state"
INSTRUMENT_URI = UriTemplate.parse("labtools://instrument/{name}")
DATA_URI = UriTemplate.parse("labtools://data/{instrument}/{number}")
RESULT_TEMPLATE = UriTemplate.parse(RESULT_URI)
#: the ``_meta`` key of a refusal's error object (code, message, field, hint)
ERROR_META = "labtools/error"

INSTRUCTIONS = (
    "Tools drive laboratory instruments. Physical quantities are objects "
    '{"value": number, "unit": name} with the unit from the listed enum. A refused call '
    "changes nothing and says why: read its code, field and hint, then correct the call."
)


def build_server(lab: ToolHost, *, read_only: bool = False, name: str = "labtools") -> Server:
    """An MCP server exposing ``lab`` (or a session); ``read_only`` exposes only tools that
    change nothing."""
    return serve_slot(LabSlot.ready(lab), Catalogue(listing(lab, read_only=read_only)), name=name)


def listing(lab: ToolHost, *, read_only: bool = False) -> list[types.Tool]:
    """``lab``'s tools as ``tools/list`` gives them, long-running ones with their
    ``execution.taskSupport``."""
    entries = lab.tools("mcp", read_only=read_only)
    support = tasks.support_of(lab, {entry["name"] for entry in entries})
    return [mcp_tool(entry, support.get(entry["name"])) for entry in entries]


def serve_slot(slot: LabSlot, catalogue: Catalogue, *, name: str = "labtools") -> Server:
    """An MCP server listing ``catalogue`` and serving the lab in ``slot``, which may still be
    being built: ``initialize`` and ``tools/list`` are answered at once, other requests wait
    for the lab."""
    results = ResultStore()  # summarised results, readable whole as resources

    def result_of(result: ToolResult) -> types.CallToolResult:
        return _result(result, results)

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = types.ListToolsResult(tools=catalogue.listed(ctx))
        slot.start()  # a lab whose build waited for the first answer
        return listed

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            lab = await slot.get()
        except ToolError as error:
            return result_of(ToolResult.failure(error))
        if params.name not in catalogue.names() and params.name in lab.tool_names():
            listed = ", ".join(sorted(catalogue.names()))
            hidden = UnknownTool(
                f"no tool named {brief(params.name)} on this server",
                hint=f"this server is read-only; tools: {listed}",
            )
            return result_of(ToolResult.failure(hidden))
        arguments: Any = params.arguments if params.arguments is not None else {}
        return result_of(await lab.acall(params.name, arguments, progress=_progress(ctx)))

    # tools the lab's configuration lists under ``confirm`` run only once a person confirms;
    # long-running tools may run as MCP tasks (wired below, once the server exists)
    confirmation = Confirmation(slot)
    guarded_call_tool = confirmation.guard(call_tool, result_of)

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                name="state",
                uri=STATE_URI,
                mime_type="application/json",
                description="What the lab believes: every instrument's state.",
            )
        ]
        instruments = await _instruments(slot)
        resources += [
            types.Resource(
                name=f"instrument {key}",
                uri=f"labtools://instrument/{key}",
                mime_type="application/json",
                description=f"State of the {inst.kind.replace('_', ' ')} '{key}'.",
            )
            for key, inst in instruments.items()
        ]
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="result",
                    uri_template=RESULT_URI,
                    mime_type="application/json",
                    description="A tool result too long to give inline, whole.",
                ),
                types.ResourceTemplate(
                    name="data",
                    uri_template=str(DATA_URI),
                    mime_type="application/json",
                    description="Full data behind a handle in a tool result, e.g. 'spec/3'.",
                ),
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        lab = await _lab_for_resources(slot)
        instruments: dict[str, Any] = getattr(lab, "instruments", {})
        if uri == STATE_URI:
            payload: Any = lab.state()
        elif (match := INSTRUMENT_URI.match(uri)) is not None and match["name"] in instruments:
            payload = instruments[match["name"]].state()
        elif (match := DATA_URI.match(uri)) is not None:
            try:
                payload = lab.data(f"{match['instrument']}/{match['number']}")
            except Exception as exc:
                raise _not_found(uri, str(exc)) from None
        elif (match := RESULT_TEMPLATE.match(uri)) is not None and str(match["number"]).isdigit():
            try:
                payload = results.get(int(str(match["number"])))
            except KeyError:
                kept = ", ".join(map(str, results.kept())) or "none"
                raise _not_found(uri, f"results kept: {kept}") from None
        else:
            raise _not_found(uri)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="application/json", text=json.dumps(payload)
                )
            ]
        )

    server = Server(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=guarded_call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=catalogue.listen_handler(),
    )
    if catalogue.may_change:
        server.middleware.append(catalogue.middleware())
    tasks.install(server, slot, catalogue, result_of, confirmation)
    return server


def _progress(ctx: ServerRequestContext) -> ProgressCallback:
    """Progress reports to the client (a no-op unless its request asked for them)."""

    async def report(done: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(done, total, message)

    return report


async def _lab_for_resources(slot: LabSlot) -> ToolHost:
    try:
        return await slot.get()
    except ToolError as error:
        raise MCPError(code=types.INTERNAL_ERROR, message=error.message) from None


async def _instruments(slot: LabSlot) -> dict[str, Any]:
    return getattr(await _lab_for_resources(slot), "instruments", {})


def mcp_tool(entry: dict[str, Any], task_support: TaskSupport | None = None) -> types.Tool:
    """One entry of a lab's ``tools("mcp")`` as the SDK's ``Tool``, with its annotations."""
    hints = entry["annotations"]
    execution = types.ToolExecution(task_support=task_support) if task_support else None
    return types.Tool(
        name=entry["name"],
        title=entry["title"],
        description=entry["description"],
        input_schema=entry["inputSchema"],
        output_schema=entry.get("outputSchema"),
        annotations=types.ToolAnnotations(
            title=hints["title"],
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
        execution=execution,
    )


def _result(result: ToolResult, results: ResultStore) -> types.CallToolResult:
    if result.ok:
        data = result.data or {}
        whole = inline(data)
        if whole is not None:
            content: list[types.ContentBlock] = [types.TextContent(type="text", text=whole)]
        else:
            uri = results.put(data)
            note = f" (summarised: the whole result is at {uri} and in structuredContent)"
            content = [
                types.TextContent(type="text", text=summary(data) + note),
                types.ResourceLink(
                    type="resource_link",
                    name="result",
                    uri=uri,
                    mime_type="application/json",
                    description="The whole tool result.",
                ),
            ]
        return types.CallToolResult(content=content, structured_content=data)
    error = result.error or {}
    return types.CallToolResult(
        is_error=True,
        content=[types.TextContent(type="text", text=error_text(error))],
        _meta={ERROR_META: error},
    )


def _not_found(uri: str, detail: str | None = None) -> MCPError:
    """An unknown resource: invalid params with the URI, as the SDK's own servers answer."""
    message = f"Resource not found: {uri}" + (f" ({detail})" if detail else "")
    return MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri})


def error_text(error: dict[str, Any]) -> str:
    """A refusal as one readable line: ``unit_error: … (field /volume). Hint: …``."""
    text = f"{error['code']}: {error['message']}"
    if error.get("field"):
        text += f" (field {error['field']})"
    if error.get("hint"):
        text += f". Hint: {error['hint']}"
    return text
