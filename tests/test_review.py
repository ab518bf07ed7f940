"""``monitor review``: recurring failures, fixes that did not hold and co-occurring targets, by rules or a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from ollama import FakeOllama, prompt_text

from monitor.cli.main import main
from monitor.memory import review
from monitor.memory.review import CoOccurrence
from monitor.store import Store
from monitor.store.writes import IncidentWrites

DAY = 86400.0
T0 = 1_780_000_000.0


@pytest.fixture(autouse=True)
def no_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")


@pytest.fixture
def demo_db(tmp_path: Path) -> str:
    """The database the demo's full mode leaves: its seeded months of history, then the demo's own incidents."""
    result = CliRunner().invoke(main, ["demo", "--mode", "full", "--model", "builtin", "--keep", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "== review: a second agent reads the history" in result.output
    assert "search and shop, 1 time (#3/#2)" in result.output
    return str(tmp_path / "demo.db")


def test_the_review_of_the_demo_history_names_what_recurred_did_not_hold_and_co_occurred(demo_db: str) -> None:
    result = CliRunner().invoke(main, ["review", "--db", demo_db, "--since", "60d", "--model", "builtin", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    store = Store(demo_db)
    shop = [i.id for i in store.importance.incident_history(0) if i.target == "shop" and i.root_cause == "server_error"]
    assert len(shop) == 3  # seeded 40 days ago, then the demo's inject and replay
    [recurring] = data["recurring"]
    assert (recurring["target"], recurring["cause"], recurring["incidents"]) == ("shop", "server_error", shop)
    [not_held] = data["not_held"]
    assert (not_held["fixed"], not_held["again"]) == (shop[0], shop[1]) and "CHG-1042" in not_held["resolution"]
    [together] = data["co_occurring"]
    assert (together["first"], together["second"], len(together["pairs"])) == ("search", "shop", 1)
    assert data["model"] == "builtin" and "Fixes that did not hold:" in data["review"]


def test_a_short_window_sees_only_its_own_incidents(demo_db: str) -> None:
    result = CliRunner().invoke(main, ["review", "--db", demo_db, "--since", "1d", "--model", "builtin"])
    assert result.exit_code == 0, result.output
    assert "shop server_error, 2 incidents" in result.output  # the seeded one is 40 days old
    assert "failed again as" in result.output  # the fix that did not hold is older than the window: still named
    assert "Targets whose incidents co-occur:\n  none" in result.output


def test_findings_follow_causes_and_the_co_occurrence_window(db_path: str) -> None:
    clock = [T0]
    store = Store(db_path, clock=lambda: clock[0])

    def incident(at: float, target: str, cause: str, resolution: str | None = None) -> int:
        clock[0] = at
        incident_id = IncidentWrites(store).open_incident(target, "consecutive", f"{target} failed", root_cause=cause)
        clock[0] = at + 300
        IncidentWrites(store).close_incident(incident_id, resolution)
        return incident_id

    fixed = incident(T0, "api", "timeout", "raised the pool")
    held = incident(T0 + 100, "db", "server_error", "restarted")
    again = incident(T0 + DAY, "api", "timeout")
    other_cause = incident(T0 + 2 * DAY, "db", "dns_failure")
    far = incident(T0 + 2 * DAY + 601, "cache", "timeout")
    found = review.findings(store, T0 - 1, now=T0 + 3 * DAY)
    assert [(r.target, r.cause, r.incidents) for r in found.recurring] == [("api", "timeout", (fixed, again))]
    assert [(n.fixed, n.again) for n in found.not_held] == [(fixed, again)]  # db failed again, but not the same way
    assert found.co_occurring == [CoOccurrence("api", "db", ((fixed, held),))]  # cache came 601 s after db
    assert {held, other_cause, far} - {p for c in found.co_occurring for pair in c.pairs for p in pair} == {other_cause, far}


def test_with_a_model_the_history_goes_to_it_as_messages_and_it_writes_the_review(demo_db: str, tmp_path: Path) -> None:
    with FakeOllama(default={"content": "  Shop keeps failing with 500s; the pool fix did not hold.  "}) as ollama:
        config = tmp_path / "monitor.yaml"
        config.write_text(f"model:\n  id: ollama_chat/reviewer\n  api_base: {ollama.url}\n  retries: 0\n  timeout: 5\n")
        result = CliRunner().invoke(main, ["review", "--db", demo_db, "--config", str(config), "--since", "60d"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Shop keeps failing with 500s; the pool fix did not hold."
    [chat] = ollama.chats
    assert [m["role"] for m in chat["messages"]] == ["system", "user"] and not chat.get("tools")
    text = prompt_text(chat)
    assert "You review the history of a monitoring system" in text
    assert "consecutive server_error" in text and "raised the shop database pool" in text
    assert "together: search and shop, 1 time" in text


def test_targets_failing_independently_do_not_co_occur_and_a_shared_cause_does(db_path: str) -> None:
    """Five targets failing at random all came out paired: 10 of 10 pairs "co-occurring"."""
    import random

    clock = [T0]
    store = Store(db_path, clock=lambda: clock[0])
    draw = random.Random(32)
    openings = [(T0 + draw.uniform(0, DAY), target) for target in ("api", "web", "mail", "dns", "cache") for _ in range(20)]
    shared = [T0 + draw.uniform(0, DAY) for _ in range(6)]  # pg fails, and orders with it, a minute later
    openings += [(at, "pg") for at in shared] + [(at + 60, "orders") for at in shared]
    for at, target in sorted(openings):
        clock[0] = at
        incident = IncidentWrites(store).open_incident(target, "consecutive", f"{target} failed", root_cause="timeout")
        clock[0] = at + 120
        IncidentWrites(store).close_incident(incident)
    found = review.findings(store, T0, now=T0 + DAY)
    assert [(c.first, c.second, c.together) for c in found.co_occurring] == [("orders", "pg", 6)]
    chance = review.co_occurring([i for i in store.importance.incident_history(T0) if i.target not in ("pg", "orders")])
    assert chance == []
