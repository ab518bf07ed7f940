"""The agent's tools: bounded to configured targets, failures as readable text, remediation audited."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from past import known
from servers import Misbehaving, Receiver

from monitor import wiring
from monitor.agent.tools import CheckTarget, GetIncident, RecentResults, RecordDiagnosis, Remediate, SearchIncidents, Toolbox, toolset
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def box(web: Misbehaving, db_path: str, action_url: str | None = None, **agent: Any) -> Toolbox:
    config = Config.model_validate(
        {  # a config is frozen: what a test changes, it says here
            "targets": [
                {
                    "name": "api",
                    "url": web.url("/500"),
                    "timeout": "1s",
                    "actions": {"restart": {"url": action_url or web.url("/healthy"), "method": "POST"}},
                }
            ],
            "agent": agent,
        }
    )
    return wiring.toolbox(config, Store(db_path))


def test_check_target_checks_and_records_configured_targets_only(web: Misbehaving, db_path: str) -> None:
    tools = box(web, db_path, allow_urls=[web.url("/healthy")])
    check = CheckTarget(tools)
    assert "api: " in check(name="api") and "CRITICAL status=500" in check(name="api")
    assert tools.store.results.count_results("api") == 2
    assert check(name="db").startswith("ERROR: no target named 'db' (configured: api)")
    assert "matches no agent.allow_urls prefix" in check(name="http://169.254.169.254/latest/meta-data")
    assert "OK status=200" in check(name=web.url("/healthy"))
    assert check(name=web.url("/500")).startswith("api: ")  # a configured target's URL means that target
    assert [c.ok for c in tools.take_calls()] == [True, True, False, False, True, True]


def test_recent_results_and_incident_tools(web: Misbehaving, db_path: str) -> None:
    tools = box(web, db_path)
    CheckTarget(tools)(name="api")
    assert RecentResults(tools)(name="api", n=5).startswith("api: 1 of the last 1 checks failed")
    incident = IncidentWrites(tools.store).open_incident("api", "consecutive", "down")
    run = tools.store.runs.start_run("t", target="api", incident_id=incident)
    tools.begin(run, incident, "api", "consecutive")
    assert (
        RecordDiagnosis(tools)(root_cause="server_error", related_incident="no", confidence="high", summary="d")
        == f"diagnosis recorded on incident #{incident}: server_error"
    )
    shown = GetIncident(tools)(id=incident)
    assert "(root cause: server_error)" in shown and "diagnosis: d" in shown
    assert GetIncident(tools)(id=999) == "ERROR: no incident #999"


def test_record_diagnosis_is_structured_and_names_only_incidents_it_was_shown(web: Misbehaving, db_path: str) -> None:
    tools = box(web, db_path)
    store = tools.store
    past = IncidentWrites(store).open_incident("api", "consecutive", "pool exhausted")
    IncidentWrites(store).record_diagnosis(
        None,
        past,
        Diagnosed(
            diagnosis='api answered 500 {"error": "boom"}: pool',
            root_cause="server_error",
            related_incident=None,
            confidence="high",
            suspected_cause="5xx",
        ),
    )
    IncidentWrites(store).close_incident(past, "raised the pool")
    other = IncidentWrites(store).open_incident("web", "consecutive", "other target")
    now = IncidentWrites(store).open_incident("api", "consecutive", "now")
    run = store.runs.start_run("t", target="api", incident_id=now)
    tools.begin(run, now, "api", "consecutive")
    record = RecordDiagnosis(tools)
    assert "not one of: server_error" in record(root_cause="gremlins", related_incident="no", confidence="high", summary="s")
    refused = record(root_cause="server_error", related_incident=f"#{past}", confidence="high", summary="s")
    assert refused.startswith(f"ERROR: incident #{past} was not among the incidents you were shown (none)")
    CheckTarget(tools)(name="api")
    found = SearchIncidents(tools)(query="pool")
    assert found.splitlines()[1].startswith(f"#{past} [resolved] target api (root cause: server_error), similarity ")
    assert tools.seen >= {past}
    assert record(root_cause="server_error", related_incident=f"#{past}", confidence="high", summary="pool again").endswith(
        f"same failure as #{past}"
    )
    row, diagnosed = store.incidents.incident(now), store.runs.run(run)
    assert row is not None and diagnosed is not None
    assert (row.root_cause, row.related_incident, row.diagnosis) == ("server_error", past, f"pool again #{past} on api: 'raised the pool'")
    assert (diagnosed.root_cause, diagnosed.related_incident, diagnosed.confidence) == ("server_error", past, "high")
    # The model cannot write on any other incident: the tool records on the one under investigation only.
    assert known(store.incidents.incident(other)).diagnosis is None
    assert known(store.incidents.incident(past)).diagnosis == 'api answered 500 {"error": "boom"}: pool'


def test_the_constrained_schema_offers_under_each_cause_the_incidents_shown_that_could_apply(web: Misbehaving, db_path: str) -> None:
    tools = box(web, db_path)
    store = tools.store
    same = IncidentWrites(store).open_incident("api", "consecutive", "a")
    IncidentWrites(store).record_diagnosis(
        None, same, Diagnosed(diagnosis="", root_cause="timeout", related_incident=None, confidence="high", suspected_cause="")
    )
    decoy = IncidentWrites(store).open_incident("web", "consecutive", "b")
    IncidentWrites(store).record_diagnosis(
        None, decoy, Diagnosed(diagnosis="", root_cause="timeout", related_incident=None, confidence="high", suspected_cause="")
    )
    IncidentWrites(store).close_incident(same)  # past: this target's open incident is this failure, with no fix to offer
    tools.begin(store.runs.start_run("t"), None, "api")
    tools.saw(f"#{same} and #{decoy}")
    branches = {
        b["properties"]["root_cause"]["enum"][0]: b["properties"]["related_incident"]["enum"]
        for b in RecordDiagnosis(tools).argument_schema()["anyOf"]
    }
    assert branches["timeout"] == [f"#{same}", "no"]  # web's timeout shares nothing with api
    assert branches["server_error"] == ["no"]
    assert branches["recovered"] == ["no"]  # nothing was re-checked: no reading, every cause allowed


def test_remediation_is_not_offered_when_off_and_refused_if_called(web: Misbehaving, db_path: str) -> None:
    tools = box(web, db_path)
    assert "remediate" not in [t.name for t in toolset(tools)]
    assert Remediate(tools)(name="api", action="restart") == "ERROR: remediation is disabled (agent.remediation: off)"
    [audit] = tools.store.runs.remediations()
    assert (audit["ok"], audit["detail"]) == (0, "refused: remediation is off")


def test_remediation_dry_run_by_configuration_is_audited_and_does_nothing(db_path: str) -> None:
    with Misbehaving() as web, Receiver() as hook:
        tools = box(web, db_path, action_url=hook.url, remediation="dry_run")
        assert Remediate(tools)(name="api", action="restart") == f"dry run: would POST {hook.url}"
        assert hook.received == []
        assert "has no action 'reboot' (configured: restart)" in Remediate(tools)(name="api", action="reboot")
        assert [(a["dry_run"], a["ok"]) for a in tools.store.runs.remediations()] == [(1, 1), (1, 0)]


def test_remediation_on_calls_the_configured_action(db_path: str) -> None:
    with Misbehaving() as web, Receiver() as hook:
        tools = box(web, db_path, action_url=hook.url, remediation="on")
        tools.run_id = 7
        assert Remediate(tools)(name="api", action="restart") == f"POST {hook.url} -> 200"
        [audit] = tools.store.runs.remediations()
        assert (audit["dry_run"], audit["ok"], audit["run_id"]) == (0, 1, 7)


def test_a_tool_that_breaks_returns_text_instead_of_raising(web: Misbehaving, db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = box(web, db_path, remediation="on")

    def broken(*args: Any, **kwargs: Any) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    tools.remediate_http = broken
    assert Remediate(tools)(name="api", action="restart").startswith("ERROR: POST http://")
    monkeypatch.setattr(tools.store.results, "recent_results", lambda *a: 1 / 0)
    assert RecentResults(tools)(name="api", n=3) == "ERROR: recent_results failed: ZeroDivisionError: division by zero"


def test_check_target_rechecks_any_kind_and_shows_its_evidence(db_path: str) -> None:
    from servers import TcpServer

    from monitor.checks.heartbeat import Heartbeats

    token = "H" * 20 + "0123456789abcdefghijklm"
    with TcpServer("echo") as redis:
        config = Config.model_validate(
            {
                "targets": [
                    {"name": "cache", "url": f"tcp://{redis.address}", "timeout": "1s", "tcp": {"send": "PING\r\n", "expect": "^\\+PONG"}},
                    {"name": "backup", "kind": "heartbeat", "heartbeat": {"token": token, "period": "1h"}},
                ]
            }
        )
        tools = wiring.toolbox(config, Store(db_path))
        Heartbeats(tools.store, config.targets, clock=lambda: 1000.0)  # first monitored long ago: overdue now
        cache = CheckTarget(tools)(name="cache")
        backup = CheckTarget(tools)(name="backup")
    assert cache.startswith("cache [tcp]: ") and "CRITICAL status=- " in cache and "tcp_unexpected_reply" in cache
    assert "reply: 'PING\\r\\n'" in cache  # what the peer said, fenced as data
    assert backup.startswith("backup [heartbeat]: ") and "heartbeat_missed: no ping since monitoring began" in backup
    assert tools.store.results.count_results("cache") == tools.store.results.count_results("backup") == 1
    assert token not in backup


def test_a_target_that_stops_answering_is_recalled_by_the_answer_it_gave_when_the_incident_opened(web: Misbehaving, db_path: str) -> None:
    """It answered 502 naming an OutOfMemoryError, then hung: the re-check has no answer, and recall compared past
    incidents with a bare timeout. The answer kept with the incident is this failure's last word."""
    config = Config.model_validate({"targets": [{"name": "api", "url": web.url("/hang"), "timeout": "300ms"}]})
    tools = wiring.toolbox(config, Store(db_path))
    said = '{"status":502,"upstream_error":"java.lang.OutOfMemoryError: GC overhead limit exceeded"}'
    kept = '{"url": null, "status_code": 502, "error": "unexpected_status", "excerpt": "HTTP 502 ' + said.replace('"', '\\"') + '"}'
    incident = IncidentWrites(tools.store).open_incident_unless_open("api", "consecutive", "down", evidence=kept)
    tools.begin(tools.store.runs.start_run("t", target="api", incident_id=incident), incident, "api", "consecutive")
    assert tools.current_evidence().answer == said  # no re-check yet
    assert "timeout" in CheckTarget(tools)(name="api")
    evidence = tools.current_evidence()
    assert evidence.error == "timeout" and evidence.answer == said and "OutOfMemoryError" in evidence.text()
