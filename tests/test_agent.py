"""The agent end to end: smolagents -> litellm -> HTTP -> a scripted Ollama; and the builtin model."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ollama import FakeOllama, FakeOpenAI, call, final, prompt_text
from past import known
from servers import Misbehaving

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def make_config(web: Misbehaving, model: dict[str, Any], **sections: Any) -> Config:
    return Config.model_validate(
        {
            "targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}, {"name": "web", "url": web.url("/healthy"), "timeout": 1}],
            "model": model,
            **sections,
        }
    )


@pytest.fixture(autouse=True)
def main_loop() -> Iterator[None]:
    """An event loop of the main thread's own, closed at the end: litellm's logging asks the main thread for its
    event loop (asyncio.get_event_loop(), which makes one on Python 3.11 and leaves it open), and a check's
    asyncio.run() drops the loop set there without closing it."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    store = Store(db_path)
    yield store
    store.close()


def ollama_model(server: FakeOllama, **extra: Any) -> dict[str, Any]:
    return {"id": "auto", "api_base": server.url, "timeout": 2, "retries": 0, "backoff": "10ms", **extra}


def seed_history(store: Store, config: Config, checks: int = 3) -> int:
    for _ in range(checks):
        store.results.add_results(Checker().run([config.target("api")]))
    # it says what the target says now ({"error": "boom"}): the evidence decides for it (monitor.memory.claims)
    past = IncidentWrites(store).open_incident(
        "api", "consecutive", 'api answered 500 {"error": "boom"} after deploy', root_cause="server_error"
    )
    IncidentWrites(store).close_incident(past, resolution="rolled back the deploy and flushed the cache")
    return IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")


def diagnose(**overrides: Any) -> dict[str, Any]:
    return call(
        "record_diagnosis",
        **{"root_cause": "server_error", "related_incident": "no", "confidence": "high", "summary": "api is down", **overrides},
    )


def offered(body: dict[str, Any]) -> list[str]:
    """The tools a request offers: natively, or as the names a constrained reply may call."""
    if isinstance(body.get("format"), dict):
        schema = body["format"]
        return [s["properties"]["name"]["enum"][0] for s in schema.get("anyOf", [schema])]
    return [t["function"]["name"] for t in body.get("tools", [])]


def test_requests_are_constrained_guided_and_carry_the_recalled_fix(web: Misbehaving, store: Store) -> None:
    script = [
        call("check_target", name="api"),
        call("recent_results", name="api"),
        call("search_incidents", query="api 500"),
        diagnose(related_incident="#1"),
        final("api is down"),
    ]
    with FakeOllama(script=script) as ollama:
        config = make_config(web, ollama_model(ollama, num_ctx=4096))
        incident = seed_history(store, config)
        outcome = wiring.investigator(config, store).investigate(
            "api", incident=incident, pattern="consecutive", summary="3 consecutive failures of api"
        )
    assert outcome.state == "success" and outcome.answer == "api is down"
    assert [offered(body) for body in ollama.chats] == [
        ["check_target"],
        ["recent_results"],
        ["search_incidents"],
        ["record_diagnosis"],
        ["final_answer"],
    ]
    first = ollama.chats[0]
    assert "tools" not in first and first["format"]["properties"]["arguments"]["properties"]["name"]["enum"] == ["api"]
    assert first["options"]["num_ctx"] == 4096 and first["options"]["temperature"] == 0.0
    assert "| fix: rolled back the deploy and flushed the cache" in prompt_text(first)  # recalled, ranked
    assert f'target "api" ({web.url("/500")}) is unhealthy and incident #{incident} is open' in prompt_text(first)
    assert "[ALERT] Pattern detected: 4 consecutive failures of api" in prompt_text(ollama.chats[1])
    row = known(store.incidents.incident(incident))
    assert (row.diagnosis, row.root_cause, row.related_incident) == (  # the past fix, quoted and attributed
        "api is down #1 on api: 'rolled back the deploy and flushed the cache'",
        "server_error",
        1,
    )
    assert outcome.diagnosis is not None and outcome.diagnosis.related_incident == 1
    assert [s.kind for s in store.runs.steps(outcome.run_id)] == ["recall"] + ["action"] * 5


def test_unguided_and_unconstrained_offers_every_tool_natively(web: Misbehaving, store: Store) -> None:
    with FakeOllama(script=[diagnose(), final("api is down")]) as ollama:
        config = make_config(web, ollama_model(ollama, constrain="off"), agent={"guided": False})
        outcome = wiring.investigator(config, store).investigate("api")
    assert outcome.state == "success" and "format" not in ollama.chats[0]
    assert offered(ollama.chats[0]) == [
        "check_target",
        "recent_results",
        "search_incidents",
        "get_incident",
        "record_diagnosis",
        "neighbours",
        "final_answer",
    ]
    assert known(store.runs.run(outcome.run_id)).root_cause == "server_error"


