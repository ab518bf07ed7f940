"""bench/ollama_bridge.py: the Ollama path of the agent, through the bridge, onto an OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

from ollama import FakeOpenAI, call, final
from servers import Misbehaving, free_port

from monitor import wiring
from monitor.config import Config
from monitor.store import Store

spec = importlib.util.spec_from_file_location("ollama_bridge", Path(__file__).parents[1] / "bench" / "ollama_bridge.py")
assert spec is not None and spec.loader is not None
bridge = importlib.util.module_from_spec(spec)
sys.modules["ollama_bridge"] = bridge
spec.loader.exec_module(bridge)


def test_an_ollama_client_reaches_the_real_server_through_the_bridge(web: Misbehaving, db_path: str) -> None:
    script = [
        call("check_target", name="api"),
        call("recent_results", name="api"),
        call("search_incidents", query="api"),
        call("record_diagnosis", root_cause="server_error", related_incident="no", confidence="high", summary="api answers 500"),
        final("api answers 500"),
    ]
    with FakeOpenAI(script=script) as upstream:
        server = bridge.Bridge(free_port(), upstream.url, "llama3.2", "qwen2.5-coder:0.5b")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            config = Config.model_validate(
                {
                    "targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}],
                    "model": {"id": "auto", "api_base": f"http://127.0.0.1:{server.server_address[1]}", "retries": 0},
                }
            )
            investigator = wiring.investigator(config, Store(db_path))
            outcome = investigator.investigate("api")
        finally:
            server.shutdown()
            server.server_close()
    assert investigator.model_label == "ollama_chat/llama3.2" and outcome.state == "success"
    first = upstream.chats[0]
    assert first["model"] == "qwen2.5-coder:0.5b" and first["max_tokens"] == 512
    assert first["response_format"]["json_schema"]["schema"]["properties"]["name"]["enum"] == ["check_target"]
    assert outcome.diagnosis is not None and outcome.diagnosis.root_cause == "server_error"
