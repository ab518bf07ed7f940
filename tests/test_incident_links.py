"""People's word is evidence: "this was the same failure as #M", "suggestion #M was wrong for this", said from the CLI,
the incident page, MCP's tool or an alert's link; kept by the store (SQLite, and PostgreSQL under --store=postgres)
through the incident writer, shown in the timeline, dropped with either incident, exported and imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from past import known
from servers import Shifted
from starlette.testclient import TestClient
from test_families import DAY

from monitor import config as config_module
from monitor.cli.main import main
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.incidents import Event, Link
from monitor.incidents.writer import Writer
from monitor.mcp import likeness
from monitor.memory import forgetting, signals, working
from monitor.memory.links import link
from monitor.store import Store
from monitor.web.app import create_app
from monitor.wiring import writer as incident_writer

TOKEN = "a-token-of-twenty-chars"
EVIDENCE = json.dumps(
    {"status_code": 503, "error": "unexpected_status", "detail": "status 503", "excerpt": "pgbouncer: no more connections"}
)


def history(writer: Writer, count: int = 3) -> list[int]:
    """``count`` incidents of api, each with the same evidence, all resolved but the last."""
    ids = []
    for n in range(count):
        opened = writer.open("api", "consecutive", f"api answers 503 ({n})", evidence=EVIDENCE)
        assert opened is not None
        ids.append(int(opened.incident.id))
        if n < count - 1:
            writer.resolve(ids[-1], f"raised the pool ({n})")
    return ids


def test_a_link_is_stored_once_per_pair_and_the_later_word_wins(db_path: str) -> None:
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, second, now = history(writer)
    heard: list[Event] = []
    writer.publisher.subscribe(heard.append)
    same = link(writer, now, first, "same", actor="cli", note="the pool again, password=hunter2")
    assert same.signal == signals.of_incident(known(store.incidents.incident(now)))
    assert same.note == "the pool again, password=***"  # a note leaves redacted, as every note does
    assert [e.kind for e in heard] == ["linked"] and heard[0].link == same and heard[0].incident.id == now
    link(writer, now, second, "not", actor="web")
    changed = link(writer, now, first, "not", actor="mcp")  # a later word on the same two replaces the first
    links = store.incidents.incident_links([now])
    assert [(x.other, x.verdict, x.actor) for x in links] == [(second, "not", "web"), (first, "not", "mcp")]
    assert links[-1] == changed
    assert store.incidents.incident_links([first]) == [changed]  # found from either end
    assert store.incidents.incident_links([]) == [] and store.incidents.incident_links([999]) == []
    assert store.read_only().incidents.incident_links([second])[0].verdict == "not"


def test_the_writer_refuses_a_link_that_cannot_stand(db_path: str) -> None:
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, _, now = history(writer)
    with pytest.raises(ValueError, match=f"#{now} cannot be linked to itself"):
        link(writer, now, now, "same", actor="cli")
    with pytest.raises(LookupError, match="no incident #99"):
        link(writer, now, 99, "same", actor="cli")
    with pytest.raises(LookupError, match="no incident #98"):
        link(writer, 98, first, "same", actor="cli")
    with pytest.raises(ValueError, match="unknown verdict 'maybe'"):
        writer.link(now, first, "maybe", actor="cli", signal="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a note of at most"):
        link(writer, now, first, "same", actor="cli", note="x" * 3000)
    assert store.incidents.incident_links([now]) == []


def test_the_signal_is_the_same_when_the_same_failure_comes_back(db_path: str) -> None:
    """A link holds for its incident's failing signal: the next occurrence of that failure has the same key."""
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, second, now = history(writer)
    said = link(writer, second, first, "same", actor="cli")
    assert said.signal == signals.of_incident(known(store.incidents.incident(now)))
    other = writer.open("db", "consecutive", "db refuses", evidence=json.dumps({"error": "connect_error", "detail": "refused"}))
    assert other is not None and signals.of_incident(other.incident) != said.signal


def test_forgetting_an_incident_drops_its_links(db_path: str) -> None:
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, second, now = history(writer)
    link(writer, now, first, "same", actor="cli")
    link(writer, now, second, "not", actor="cli")
    link(writer, second, first, "same", actor="cli")
    assert writer.forget([first]) == 1
    assert [(x.incident, x.other) for x in store.incidents.incident_links([first, second, now])] == [(now, second)]
    assert forgetting.prune(writer, 1) == 1  # pruning (past memory.max_incidents) forgets the same way: second goes
    assert store.incidents.incident(second) is None and store.incidents.incident_links([second, now]) == []


