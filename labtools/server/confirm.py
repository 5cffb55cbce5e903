"""A person confirms, through the MCP host, the tools a lab lists under ``confirm``.

Before such a tool runs, the server asks the host with a form (``confirm``: a boolean):

- protocol 2025-11-25 and earlier: an ``elicitation/create`` request during the call;
- protocol 2026-07-28: the call answers ``InputRequiredResult`` with the same form, bound to the
  call by ``requestState``; the host asks the person and retries with ``inputResponses``.

The tool runs only if the person accepts with ``confirm: true``. A host that cannot ask (no
form elicitation, no channel for a request) or a person who declines or dismisses the form gets
a ``precondition_failed`` refusal with a hint, and nothing runs. Calls that would be refused
anyway (bad arguments; in a shadow run, a call the twin refuses) are refused without asking
anyone.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from labtools.errors import PreconditionFailed, ToolError
from labtools.result import ToolResult
from labtools.server.slot import LabSlot

__all__ = ["FORM", "Confirmation"]

log = logging.getLogger(__name__)

#: the key of the form in ``inputRequests``/``inputResponses`` (2026-07-28)
KEY = "confirm"
#: what the host shows: one required boolean
FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Run it",
            "description": "Tick to let the instrument do this; it cannot be undone.",
        }
    },
    "required": ["confirm"],
}

Handler = Callable[[ServerRequestContext[Any, Any], types.CallToolRequestParams], Awaitable[Any]]
Outcome = ToolResult | types.InputRequiredResult | None


class Confirmation:
    """Asks for the confirmations the lab needs (``lab.needs_confirmation(name)``)."""

    def __init__(self, slot: LabSlot) -> None:
        self._slot = slot
        self._secret = secrets.token_bytes(32)

    async def needed(self, name: str, arguments: object) -> bool:
        """Whether this call needs a confirmation: a listed tool, with arguments the lab would
        accept and, in a shadow run, that its twin does (a call refused anyway needs none, nor
        one to a lab that could not be built)."""
        try:
            lab = await self._slot.get()
        except ToolError:
            return False
        needs: Callable[[str], bool] = getattr(lab, "needs_confirmation", lambda _: False)
        if not needs(name):
            return False
        # a call refused now is refused again when it runs: no one is asked about it
        return await lab.preflight(name, arguments) is None  # type: ignore[attr-defined]

    async def ask(
        self,
        ctx: ServerRequestContext[Any, Any],
        name: str,
        arguments: object,
        params: types.CallToolRequestParams | None = None,
    ) -> Outcome:
        """``None`` when the call may go ahead; else the refusal, or (2026-07-28) the
        ``InputRequiredResult`` asking for the confirmation."""
        if not await self.needed(name, arguments):
            return None
        message = _message(name, arguments)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._modern(ctx, name, arguments, message, params)
        if not (_can_elicit(ctx) and ctx.session.can_send_request):
            return _unanswerable(name)
        try:
            answer = await ctx.session.elicit_form(message, FORM, related_request_id=ctx.request_id)
        except Exception as exc:  # the host failed to ask: nothing runs
            log.warning("confirmation of %s failed: %s", name, exc)
            return _unanswerable(name, f"the host failed to ask ({type(exc).__name__})")
        return _verdict(name, answer)

    def _modern(
        self,
        ctx: ServerRequestContext[Any, Any],
        name: str,
        arguments: object,
        message: str,
        params: types.CallToolRequestParams | None,
    ) -> Outcome:
        state = self._state(name, arguments)
        responses = params.input_responses if params is not None else None
        if responses and KEY in responses:
            if params is None or not hmac.compare_digest(params.request_state or "", state):
                return ToolResult.failure(
                    PreconditionFailed(
                        f"the confirmation sent is not for this call of {name}",
                        hint="call the tool again and confirm what the host then shows",
                    )
                )
            return _verdict(name, responses[KEY])
        if not _can_elicit(ctx):
            return _unanswerable(name)
        form = types.ElicitRequestFormParams(message=message, requested_schema=FORM)
        return types.InputRequiredResult(
            input_requests={KEY: types.ElicitRequest(params=form)}, request_state=state
        )

    def _state(self, name: str, arguments: object) -> str:
        text = json.dumps([name, arguments], sort_keys=True, separators=(",", ":"), default=str)
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()

    def guard(
        self, handler: Handler, result_of: Callable[[ToolResult], types.CallToolResult]
    ) -> Handler:
        """``handler`` (the server's ``tools/call``), asking first where confirmation is
        needed."""

        async def call_tool(
            ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
        ) -> Any:
            arguments = params.arguments if params.arguments is not None else {}
            outcome = await self.ask(ctx, params.name, arguments, params)
            if isinstance(outcome, types.InputRequiredResult):
                return outcome
            if isinstance(outcome, ToolResult):
                return result_of(outcome)
            return await handler(ctx, params)

        return call_tool


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # an empty ``elicitation: {}`` is form mode (2025-06-18)
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _message(name: str, arguments: object) -> str:
    shown = json.dumps(arguments, separators=(", ", ": "), default=str)
    if len(shown) > 600:
        shown = shown[:600] + " …"
    return (
        f"An AI agent asks to run {name} on real laboratory hardware. It cannot be undone. "
        f"Arguments: {shown}"
    )


def _verdict(name: str, answer: object) -> ToolResult | None:
    action = getattr(answer, "action", None)
    content = getattr(answer, "content", None)
    if action is None and isinstance(answer, Mapping):
        action, content = answer.get("action"), answer.get("content")
    if action == "accept" and isinstance(content, Mapping) and content.get(KEY) is True:
        return None
    said = {"accept": "did not tick confirm", "decline": "declined", "cancel": "dismissed it"}
    return ToolResult.failure(
        PreconditionFailed(
            f"{name} was not confirmed (the person {said.get(str(action), 'did not answer')}); "
            "nothing was done",
            hint="ask the person whether to run it; call it again only if they agree",
        )
    )


def _unanswerable(
    name: str, why: str = "this MCP host cannot ask (no form elicitation)"
) -> ToolResult:
    return ToolResult.failure(
        PreconditionFailed(
            f"{name} needs a person's confirmation on this lab, and {why}; nothing was done",
            hint="use a host that supports elicitation, or have the lab's operator run it "
            "(or remove it from the lab's confirm list)",
        )
    )
