"""Each provider's run_agent loop, with its official SDK, against a scripted local endpoint.

The endpoint replays responses of the recorded shape (a turn with two tool calls, one of them
bad, then a final answer); the tests check the tool-result messages the SDK sent back.
"""

from __future__ import annotations

import json

from scripted_endpoint import ScriptedEndpoint

GOOD = {"tip_rack": "tips", "channels": [0]}
BAD = {"items": [{"channel": 0, "well": "stock:A1", "volume": {"value": 5, "unit": "gallon"}}]}


def test_openai_responses_loop(lab) -> None:
    import openai

    from labtools.providers.openai import run_agent

    first = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "lh_pick_up_tips",
                "arguments": json.dumps(GOOD),
                "status": "completed",
            },
            {
                "type": "function_call",
                "id": "fc_2",
                "call_id": "call_2",
                "name": "lh_aspirate",
                "arguments": json.dumps(BAD),
                "status": "completed",
            },
        ],
    }
    final = {
        "id": "resp_2",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            }
        ],
    }
    with ScriptedEndpoint([first, final]) as endpoint:
        client = openai.OpenAI(base_url=endpoint.url + "/v1", api_key="x", max_retries=0)
        run = run_agent(client, "m", lab, "Pick up a tip and aspirate.")
    assert run.final_text == "Done." and run.turns == 2 and run.stopped == "answer"
    assert [c.result.ok for c in run.calls] == [True, False]
    sent = endpoint.requests[0]["body"]
    assert endpoint.requests[0]["path"] == "/v1/responses"
    assert {t["name"] for t in sent["tools"]} == set(lab.tool_names())
    outputs = [
        i for i in endpoint.requests[1]["body"]["input"] if i.get("type") == "function_call_output"
    ]
    assert [o["call_id"] for o in outputs] == ["call_1", "call_2"]
    assert json.loads(outputs[0]["output"])["tips_left"] == 95
    assert json.loads(outputs[1]["output"])["error"]["code"] == "unit_error"
    assert lab.instruments["lh"].tips_left == 95


def test_openai_chat_loop(lab) -> None:
    import openai

    from labtools.providers.openai import run_agent

    first = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lh_pick_up_tips", "arguments": json.dumps(GOOD)},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "lh_aspirate", "arguments": "{not json"},
                        },
                    ],
                },
            }
        ],
    }
    final = {
        "id": "c2",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Tip on."},
            }
        ],
    }
    with ScriptedEndpoint([first, final]) as endpoint:
        client = openai.OpenAI(base_url=endpoint.url + "/v1", api_key="x", max_retries=0)
        run = run_agent(client, "m", lab, "Pick up a tip.", api="chat")
    assert run.final_text == "Tip on."
    messages = endpoint.requests[1]["body"]["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]
    error = json.loads(tool_messages[1]["content"])["error"]
    assert error["code"] == "invalid_arguments" and "JSON" in error["message"]
    assert endpoint.requests[0]["body"]["tools"][0]["function"]["strict"] is True


def test_anthropic_loop(lab) -> None:
    import anthropic

    from labtools.providers.anthropic import run_agent

    first = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "text", "text": "Working."},
            {"type": "tool_use", "id": "toolu_1", "name": "lh_pick_up_tips", "input": GOOD},
            {"type": "tool_use", "id": "toolu_2", "name": "lh_aspirate", "input": BAD},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    final = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "Finished."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    with ScriptedEndpoint([first, final]) as endpoint:
        client = anthropic.Anthropic(base_url=endpoint.url, api_key="x", max_retries=0)
        run = run_agent(client, "m", lab, "Pick up a tip and aspirate.")
    assert run.final_text == "Finished."
    assert endpoint.requests[0]["path"] == "/v1/messages"
    reply = endpoint.requests[1]["body"]["messages"][-1]
    assert reply["role"] == "user"
    good, bad = reply["content"]
    assert good["tool_use_id"] == "toolu_1" and "is_error" not in good
    assert bad["tool_use_id"] == "toolu_2" and bad["is_error"] is True
    assert json.loads(bad["content"])["error"]["field"] == "/items/0/volume/unit"
    strict = [t["name"] for t in endpoint.requests[0]["body"]["tools"] if t.get("strict")]
    assert "lh_aspirate" in strict and "lh_get_deck" not in strict


def test_gemini_loop(lab) -> None:
    from google import genai
    from google.genai import types

    from labtools.providers.gemini import run_agent

    first = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"id": "fc_1", "name": "lh_pick_up_tips", "args": GOOD}},
                        {"functionCall": {"id": "fc_2", "name": "lh_aspirate", "args": BAD}},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    final = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "All set."}]}, "finishReason": "STOP"}
        ]
    }
    with ScriptedEndpoint([first, final]) as endpoint:
        client = genai.Client(
            api_key="x", http_options=types.HttpOptions(base_url=endpoint.url, api_version="v1beta")
        )
        run = run_agent(client, "gemini-x", lab, "Pick up a tip and aspirate.")
    assert run.final_text == "All set."
    assert endpoint.requests[0]["path"] == "/v1beta/models/gemini-x:generateContent"
    declarations = endpoint.requests[0]["body"]["tools"][0]["functionDeclarations"]
    assert declarations[0]["parameters_json_schema"]["additionalProperties"] is False
    parts = endpoint.requests[1]["body"]["contents"][-1]["parts"]
    good, bad = (p["functionResponse"] for p in parts)
    assert good["id"] == "fc_1" and good["response"]["output"]["tips_left"] == 95
    assert bad["id"] == "fc_2" and bad["response"]["error"]["code"] == "unit_error"


def test_loops_stop_at_max_turns(lab) -> None:
    import anthropic

    from labtools.providers.anthropic import run_agent

    again = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "t", "name": "lh_get_deck", "input": {}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    with ScriptedEndpoint([again] * 3) as endpoint:
        client = anthropic.Anthropic(base_url=endpoint.url, api_key="x", max_retries=0)
        run = run_agent(client, "m", lab, "Look.", max_turns=3)
    assert run.stopped == "max_turns" and run.turns == 3 and len(run.calls) == 3


def test_importing_labtools_needs_no_provider_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import labtools, labtools.lab, labtools.providers.calls; "
        "bad = [m for m in ('openai', 'anthropic', 'google.genai', 'mcp') if m in sys.modules];"
        " print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