def test_links_survive_export_and_import_with_their_ids_followed(db_path: str, tmp_path: Path) -> None:
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, second, now = history(writer)
    link(writer, now, first, "same", actor="cli", note="pool")
    link(writer, now, second, "not", actor="web")
    export = tmp_path / "export.json"
    assert working.export(store, str(export))["incident_links"] == 2
    elsewhere = Store(str(tmp_path / "elsewhere.db"))
    other_writer = incident_writer(Config(), elsewhere)
    shift = other_writer.open("web", "consecutive", "an incident of its own first")  # its ids differ from the export's
    assert shift is not None
    added = working.import_(other_writer, str(export))
    assert added["incidents"] == 3 and added["incident_links"] == 2
    ids = {row.summary: row.id for row in elsewhere.incidents.recent_incidents()}
    here = {ids[f"api answers 503 ({n})"]: n for n in range(3)}
    moved = elsewhere.incidents.incident_links(list(here))
    assert sorted((here[x.incident], here[x.other], x.verdict, x.actor, x.note) for x in moved) == [
        (2, 0, "same", "cli", "pool"),
        (2, 1, "not", "web", None),
    ]
    assert {x.signal for x in moved} == {x.signal for x in store.incidents.incident_links([now])}
    assert working.import_(other_writer, str(export))["incident_links"] == 0  # a second import adds nothing
    newer = link(other_writer, ids["api answers 503 (2)"], ids["api answers 503 (0)"], "not", actor="web")
    assert working.import_(other_writer, str(export))["incident_links"] == 0  # an older word does not replace a newer
    assert newer in elsewhere.incidents.incident_links([newer.incident])
    elsewhere.close()


def test_an_export_with_a_bad_link_is_refused_whole(db_path: str, tmp_path: Path) -> None:
    store = Store(db_path)
    writer = incident_writer(Config(), store)
    first, _, now = history(writer)
    link(writer, now, first, "same", actor="cli")
    export = tmp_path / "export.json"
    working.export(store, str(export))
    data = json.loads(export.read_text())
    data["incident_links"][0]["verdict"] = "perhaps"
    export.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r'incident_links\[0\]\.verdict: must be "same" or "not", not "perhaps"'):
        working.import_(incident_writer(Config(), Store(str(tmp_path / "other.db"))), str(export))


def configured(tmp_path: Path, db_path: str, extra: str = "") -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(f"database: {db_path}\nagent: {{mode: 'off'}}\ntargets:\n  - {{name: api, url: 'http://127.0.0.1:9/'}}\n{extra}")
    return path


