"""Adding a check kind, a tool, a receiver or a page is one module that registers itself.

A check kind (tests/toy_kind.py): a config names it (``kind: toy``, its own ``toy:`` settings) and is validated as
any; the Checker checks its targets among the others, their results are stored like any, counted on /metrics, and
/probe probes with it. A tool (tests/toy_tool.py): the agent is offered it, a model calls it, and the call and its
answer are in the run's transcript. A receiver (tests/toy_receiver.py): a config names it in ``alerts:`` with its
own settings, validated as any, rules name it, and an incident's messages reach it through the outbox, retried
when it fails. A page (tests/toy_page.py): the web app serves it behind the same host check and headers as the
others, and the navigation links it."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama import FakeOllama, call, final, prompt_text
from past import known
from prometheus_client import CollectorRegistry
from pydantic import ValidationError
from servers import Misbehaving
from starlette.testclient import TestClient

from monitor import wiring
from monitor.agent import tools
from monitor.agent.tools import MonitorTool
from monitor.alerts import registry as receivers
from monitor.alerts.routes import rule_names
from monitor.checks import registry
from monitor.checks.engine import Checker
from monitor.config import AgentConfig, AlertsConfig, Config, ConfigError, Target, parse
from monitor.config.probe import ProbeConfig
from monitor.core import kinds
from monitor.memory import transcripts
from monitor.metrics import Metrics
from monitor.metrics.probes import probe_exposition
from monitor.store import Store
from monitor.web import routes as web_routes
from monitor.web.app import CSP, create_app
from monitor.wiring import writer as incident_writer

TOKEN = "a-token-of-twenty-chars"


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def sample(metrics: Metrics, receiver: str, result: str) -> float:
    return metrics.registry.get_sample_value("monitor_notifications_total", {"receiver": receiver, "result": result}) or 0.0


@pytest.fixture
def toy() -> Iterator[None]:
    import toy_kind  # declares the kind and its check, as importing a kind's module does

    kinds.declare(toy_kind.KIND)  # again after another test forgot it: the same declaration is fine
    yield
    kinds.forget("toy")


def toy_target(name: str, path: Path) -> Target:
    return Target(name=name, url=f"toy:{path}")


def test_a_config_names_a_declared_kind_with_its_own_settings(toy: None, tmp_path: Path) -> None:
    config = parse(
        f"targets:\n- {{name: job, url: 'toy:{tmp_path}/up', toy: {{word: ready}}}}\n"
        f"- {{name: batch, kind: toy, url: 'toy:{tmp_path}/batch'}}\n"
    )
    import toy_kind

    job, batch = config.targets
    assert (job.kind, job.settings_as(toy_kind.ToySettings).word, batch.settings_as(toy_kind.ToySettings).word) == ("toy", "ready", "up")
    assert job.model_dump()["toy"] == {"word": "ready"}


def test_a_declared_kinds_settings_and_address_are_validated(toy: None) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets:\n- {name: a, url: 'toy:relative'}\n- {name: b, url: 'toy:/x', toy: {word: LOUD, size: 1}}\n"
            "- {name: c, url: 'http://c/', toy: {word: up}}\n- {name: d, kind: toys, url: 'toy:/x'}\n",
            "t.yaml",
        )
    lines = str(caught.value).splitlines()
    assert lines[0] == "t.yaml:2: targets[0].url: 'toy:relative' is not a toy address: write it toy:/absolute/path"
    assert lines[1] == "t.yaml:3: targets[1].toy.word: String should match pattern '^[a-z]{1,20}$'"
    assert lines[2] == "t.yaml:3: targets[1].toy.size: unknown field (allowed here: word)"
    assert lines[3] == "t.yaml:4: targets[2]: a http target takes no toy: settings (they are for toy targets)"
    assert lines[4] == "t.yaml:5: targets[3].kind: Input should be 'http', 'tcp', 'tls', 'dns', 'icmp', 'heartbeat' or 'toy'"


def test_a_kind_forgotten_is_no_kind_of_the_config() -> None:
    assert not kinds.known("toy")
    with pytest.raises(ConfigError, match=r"targets\[0\]\.kind: Input should be 'http', 'tcp', 'tls', 'dns', 'icmp' or 'heartbeat'\n"):
        parse("targets:\n- {name: a, kind: toy, url: 'toy:/x'}\n", "t.yaml")


def test_a_declared_kinds_results_are_on_metrics(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("up\n")
    metrics = Metrics(CollectorRegistry())
    metrics.observe_results(Checker(clock=lambda: 1000.0).run([toy_target("job", tmp_path / "up"), toy_target("gone", tmp_path / "no")]))
    text = metrics.scrape().decode()
    assert 'monitor_check_up{kind="toy",target="job"} 1\n' in text
    assert 'monitor_check_up{kind="toy",target="gone"} 0\n' in text


def test_a_probe_module_probes_with_a_declared_kind_and_answers_its_series(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("ready\n")
    settings = ProbeConfig.model_validate({"modules": {"ready": {"prober": "toy", "toy": {"word": "ready"}}}})
    module = settings.modules["ready"]
    target = module.target(module.address(f"{tmp_path}/up"))
    [result] = Checker().run([target])
    body = probe_exposition(result, 0.1).decode()
    assert (target.url, result.ok) == (f"toy:{tmp_path}/up", True)
    assert "probe_success 1.0" in body and "probe_toy_word_found 1.0" in body
    with pytest.raises(ValidationError, match=r"modules\.bad\.toy\.word"):
        ProbeConfig.model_validate({"modules": {"bad": {"prober": "toy", "toy": {"word": "NO"}}}})


def test_a_registered_kind_is_checked_by_the_checker_and_stored(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("up\n")
    (tmp_path / "down").write_text("maintenance\n")
    store = Store(tmp_path / "monitor.db")
    refused = Target(name="web", url="http://127.0.0.1:9/", timeout=1)  # an http target in the same batch
    results = Checker(clock=lambda: 1000.0).run([toy_target("job", tmp_path / "up"), refused, toy_target("batch", tmp_path / "down")])
    store.results.add_results(results)
    assert [(r.name, r.kind, r.severity, r.error) for r in results] == [
        ("job", "toy", "ok", None),
        ("web", "http", "critical", "connection_refused"),
        ("batch", "toy", "critical", "toy_down"),
    ]
    [stored] = store.results.recent_results("batch")
    assert (stored.ok, stored.severity, stored.error, stored.detail, stored.checked_at) == (
        0,
        "critical",
        "toy_down",
        "the file says maintenance",
        1000.0,
    )
    assert "toy" in registry.names()


def test_the_checker_closes_the_kinds_it_opened(toy: None, tmp_path: Path) -> None:
    import toy_kind

    [result] = Checker().run([toy_target("job", tmp_path / "none")])
    assert (result.error, result.detail) == ("toy_down", "the file says nothing")
    assert toy_kind.MADE and toy_kind.MADE[-1].closed is True


def test_an_unknown_kind_names_itself_and_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no check kind 'ping'; known kinds: dns, heartbeat, http, icmp, tcp, tls"):
        registry.factory("ping")


def test_a_second_declaration_of_a_kind_is_refused(toy: None) -> None:
    import toy_kind

    with pytest.raises(ValueError, match="check kind 'toy' is already declared"):
        kinds.declare(dataclasses.replace(toy_kind.KIND, check=lambda context: None))


# A tool


@pytest.fixture
def pass_rate() -> Iterator[type[MonitorTool]]:
    import toy_tool

    tools.register(toy_tool.PassRate)  # again after another test unregistered it: the same tool is fine
    yield toy_tool.PassRate
    tools.unregister("pass_rate")


def agent_config(web: Misbehaving, ollama: FakeOllama) -> Config:
    model = {"id": "auto", "api_base": ollama.url, "timeout": 2, "retries": 0, "constrain": "off"}
    targets = [{"name": "api", "url": web.url("/500"), "timeout": 1}, {"name": "web", "url": web.url("/healthy"), "timeout": 1}]
    return Config.model_validate({"targets": targets, "model": model, "agent": {"guided": False}})


def offered(chat: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in chat.get("tools", [])]


def test_a_registered_tool_is_called_by_the_model_and_kept_in_the_runs_transcript(
    pass_rate: type[MonitorTool], web: Misbehaving, db_path: str
) -> None:
    store = Store(db_path)
    with FakeOllama(script=[call("pass_rate", name="api", n=5), call("pass_rate", name="web", n=5), final("api fails")]) as ollama:
        config = agent_config(web, ollama)
        store.results.add_results(Checker().run([config.target("api")]) + Checker().run([config.target("api")]))
        outcome = wiring.investigator(config, store).investigate("api")
    assert outcome.state == "success" and "pass_rate" in offered(ollama.chats[0])
    first, second = [step for step in store.runs.steps(outcome.run_id) if step.kind == "action"][:2]
    assert json.loads(known(first.tool_calls))[0]["name"] == "pass_rate" and first.tool_ok == 1
    assert known(first.observations).endswith("] api: 0 of 2 recent checks passed")  # stamped with the time
    assert "not part of this investigation" in (second.observations or "") and second.tool_ok == 0  # web is out of reach
    assert "api: 0 of 2 recent checks passed" in prompt_text(ollama.chats[1])  # the model read the answer
    [run] = transcripts.dump(store, "full", run_id=outcome.run_id)["runs"]
    called = [(c["function"]["name"], c["function"]["arguments"]) for step in run["steps"] for c in step.get("tool_calls") or []]
    assert called[:2] == [("pass_rate", {"name": "api", "n": 5}), ("pass_rate", {"name": "web", "n": 5})]


def test_a_guided_model_is_offered_a_registered_tool_after_the_evidence_and_before_the_diagnosis(
    pass_rate: type[MonitorTool], web: Misbehaving, db_path: str
) -> None:
    store = Store(db_path)
    diagnosis = {"root_cause": "server_error", "related_incident": "no", "confidence": "high", "summary": "api fails"}
    script = [
        call("check_target", name="api"),
        call("recent_results", name="api"),
        call("search_incidents", query="api"),
        call("pass_rate", name="api", n=5),
        call("record_diagnosis", **diagnosis),
        final("api fails"),
    ]
    with FakeOllama(script=script) as ollama:
        config = agent_config(web, ollama).model_copy(update={"agent": AgentConfig()})  # guided, the default
        assert config.agent.guided
        store.results.add_results(Checker().run([config.target("api")]))
        outcome = wiring.investigator(config, store).investigate("api")
    assert outcome.state == "success"
    assert [offered(chat) for chat in ollama.chats] == [
        ["check_target"],
        ["recent_results"],
        ["search_incidents"],
        ["pass_rate"],
        ["record_diagnosis"],
        ["final_answer"],
    ]
    assert " recent checks passed" in prompt_text(ollama.chats[4])  # its answer is evidence for the diagnosis


def test_a_tool_is_offered_only_while_registered_and_a_taken_name_is_refused(pass_rate: type[MonitorTool], db_path: str) -> None:
    box = wiring.toolbox(Config.model_validate({"targets": []}), Store(db_path))
    assert [tool.name for tool in tools.toolset(box)][-1] == "pass_rate"
    with pytest.raises(ValueError, match="a tool named 'check_target' is already offered"):
        tools.register(type("Shadow", (pass_rate,), {"name": "check_target"}))
    tools.unregister("pass_rate")
    assert "pass_rate" not in [tool.name for tool in tools.toolset(box)]


# A receiver


@pytest.fixture
def toylog() -> Iterator[None]:
    import toy_receiver

    receivers.register("toylog", toy_receiver.ToyLogSettings, toy_receiver.ToyLog)  # the same registration is fine
    yield
    receivers.unregister("toylog")


def test_a_config_names_a_registered_receiver_with_its_own_settings(toylog: None, tmp_path: Path) -> None:
    config = parse(
        f"targets:\n- {{name: api, url: 'http://127.0.0.1:9/', alerts: {{receivers: [toylog]}}}}\n"
        f"alerts: {{toylog: {{path: '{tmp_path}/alerts.jsonl', events: [opened]}}}}\n"
    )
    import toy_receiver

    settings = config.alerts.receiver_settings()["toylog"]
    assert settings == toy_receiver.ToyLogSettings(path=f"{tmp_path}/alerts.jsonl", events=["opened"])
    assert config.alerts.model_dump()["toylog"] == {"path": f"{tmp_path}/alerts.jsonl", "events": ["opened"]}
    assert AlertsConfig.model_validate(config.alerts.model_dump()) == config.alerts  # a dump validates again, the same
    [receiver] = receivers.receivers(config.alerts).values()
    assert (receiver.name, receiver.kinds, rule_names({receiver.name: receiver})) == (
        f"toylog:{tmp_path}/alerts.jsonl",
        frozenset({"opened"}),
        {f"toylog:{tmp_path}/alerts.jsonl": "toylog"},
    )


def test_a_registered_receivers_settings_and_name_are_validated(toylog: None) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets:\n- {name: api, url: 'http://127.0.0.1:9/', alerts: {receivers: [toylog, pager]}}\n"
            "alerts:\n  toylog: {path: relative.jsonl, events: [paged], size: 1}\n  webhooks: [{name: toylog, url: 'http://h/'}]\n",
            "t.yaml",
        )
    assert str(caught.value).splitlines() == [
        "t.yaml:2: targets[0].alerts.receivers[1]: no receiver named 'pager' (configured: toylog)",
        "t.yaml:4: alerts.toylog.path: String should match pattern '^/'",
        "t.yaml:4: alerts.toylog.events[0]: Input should be 'opened', 'resolved', 'diagnosed', 'reminder' or 'escalated'",
        "t.yaml:4: alerts.toylog.size: unknown field (allowed here: events, path)",
        "t.yaml:5: alerts.webhooks[0].name: 'toylog' is what rules call the toylog receivers: give the webhook another name",
    ]
    with pytest.raises(ConfigError, match=r"targets\[0\]\.alerts\.receivers\[0\]: no receiver named 'toylog' \(configured: none"):
        parse("targets:\n- {name: api, url: 'http://127.0.0.1:9/', alerts: {receivers: [toylog]}}\n", "t.yaml")


def test_a_receiver_unregistered_is_no_section_of_the_config() -> None:
    with pytest.raises(ConfigError, match=r"alerts\.toylog: unknown field \(allowed here: .*webhooks\)"):
        parse("alerts: {toylog: {path: /x}}\n", "t.yaml")


def test_an_incidents_messages_reach_a_registered_receiver_through_the_outbox_and_are_retried(toylog: None, tmp_path: Path) -> None:
    log = tmp_path / "later" / "alerts.jsonl"  # its folder is not there yet: the first delivery fails
    config = parse(
        "targets: [{name: api, url: 'http://127.0.0.1:9/'}, {name: web, url: 'http://127.0.0.1:9/'}]\nagent: {mode: 'off'}\n"
        f"alerts: {{toylog: {{path: '{log}'}}, webhooks: [{{name: hook, url: 'http://127.0.0.1:9/'}}]}}\n"
        "alert_rules: [{match: {targets: [web]}, receivers: [hook]}]\n"
    )
    clock = Clock()
    store = Store(tmp_path / "monitor.db", clock=clock)
    metrics = Metrics(CollectorRegistry())
    alerts = wiring.alerts(config, store, clock=clock, metrics=metrics)
    writer = incident_writer(config, store)
    opened = writer.open("api", "consecutive", "3 consecutive failures of api")
    writer.open("web", "consecutive", "web is down")  # its rule sends it to the webhook alone
    assert opened is not None
    name = f"toylog:{log}"
    assert alerts.deliver_due(name) == 0
    [pending] = store.outbox.notifications_for(opened.incident.id)[-1:]
    assert (pending.receiver, pending.attempts, pending.delivered_at) == (name, 1, None)
    assert pending.last_error == f"cannot write {log}: No such file or directory"
    log.parent.mkdir()
    assert alerts.deliver_due(name) == 0  # not due yet: it backs off
    clock.now += 2
    assert alerts.deliver_due(name) == 1
    writer.resolve(opened.incident.id, "restarted")
    assert alerts.deliver_due(name) == 1
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(m["event"], m["target"], m["status"]) for m in lines] == [("opened", "api", "open"), ("resolved", "api", "resolved")]
    assert lines[0]["key"] == store.incidents.incident_key(opened.incident.id) and lines[0]["idempotency_key"].startswith(
        store.incidents.install_id
    )
    assert [sample(metrics, name, result) for result in ("failed", "delivered")] == [1, 2]


# A page


@pytest.fixture
def fleet_page() -> Iterator[None]:
    import toy_page

    web_routes.register(toy_page.PAGE)  # again after another test unregistered it: the same page is fine
    yield
    web_routes.unregister("fleet")


def test_a_registered_page_is_served_linked_and_guarded_as_the_others(fleet_page: None, web: Misbehaving, db_path: str) -> None:
    store = Store(db_path)
    targets = [{"name": "api", "url": web.url("/500"), "timeout": 1}, {"name": "web", "url": web.url("/healthy"), "timeout": 1}]
    config = Config.model_validate({"targets": targets, "web": {"token": TOKEN}})
    store.results.add_results(Checker().run(list(config.targets)))
    client = TestClient(create_app(store, config), base_url="http://localhost")
    page, overview = client.get("/fleet"), client.get("/")
    assert page.status_code == 200 and "<h1>Fleet</h1>" in page.text
    assert "<tr><td>down</td><td>1</td></tr><tr><td>up</td><td>1</td></tr>" in page.text
    assert client.get("/api/v1/fleet").json() == {"states": {"down": 1, "up": 1}}
    for served in (page, overview):
        assert '<a href="/admin/targets">Config</a>\n    <a href="/fleet">Fleet</a>' in served.text  # after the built-in links
    assert page.headers["content-security-policy"] == overview.headers["content-security-policy"] == CSP
    assert client.get("/fleet", headers={"host": "rebound.example"}).status_code == 421  # DNS rebinding: refused as any page


def test_a_page_unregistered_is_neither_served_nor_linked(db_path: str) -> None:
    client = TestClient(create_app(Store(db_path), Config.model_validate({"targets": []})), base_url="http://localhost")
    assert client.get("/fleet").status_code == 404 and 'href="/fleet"' not in client.get("/").text
    with pytest.raises(ValueError, match="a page group named 'incidents' is already served"):
        web_routes.register(web_routes.Page("incidents", lambda site: []))