def test_a_repeated_invalid_call_is_corrected_by_a_hotter_retry(web: Misbehaving, store: Store) -> None:
    wrong = call("investigate_health_problem", target="api", incident=1)
    script = [wrong, wrong, call("check_target", name="api"), final("api answers 500")]
    with FakeOllama(script=script) as ollama:
        config = make_config(web, ollama_model(ollama, constrain="off"))
        outcome = wiring.investigator(config, store).investigate("api")
    temperatures = [body["options"]["temperature"] for body in ollama.chats]
    assert temperatures == [0.0, 0.8, 0.8, 0.0] and outcome.state == "success"
    errors = [s.error for s in store.runs.steps(outcome.run_id)]
    assert "investigate_health_problem" in (errors[0] or "") and errors[2:] == [None, None]


def test_auto_falls_back_to_builtin_without_ollama(web: Misbehaving, store: Store, caplog: pytest.LogCaptureFixture) -> None:
    with FakeOllama(models=("mistral:latest",)) as ollama:
        config = make_config(web, ollama_model(ollama))
        investigator = wiring.investigator(config, store)
    assert investigator.model_label == "builtin"
    assert "has no llama3.2" in caplog.text and "ollama pull llama3.2" in caplog.text


@pytest.mark.parametrize(
    ("reply", "error_text"),
    [
        ({"content": "Everything looks fine to me."}, "does not contain any JSON blob"),
        (call("restart_everything", now=True), "Unknown tool restart_everything"),
        (call("recent_results", name="api", n="lots"), "Argument n has type 'string' but should be 'integer'"),
    ],
)
def test_model_mistakes_are_fed_back_and_the_run_goes_on(web: Misbehaving, store: Store, reply: dict[str, Any], error_text: str) -> None:
    with FakeOllama(script=[reply, final("recovered")]) as ollama:
        outcome = wiring.investigator(make_config(web, ollama_model(ollama)), store).investigate("api")
    assert outcome.state == "success" and outcome.steps == 2
    first, _ = store.runs.steps(outcome.run_id)
    assert error_text in (first.error or "")
    assert error_text in prompt_text(ollama.chats[1])


def test_malformed_arguments_reach_the_tool_as_readable_error(web: Misbehaving, store: Store) -> None:
    with FakeOllama(script=[{"tool": "check_target", "args": "{name: api,,"}, final("ok")]) as ollama:
        outcome = wiring.investigator(make_config(web, ollama_model(ollama)), store).investigate("api")
    assert outcome.state == "success"
    assert "ERROR: no target named '{name: api,,'" in (store.runs.steps(outcome.run_id)[0].observations or "")


def test_a_model_that_never_finishes_stops_at_max_steps(web: Misbehaving, store: Store) -> None:
    with FakeOllama(default=call("recent_results", name="api", n=3)) as ollama:
        config = make_config(web, ollama_model(ollama), agent={"max_steps": 3})
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        outcome = wiring.investigator(config, store).investigate("api", incident=incident, pattern="consecutive")
    assert (outcome.state, outcome.steps, len(ollama.chats)) == ("max_steps", 3, 3)
    assert known(store.runs.run(outcome.run_id)).state == "max_steps"
    assert outcome.answer is None  # no prose to fall back on
    row = known(store.incidents.incident(incident))
    assert row.agent_state == "max_steps" and "the detection stands" in (row.notes or "")
    assert row.status == "open" and row.pattern == "consecutive"


def test_a_failing_server_is_retried_with_backoff_then_recorded(web: Misbehaving, store: Store) -> None:
    with FakeOllama(default={"status": 500}) as ollama:
        config = make_config(web, ollama_model(ollama, retries=2))
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        outcome = wiring.investigator(config, store).investigate("api", incident=incident)
    assert outcome.state == "model_error" and len(ollama.chats) == 3
    assert "model crashed" in (outcome.error or "")
    assert known(store.incidents.incident(incident)).agent_state == "model_error"


def test_a_server_that_is_down_is_a_model_error(web: Misbehaving, store: Store) -> None:
    with FakeOllama() as ollama:
        config = make_config(web, {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "retries": 0})
    outcome = wiring.investigator(config, store).investigate("api")  # the server is gone now
    assert outcome.state == "model_error"


