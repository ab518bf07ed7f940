"""A scripted server that speaks Ollama's real HTTP protocol, for tests and benchmarks.

    with FakeOllama(script=[call("check_target", name="api"), final("done")]) as ollama:
        ... model api_base = ollama.url ...
        ollama.chats  # every /api/chat request body, as JSON

Each ``/api/chat`` request takes the next reply from the script (or from
``default`` once the script is used up). A reply is a dict:

    {"tool": name, "args": {...}}   a tool call: native, or as JSON content when the request has a
                                    ``format`` schema (args may be a JSON string)
    {"content": "text"}             prose, no tool call
    {"status": 500}                 an HTTP error
    {"hang": seconds}               no answer for that long
    {"raw": "bytes"}                a 200 with a body that is not Ollama's JSON

or a function of the request body that returns one of those.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers import Background

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


def final(answer: str) -> dict[str, Any]:
    return call("final_answer", answer=answer)


def prompt_text(body: dict[str, Any]) -> str:
    """All message text of a chat request, joined."""
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
        else:
            parts.append(str(content or ""))
    return "\n".join(parts)


class _Handler(BaseHTTPRequestHandler):
    server: FakeOllama
    disable_nagle_algorithm = True  # else every keep-alive answer waits ~40 ms
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        if self.path == "/api/tags":
            self._json(
                200,
                {
                    "models": [
                        {"name": m, "model": m, "size": 2019393189, "details": {"family": "llama", "parameter_size": "3.2B"}}
                        for m in self.server.models
                    ]
                },
            )
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.paths.append(self.path)
        if self.path == "/api/show":
            self._json(
                200,
                {
                    "modelfile": "",
                    "parameters": "",
                    "template": "{{ .Prompt }}",
                    "details": {"family": "llama"},
                    "model_info": {"llama.context_length": 131072},
                    "capabilities": ["completion", "tools"],
                },
            )
        elif self.path == "/api/chat":
            self.server.chats.append(body)
            self._chat(body, self.server.next_reply(body))
        else:
            self._json(404, {"error": "not found"})

    def _chat(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
        if "hang" in reply:
            self.server.stopping.wait(reply["hang"])
            return
        if "status" in reply:
            self._json(reply["status"], {"error": reply.get("error", "model crashed")})
            return
        if "raw" in reply:
            self._json(200, reply["raw"].encode())
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content", "")}
        if "tool" in reply and isinstance(body.get("format"), dict):  # constrained: the call is the JSON content
            message["content"] = json.dumps({"name": reply["tool"], "arguments": reply["args"]})
        elif "tool" in reply:
            message["tool_calls"] = [{"function": {"name": reply["tool"], "arguments": reply["args"]}}]
        prompt_tokens = len(json.dumps(body.get("messages", []))) // 4
        self._json(
            200,
            {
                "model": body.get("model"),
                "created_at": "2026-11-25T00:00:00Z",
                "message": message,
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": prompt_tokens,
                "eval_count": 20,
            },
        )


class _OpenAIHandler(_Handler):
    """The same script, spoken as an OpenAI-compatible server (llama.cpp, vLLM, LM Studio)."""

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.server.models]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.paths.append(self.path)
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": "not found"})
            return
        self.server.chats.append(body)
        reply = self.server.next_reply(body)
        if "status" in reply or "hang" in reply or "raw" in reply:
            self._chat(body, reply)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content", "")}
        if "tool" in reply and isinstance(body.get("response_format"), dict):
            message["content"] = json.dumps({"name": reply["tool"], "arguments": reply["args"]})
        elif "tool" in reply:
            message["tool_calls"] = [
                {"id": "call_1", "type": "function", "function": {"name": reply["tool"], "arguments": json.dumps(reply["args"])}}
            ]
        tokens = len(json.dumps(body.get("messages", []))) // 4
        self._json(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1795600000,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20},
            },
        )


class FakeOllama(Background):
    handler: type[BaseHTTPRequestHandler] = _Handler

    def __init__(
        self, script: Sequence[Reply] | None = None, default: Reply | None = None, models: tuple[str, ...] = ("llama3.2:latest",)
    ) -> None:
        super().__init__(self.handler)
        self.script = list(script or [])
        self.default = default or final("done")
        self.models = models
        self.chats: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.base

    def next_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            reply = self.script.pop(0) if self.script else self.default
        return reply(body) if callable(reply) else reply


class FakeOpenAI(FakeOllama):
    """``FakeOllama``'s script behind ``/v1/chat/completions``; ``url`` is the api_base (…/v1)."""

    handler = _OpenAIHandler

    @property
    def url(self) -> str:
        return f"{self.base}/v1"