def cli(path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--config", str(path)])


def test_resolve_and_confirm_from_the_cli_say_which_past_incident_it_was(tmp_path: Path, db_path: str) -> None:
    path = configured(tmp_path, db_path)
    store = Store(db_path)
    first, second, now = history(incident_writer(config_module.load(str(path)), store))
    done = cli(path, "incidents", "resolve", str(now), "--note", "raised the pool to 50", "--same-as", str(first), "--not", str(second))
    assert done.exit_code == 0, done.output
    assert f"incident #{now} resolved" in done.output and f"same failure as #{first} (said from cli)" in done.output
    assert known(store.incidents.incident(now)).status == "resolved"
    assert {(x.other, x.verdict) for x in store.incidents.incident_links([now])} == {(first, "same"), (second, "not")}
    again = cli(path, "incidents", "confirm", str(now), "--not", str(first), "--note", "#1 was the cache")
    assert again.exit_code == 0 and f"not the same failure as #{first} (said from cli): #1 was the cache" in again.output
    shown = cli(path, "incidents", "show", str(now))
    assert f"not the same failure as #{first}" in shown.output and f"not the same failure as #{second}" in shown.output
    assert f"#{now} was the same failure" not in shown.output
    seen_from_the_past = cli(path, "incidents", "show", str(second)).output
    assert f"not the failure of #{now}" in seen_from_the_past


def test_the_cli_refuses_a_word_that_cannot_stand_and_writes_nothing(tmp_path: Path, db_path: str) -> None:
    path = configured(tmp_path, db_path)
    store = Store(db_path)
    first, _, now = history(incident_writer(config_module.load(str(path)), store))
    refusals = {
        ("resolve", str(now), "--note", "x", "--same-as", "99"): "no incident #99",
        ("resolve", str(now), "--note", "x", "--same-as", str(now)): f"incident #{now} cannot be linked to itself",
        ("confirm", str(now), "--same-as", str(first), "--not", str(first)): f"#{first} is named both as the same failure",
        ("confirm", str(now)): "say which past incident it was",
        ("confirm", "77", "--same-as", str(first)): "no incident #77",
    }
    for args, message in refusals.items():
        answer = cli(path, "incidents", *args)
        assert answer.exit_code == 3 and message in answer.output, (args, answer.output)
    assert known(store.incidents.incident(now)).status == "open"  # a refused resolve resolves nothing
    assert store.incidents.incident_links([now]) == []
    assert cli(path, "incidents", "confirm", str(now), "--same-as", "0").exit_code == 3  # click's range


def diagnosed(writer: Writer, now: int, asserted: int | None, suggested: list[int]) -> None:
    claim = {"asserted": asserted, "suggested": [{"id": s, "target": "api", "why": "same target", "fix": f"fix {s}"} for s in suggested]}
    writer.diagnose(
        None,
        now,
        Diagnosed(
            diagnosis="pool exhausted",
            root_cause="server_error",
            related_incident=asserted,
            confidence="high",
            suspected_cause="pool",
            claim=json.dumps(claim),
        ),
    )


def test_the_incident_page_offers_same_failure_and_not_this_beside_each_past_incident(tmp_path: Path, db_path: str) -> None:
    config = Config.model_validate({"web": {"token": TOKEN}, "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
    store = Store(db_path)
    writer = incident_writer(config, store)
    first, second, now = history(writer)
    diagnosed(writer, now, first, [second])
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110", headers={"origin": "http://127.0.0.1:9110"})
    page = client.get(f"/incidents/{now}").text
    for past in (first, second):
        assert f'id="past-{past}"' in page and f'name="other" value="{past}"' in page
    assert page.count('value="same"') == 2 and page.count('value="not"') == 2
    form = {
        "csrf": client.cookies["monitor_csrf"],
        "token": TOKEN,
        "other": str(second),
        "action": "not",
        "note": "the cache, not the pool",
    }
    assert client.post(f"/incidents/{now}/actions", data=form, follow_redirects=False).status_code == 303
    assert client.post(f"/incidents/{now}/actions", data={**form, "other": str(first), "action": "same", "note": ""}).status_code == 200
    assert [(x.other, x.verdict, x.actor) for x in store.incidents.incident_links([now])] == [
        (second, "not", "web"),
        (first, "same", "web"),
    ]
    shown = client.get(f"/incidents/{now}").text
    assert "people said: not this one" in shown and "people said: the same failure" in shown
    assert f"not the same failure as #{second} (said from web): the cache, not the pool" in shown  # the timeline's entry
    api = client.get(f"/api/v1/incidents/{now}").json()
    assert [(x["other"], x["verdict"]) for x in api["links"]] == [(second, "not"), (first, "same")]
    assert [e["title"] for e in api["timeline"] if e["kind"] == "link"] == [x["said"] for x in api["links"]]
    assert f"#{now} was the same failure (said from web)" in client.get(f"/incidents/{first}").text
    assert [(a.action, a.ok) for a in store.incidents.web_actions(now)] == [("not", 1), ("same", 1)]


def test_the_incident_page_refuses_a_link_that_cannot_stand(tmp_path: Path, db_path: str) -> None:
    config = Config.model_validate({"web": {"token": TOKEN}, "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
    store = Store(db_path)
    first, _, now = history(incident_writer(config, store))
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110", headers={"origin": "http://127.0.0.1:9110"})
    client.get(f"/incidents/{now}")
    form = {"csrf": client.cookies["monitor_csrf"], "token": TOKEN, "action": "same"}
    for other, message in (
        (str(now), "cannot be linked to itself"),
        ("99", "no incident #99"),
        ("x", "by its number"),
        ("", "by its number"),
        ("²", "by its number"),  # a digit to str.isdigit, not to int()
    ):
        refused = client.post(f"/incidents/{now}/actions", data={**form, "other": other})
        assert refused.status_code == 403 and message in refused.text, other
    stranger = client.post(f"/incidents/{now}/actions", data={**form, "other": str(first), "token": "wrong-token-of-20-chars"})
    assert stranger.status_code == 403
    assert store.incidents.incident_links([now]) == []
    assert [a.ok for a in store.incidents.web_actions(now)] == [0] * 5  # the token holder's refusals audited, the stranger's not
    readonly = Config.model_validate({"targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
    page = TestClient(create_app(store, readonly), base_url="http://127.0.0.1:9110").get(f"/incidents/{now}").text
    assert 'value="same"' not in page


def queued(store: Store, incident_id: int) -> list[dict[str, Any]]:
    return [json.loads(row.payload) for row in store.outbox.notifications_for(incident_id)]


@pytest.mark.parametrize("external", [None, "https://monitor.example.org/ops/"])
def test_an_alert_links_to_where_a_person_confirms_or_rejects_the_past_incidents(db_path: str, external: str | None) -> None:
    config = Config.model_validate(
        {
            "web": {"external_url": external} if external else {},
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}],
            "alerts": {
                "webhooks": [{"url": "http://127.0.0.1:9/hook"}],
                "alertmanager": "http://127.0.0.1:9/am",
                "wait_for_diagnosis": "0s",
            },
        }
    )
    store = Store(db_path)
    writer = incident_writer(config, store)
    first, second, now = history(writer)
    diagnosed(writer, now, first, [second])
    hook = next(m for m in queued(store, now) if m.get("event") == "diagnosed")
    alert = [m for m in queued(store, now) if "alerts" in m][-1]["alerts"][0]["annotations"]
    if external is None:
        assert "links" not in hook and "incident_url" not in alert and "confirm_url" not in alert
        return
    page = f"https://monitor.example.org/ops/incidents/{now}"
    assert hook["links"] == {
        "incident": page,
        "confirm": [
            {"id": first, "asserted": True, "url": f"{page}#past-{first}"},
            {"id": second, "asserted": False, "url": f"{page}#past-{second}"},
        ],
    }
    assert (alert["incident_url"], alert["confirm_url"]) == (page, f"{page}#past-{first}")


def test_an_external_url_must_be_an_http_url() -> None:
    with pytest.raises(ValueError, match="external_url"):
        Config.model_validate({"web": {"external_url": "monitor.example.org"}})


def test_link_in_words_from_either_end() -> None:
    said = Link(7, 3, "same", "k", "cli", "pool", 1.0)
    assert said.said(7) == "same failure as #3 (said from cli): pool" and said.said(3) == "#7 was the same failure (said from cli): pool"
    wrong = Link(7, 4, "not", "k", "mcp")
    assert wrong.said(7) == "not the same failure as #4 (said from mcp)" and wrong.said(4) == "not the failure of #7 (said from mcp)"


def test_mcp_recall_hears_peoples_word_on_a_family_as_an_investigation_does(db_path: str) -> None:
    """Two past incidents a person said were one failure (when the second came, with other words), fixed in words
    that share nothing: MCP's recall asserts the family's newest fix, as an investigation would (on a1f7278 it heard
    people's word only for the signal it was said of: two fixes that could apply, nothing asserted)."""
    clock = Shifted()
    store = Store(db_path, clock=clock)
    writer = incident_writer(Config(), store)
    ids: list[int] = []
    now_said = EVIDENCE.replace("pgbouncer:", "pgbouncer-main:")
    other = EVIDENCE.replace("pgbouncer: no more connections", "pool full on pgbouncer-main")  # another signal, said of #2
    for fix, said in (("max_client_conn raised to 400 on the bouncer", now_said), ("doubled default_pool_size", other), (None, now_said)):
        clock.ago = 10 * DAY * (fix is not None) * (2 - len(ids))  # 20 and 10 days ago, then now: each fix held
        opened = writer.open("api", "consecutive", "api answers 503 from pgbouncer-main", evidence=said)
        assert opened is not None
        ids.append(int(opened.incident.id))
        if fix is not None:
            writer.resolve(ids[-1], fix)
    first, second, now = ids
    incident = store.incidents.incident(now)
    assert incident is not None
    before = likeness.like(store, Config(), incident)
    assert before["asserted"] is None and {s["id"] for s in before["suggested"]} >= {first, second}
    link(writer, second, first, "same", actor="cli")
    after = likeness.like(store, Config(), incident)
    assert after["asserted"] is not None and after["asserted"]["id"] == second  # the newest fix that held