def test_garbage_from_the_server_is_a_model_error(web: Misbehaving, store: Store) -> None:
    with FakeOllama(default={"raw": "<html>proxy error</html>"}) as ollama:
        outcome = wiring.investigator(make_config(web, ollama_model(ollama)), store).investigate("api")
    assert outcome.state == "model_error"


def test_a_hung_model_times_out_within_the_configured_timeout(web: Misbehaving, store: Store) -> None:
    with FakeOllama(default={"hang": 10}) as ollama:
        # full-text recall, and litellm imported before the clock starts (4-8 s alone): the time measured is the model's
        config = make_config(web, ollama_model(ollama, timeout="500ms", retries=3), memory={"embedder": "none"})
        investigator = wiring.investigator(config, store)
        started = time.monotonic()
        outcome = investigator.investigate("api")
        elapsed = time.monotonic() - started
    assert outcome.state == "timeout" and elapsed < 2.0
    assert len(ollama.chats) == 1  # a timeout is not retried: that would multiply the wait


def test_each_step_is_saved_as_soon_as_it_ends(web: Misbehaving, store: Store) -> None:
    saved: list[int] = []
    with FakeOllama(script=[call("check_target", name="api"), call("recent_results", name="api", n=2)]) as ollama:
        investigator = wiring.investigator(make_config(web, ollama_model(ollama)), store)
        outcome = investigator.investigate("api", on_step=lambda step: saved.append(len(store.runs.steps(store.runs.last_run_id() or 0))))
    assert saved == [1, 2, 3] and outcome.state == "success"


def test_the_request_stays_bounded_over_many_investigations(web: Misbehaving, store: Store) -> None:
    script_step = [call("check_target", name="web"), call("recent_results", name="web", n=5), final("web is fine")]
    with FakeOllama(default=_cycling(script_step)) as ollama:
        config = make_config(web, ollama_model(ollama), memory={"keep_steps": 6})
        investigator = wiring.investigator(config, store)
        for _ in range(25):
            investigator.investigate("web")
    sizes = [len(json.dumps(chat["messages"])) for chat in ollama.chats]
    per_run = [sizes[i] for i in range(0, len(sizes), 3)]
    assert max(per_run[8:]) <= per_run[5] * 1.2, per_run
    assert investigator.stats().steps["summary"] == 1


def _cycling(replies: list[dict[str, Any]]) -> Any:
    state = {"i": 0}

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        state["i"] += 1
        return replies[(state["i"] - 1) % len(replies)]

    return reply


def test_working_memory_survives_a_restart(web: Misbehaving, db_path: str) -> None:
    config = make_config(web, {"id": "builtin"})
    first = wiring.investigator(config, Store(db_path))
    first.investigate("api", pattern="consecutive")
    before = first.stats()
    again = wiring.investigator(config, Store(db_path))
    assert again.restored > 0
    assert again.stats() == before


def test_builtin_model_end_to_end_names_the_past_fix(web: Misbehaving, store: Store) -> None:
    config = make_config(web, {"id": "builtin"})
    incident = seed_history(store, config)
    outcome = wiring.investigator(config, store).investigate(
        "api", incident=incident, pattern="consecutive", summary="3 consecutive failures of api"
    )
    assert outcome.state == "success" and outcome.steps == 5
    calls = [json.loads(known(s.tool_calls))[0]["name"] for s in store.runs.steps(outcome.run_id) if s.kind == "action"]
    assert calls == ["check_target", "recent_results", "search_incidents", "record_diagnosis", "final_answer"]
    row = known(store.incidents.incident(incident))
    assert (row.root_cause, row.related_incident) == ("server_error", 1)
    assert "rolled back the deploy" in (row.diagnosis or "") and "error statuses" in (row.suspected_cause or "")
    assert store.results.count_results("api") == 4  # the re-check was a real check, recorded


def test_builtin_model_sees_a_recovered_target(web: Misbehaving, store: Store) -> None:
    outcome = wiring.investigator(make_config(web, {"id": "builtin"}), store).investigate("web", pattern="consecutive")
    assert outcome.diagnosis is not None and outcome.diagnosis.root_cause == "recovered"
    assert not outcome.diagnosis.actionable


