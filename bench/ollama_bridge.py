"""Ollama's HTTP API in front of an OpenAI-compatible server, to run the Ollama path on a real model.

    python bench/ollama_bridge.py --port 11435 --upstream http://127.0.0.1:8090/v1 --name llama3.2
    monitor eval --model ollama_chat/llama3.2 --api-base http://127.0.0.1:11435

It speaks what litellm's ``ollama_chat`` provider sends (``/api/chat`` with ``messages``, ``options``,
``format`` and ``tools``; ``/api/tags``; ``/api/show``) and translates: ``format`` (a JSON schema) becomes
``response_format``, ``options.num_predict`` becomes ``max_tokens``. No Ollama can be installed on our
machines; this lets the real model answer through the same client code a user's Ollama would.
"""

from __future__ import annotations

import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


def to_openai(body: dict[str, Any], model: str) -> dict[str, Any]:
    options = body.get("options") or {}
    request: dict[str, Any] = {
        "model": model,
        "messages": body.get("messages", []),
        "stream": False,
        "temperature": options.get("temperature", 0.0),
    }
    if options.get("num_predict"):
        request["max_tokens"] = options["num_predict"]
    if options.get("stop"):
        request["stop"] = options["stop"]
    if isinstance(body.get("format"), dict):
        request["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": body["format"]}}
    elif body.get("format") == "json":
        request["response_format"] = {"type": "json_object"}
    if body.get("tools"):
        request["tools"] = body["tools"]
    return request


def to_ollama(reply: dict[str, Any], name: str) -> dict[str, Any]:
    message = reply["choices"][0]["message"]
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"] or "{}")}}
            for c in message["tool_calls"]
        ]
    usage = reply.get("usage") or {}
    return {
        "model": name,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "message": out,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": usage.get("prompt_tokens", 0),
        "eval_count": usage.get("completion_tokens", 0),
    }


class Bridge(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, upstream: str, name: str, model: str) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.upstream, self.name, self.model = upstream.rstrip("/"), name, model


class Handler(BaseHTTPRequestHandler):
    server: Bridge
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            self._json(200, {"models": [{"name": f"{self.server.name}:latest", "model": f"{self.server.name}:latest"}]})
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/api/show":
            self._json(
                200,
                {"details": {"family": "qwen2"}, "model_info": {"general.context_length": 8192}, "capabilities": ["completion", "tools"]},
            )
        elif self.path == "/api/chat":
            try:
                reply = httpx.post(
                    f"{self.server.upstream}/chat/completions", timeout=600, trust_env=False, json=to_openai(body, self.server.model)
                )
                reply.raise_for_status()
                self._json(200, to_ollama(reply.json(), self.server.name))
            except httpx.HTTPError as exc:
                self._json(502, {"error": f"upstream: {exc}"})
        else:
            self._json(404, {"error": "not found"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=11435)
    parser.add_argument("--upstream", default="http://127.0.0.1:8090/v1")
    parser.add_argument("--name", default="llama3.2", help="the model name Ollama clients ask for")
    parser.add_argument("--model", default="qwen2.5-coder:0.5b", help="the upstream model")
    args = parser.parse_args()
    print(f"Ollama API on http://127.0.0.1:{args.port} -> {args.upstream} ({args.model} as {args.name})", flush=True)
    Bridge(args.port, args.upstream, args.name, args.model).serve_forever()


if __name__ == "__main__":
    main()
