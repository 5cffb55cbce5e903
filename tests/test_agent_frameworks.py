"""docs/mcp.md's client and agent-framework code, run as printed against ``labtools serve`` over
stdio: only the LLM is replaced, by each framework's own test model, and the server's path by
this environment's. Each scripted model sends a refusal three times on one tool, then a valid
call, then answers: the run must reach the answer with every refusal's code and hint seen.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "mcp.md"
LABTOOLS = Path(sys.executable).parent / "labtools"
PLACEHOLDER = '"/path/to/labtools/.venv/bin/labtools"'
#: refused: a channel the handler does not have
REFUSED = ("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [9]})
REFUSAL = "out_of_range: channels.0 9 is outside the allowed range (field /channels/0). Hint:"
PLAN = [REFUSED, REFUSED, REFUSED, ("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})]
ANSWER = "a tip on channel 0"


def _block(heading: str) -> str:
    """The first Python block under ``heading`` in docs/mcp.md."""
    section = DOC.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, heading
    return found.group(1)


def _run(code: str, replacements: dict[str, str], namespace: dict[str, Any]) -> list[str]:
    """``code`` with each replacement made once (the doc must still say it), executed; what it
    printed, line by line (``print`` is the namespace's: the server's stderr stays a file)."""
    for old, new in {PLACEHOLDER: repr(str(LABTOOLS)), **replacements}.items():
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    printed: list[str] = []
    namespace["print"] = lambda *values: printed.append(" ".join(map(str, values)))
    exec(compile(code, str(DOC), "exec"), namespace)
    return printed


def test_the_mcp_sdk_client_by_hand() -> None:
    (printed,) = _run(_block("## A client by hand"), {}, {})
    count, is_error, text = printed.split(" ", 2)
    assert int(count) >= 20 and is_error == "True" and text.startswith(REFUSAL)


# -- pydantic-ai -----------------------------------------------------------------------------
def _pydantic_ai_model(seen: list[Any]) -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def script(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.extend(messages[-1].parts)
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < len(PLAN):
            name, arguments = PLAN[turn]
            return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart(ANSWER)])

    return FunctionModel(script)


def test_pydantic_ai_as_documented_reads_every_refusal() -> None:
    from pydantic_ai.messages import ToolReturnPart

    seen: list[Any] = []
    model = '"anthropic:claude-sonnet-4-5"'
    printed = _run(_block("### pydantic-ai"), {model: "MODEL"}, {"MODEL": _pydantic_ai_model(seen)})
    assert printed == [ANSWER]
    returns = [p for p in seen if isinstance(p, ToolReturnPart)]
    assert [p.tool_name for p in returns] == [name for name, _ in PLAN]
    assert all(str(p.content).startswith(REFUSAL) for p in returns[:3])
    assert returns[3].content["tips"][0]["channel"] == 0


def test_pydantic_ai_without_the_setting_ends_at_the_second_refusal() -> None:
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    setting = re.search(r" *tool_error_behavior=.*\n", _block("### pydantic-ai")).group(0)
    model = '"anthropic:claude-sonnet-4-5"'
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 1"):
        _run(
            _block("### pydantic-ai"),
            {model: "MODEL", setting: ""},
            {"MODEL": _pydantic_ai_model([])},
        )


# -- OpenAI Agents SDK -----------------------------------------------------------------------
def _agents_model(inputs: list[Any]) -> Any:
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class Scripted(Model):
        """The Agents SDK's ``Model``: each turn the plan's next call, then the answer."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any):
            inputs.append(input)
            turn = len(inputs) - 1
            if turn < len(PLAN):
                name, arguments = PLAN[turn]
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc{turn}",
                        call_id=f"c{turn}",
                        name=name,
                        arguments=json.dumps(arguments),
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
                output = [
                    ResponseOutputMessage(
                        type="message",
                        id="answer",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the documented run does not stream")

    return Scripted()


def test_the_openai_agents_sdk_as_documented_reads_every_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no key, no trace export
    inputs: list[Any] = []
    code = _block("### OpenAI Agents SDK")
    printed = _run(code, {'model="gpt-5"': "model=MODEL"}, {"MODEL": _agents_model(inputs)})
    assert printed == [ANSWER]
    outputs = [
        item["output"]
        for item in inputs[-1]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    texts = [o if isinstance(o, str) else o[0]["text"] for o in outputs]
    assert len(texts) == len(PLAN)
    assert all(text.startswith(REFUSAL) for text in texts[:3])
    assert json.loads(texts[3])["tips"][0]["channel"] == 0