def test_litellm_is_imported_only_for_a_real_model_and_offline() -> None:
    import subprocess
    import sys

    code = (
        "import sys, os; import monitor.agent.investigator, monitor.daemon, monitor.memory.working\n"
        "print('litellm' in sys.modules, os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert done.stdout.split() == ["False", "None"], done.stderr
    import os

    from monitor.agent.models import ServedModel
    from monitor.config import ModelConfig

    ServedModel("ollama_chat/llama3.2", ModelConfig(api_base="http://127.0.0.1:9"))
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_auto_switches_to_ollama_once_it_serves_the_model(web: Misbehaving, store: Store) -> None:
    with FakeOllama(models=("mistral:latest",), default=final("api is down")) as ollama:
        investigator = wiring.investigator(make_config(web, ollama_model(ollama)), store)
        assert investigator.model_label == "builtin" and investigator.reprobe() is False
        ollama.models = ("llama3.2:latest",)
        assert investigator.reprobe() is True
        outcome = investigator.investigate("api")
    assert investigator.model_label == "ollama_chat/llama3.2"
    assert outcome.answer == "api is down" and len(ollama.chats) == 1


def test_a_reply_that_is_not_a_diagnosis_is_never_kept_as_one(web: Misbehaving, store: Store) -> None:
    invented = '{"name": "investigate_health_problem", "arguments": {"target": "api", "incident": 1}}'
    with FakeOllama(default={"content": invented}) as ollama:
        config = make_config(web, ollama_model(ollama), agent={"max_steps": 2})
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        outcome = wiring.investigator(config, store).investigate("api", incident=incident)
    assert outcome.state == "max_steps" and outcome.answer is None and outcome.diagnosis is None
    run, row = known(store.runs.run(outcome.run_id)), known(store.incidents.incident(incident))
    assert run.final_answer is None and "no final_answer within 2 steps" in (run.error or "")
    assert row.diagnosis is None and "ended in max_steps" in (row.notes or "")


class Listener:
    """Counts connections to a port (the default Ollama port), and answers none of them."""

    def __init__(self, port: int) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.accepted = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def default_ollama_port() -> Iterator[Listener]:
    try:
        listener = Listener(11434)
    except OSError:
        pytest.skip("port 11434 is in use on this machine")
    yield listener
    listener.close()


def full_script(target: str = "api") -> list[dict[str, Any]]:
    return [
        call("check_target", name=target),
        call("recent_results", name=target),
        call("search_incidents", query=target),
        diagnose(),
        final("api answers 500"),
    ]


def test_no_request_goes_to_an_address_the_config_did_not_name(
    web: Misbehaving, store: Store, default_ollama_port: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    with FakeOllama(script=full_script()) as ollama:
        config = make_config(web, {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "retries": 0})
        assert wiring.investigator(config, store).investigate("api").state == "success"
    with FakeOpenAI(script=full_script()) as server:
        config = make_config(web, {"id": "openai/qwen2.5-coder:0.5b", "api_base": server.url, "retries": 0})
        assert wiring.investigator(config, store).investigate("api").state == "success"
    assert default_ollama_port.accepted == 0
    assert len(ollama.chats) == 5 and len(server.chats) == 5


def test_openai_compatible_servers_get_response_format_and_no_ollama_options(web: Misbehaving, store: Store) -> None:
    with FakeOpenAI(script=full_script()) as server:
        config = make_config(web, {"id": "openai/qwen2.5-coder:0.5b", "api_base": server.url, "retries": 0})
        outcome = wiring.investigator(config, store).investigate("api")
    assert outcome.state == "success" and outcome.diagnosis is not None
    assert set(server.paths) == {"/v1/chat/completions"}
    first = server.chats[0]
    assert first["model"] == "qwen2.5-coder:0.5b" and "num_ctx" not in json.dumps(first)
    assert "options" not in first and "tools" not in first
    schema = first["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["name"]["enum"] == ["check_target"]
    assert first["max_tokens"] == 512 and first["temperature"] == 0.0


@pytest.mark.parametrize(("related", "offers_remediate"), [("no", False), ("#1", True)])
def test_a_guided_model_may_only_repeat_a_known_fix(web: Misbehaving, store: Store, related: str, offers_remediate: bool) -> None:
    script = [
        call("check_target", name="api"),
        call("recent_results", name="api"),
        call("search_incidents", query="api"),
        diagnose(related_incident=related),
        final("api answers 500"),
    ]
    with FakeOllama(script=script) as ollama:
        config = make_config(web, ollama_model(ollama), agent={"remediation": "dry_run"})
        incident = seed_history(store, config)
        outcome = wiring.investigator(config, store).investigate("api", incident=incident, pattern="consecutive")
    assert outcome.state == "success"
    last = sorted(offered(ollama.chats[-1]))
    assert last == (["final_answer", "remediate"] if offers_remediate else ["final_answer"])
