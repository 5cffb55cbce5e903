"""Local HTTP endpoints on 127.0.0.1 that stand in for an LLM API and record requests.

They let real clients (the providers' SDKs, verifiers' chat program) run their real HTTP and
parsing code with no network.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Endpoint:
    """A threaded HTTP server whose POSTs are answered by :meth:`reply`; keeps what it got."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                endpoint.requests.append({"path": self.path, "body": body, "headers": headers})
                status, content_type, data = endpoint.reply(body)
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def reply(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> _Endpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class ScriptedEndpoint(_Endpoint):
    """Answers each POST with the next body of ``script``."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        super().__init__()
        self.script = list(script)

    def reply(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
        reply = self.script.pop(0) if self.script else {"error": "script ended"}
        return 200, "application/json", json.dumps(reply).encode()

    def __enter__(self) -> ScriptedEndpoint:
        super().__enter__()
        return self


class ChatAgent(_Endpoint):
    """An OpenAI chat-completions model that makes ``calls`` (name, arguments) one per turn,
    whatever the tool results say, then answers ``final``; streams (server-sent events) when
    the request asks to."""

    def __init__(self, calls: list[tuple[str, Any]], final: str = "done") -> None:
        super().__init__()
        self.calls = list(calls)
        self.final = final

    def script(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        """The calls of the conversation ``body`` continues (``calls``; a subclass may pick
        them by the prompt)."""
        return self.calls

    def reply(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
        turn = sum(1 for message in body.get("messages", []) if message.get("role") == "tool")
        calls = self.script(body)
        if turn < len(calls):
            name, arguments = calls[turn]
            call = {
                "id": f"call_{turn + 1}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": self.final}, "stop"
        head = {"id": f"chat-{turn}", "created": int(time.time()), "model": body.get("model")}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            reply = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            return 200, "application/json", json.dumps(reply).encode()
        delta = {k: v for k, v in message.items() if v is not None}
        if "tool_calls" in delta:
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(delta["tool_calls"])]
        chunk = {**head, "object": "chat.completion.chunk"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        return 200, "text/event-stream", data + b"data: [DONE]\n\n"

    def __enter__(self) -> ChatAgent:
        super().__enter__()
        return self
