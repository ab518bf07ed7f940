"""A loopback embedding server that speaks OpenAI's ``/v1/embeddings`` and Ollama's ``/api/embed``.

    with FakeEmbedder(dim=8) as server:
        ... api_base = server.url (OpenAI: …/v1) or server.base (Ollama) ...
        server.requests  # every request body, as JSON

A text's vector is its words hashed into ``dim`` buckets (not normalised: the client must do it), so texts
sharing words are near. Answers list the vectors in reverse order, each with its ``index``, as a server
may. ``status`` makes every answer that HTTP error.
"""

from __future__ import annotations

import hashlib
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers import Background


def bag_of_words(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 3.0
    return vector


class _Handler(BaseHTTPRequestHandler):
    server: FakeEmbedder
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.paths.append(self.path)
        self.server.requests.append(body)
        if self.server.status != 200:
            self._json(self.server.status, {"error": {"message": "model not loaded"}})
            return
        texts = body.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        vectors = [bag_of_words(text, self.server.dim) for text in texts]
        if self.path == "/v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)][::-1]
            self._json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model"),
                    "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
                },
            )
        elif self.path == "/api/embed":
            self._json(200, {"model": body.get("model"), "embeddings": vectors, "prompt_eval_count": len(texts)})
        else:
            self._json(404, {"error": "not found"})


class FakeEmbedder(Background):
    def __init__(self, dim: int = 16, status: int = 200) -> None:
        super().__init__(_Handler)
        self.dim = dim
        self.status = status
        self.paths: list[str] = []
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"{self.base}/v1"
