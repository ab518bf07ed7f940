"""Timing you can trust (issue 9, item 5): phases of every check, no first-check penalty."""

from __future__ import annotations

import json
import subprocess
import sys

from prometheus_client import CollectorRegistry
from servers import Misbehaving, free_port

from monitor import wiring
from monitor.checks.engine import PHASES, Checker
from monitor.config import Target
from monitor.metrics import Metrics

PHASE_NAMES = ["dns", "connect", "tls", "first_byte", "body"]


def target(url: str, **fields: object) -> Target:
    return Target.model_validate({"name": "t", "url": url, "timeout": "2s", **fields})


def test_a_check_reports_its_phases_and_they_add_up_to_no_more_than_its_latency(web: Misbehaving) -> None:
    assert list(PHASES) == PHASE_NAMES
    [result] = Checker().run([target(web.url("/slowish"))])
    assert result.phases is not None and list(result.phases) == PHASE_NAMES
    assert result.phases["tls"] == 0  # plain http
    assert result.phases["first_byte"] >= 45  # /slowish answers after 50 ms
    assert 0 < sum(result.phases.values()) <= result.latency_ms + 0.01


def test_a_refused_connection_has_phases_up_to_the_connect(web: Misbehaving) -> None:
    [result] = Checker().run([target(f"http://127.0.0.1:{free_port()}/")])
    assert result.error == "connection_refused"
    assert result.phases is not None and result.phases["first_byte"] == result.phases["body"] == 0


def test_check_json_carries_the_phases(web: Misbehaving) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "check", web.url("/healthy"), "--json"], capture_output=True, text=True, timeout=60
    )
    [row] = json.loads(done.stdout)
    assert list(row["phases"]) == PHASE_NAMES


def test_a_healthy_loopback_target_never_trips_a_20ms_latency_condition(web: Misbehaving) -> None:
    """Each process's first check once paid ~45 ms of imports, every time; five fresh processes, five OKs.

    A loaded machine can stall one process past 20 ms (92 ms was seen at load 9 on 2 cores), so each gets a
    second try: the old defect failed every try, a stall does not repeat.
    """

    def ok() -> bool:
        done = subprocess.run(
            [sys.executable, "-m", "monitor", "check", web.url("/healthy"), "--max-latency", "20ms"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        failed.append(done.stdout + done.stderr)
        return done.returncode == 0

    for _ in range(5):
        failed: list[str] = []
        assert ok() or ok(), "\n".join(failed)


def test_phases_are_a_histogram_by_phase(web: Misbehaving) -> None:
    registry = CollectorRegistry()
    Metrics(registry).observe_results(Checker().run([target(web.url("/slowish"))]))
    for phase in PHASE_NAMES:
        assert registry.get_sample_value("monitor_check_phase_duration_seconds_count", {"kind": "http", "phase": phase}) == 1
    first_byte = {"kind": "http", "phase": "first_byte", "le": "0.025"}
    assert registry.get_sample_value("monitor_check_phase_duration_seconds_bucket", first_byte) == 0


def test_the_agents_check_target_shows_the_phases_on_its_observation_line(web: Misbehaving, db_path: str) -> None:
    from monitor.agent.tools import CheckTarget
    from monitor.config import Config
    from monitor.store import Store

    config = Config.model_validate({"targets": [{"name": "api", "url": web.url("/slowish"), "timeout": "1s"}]})
    tools = wiring.toolbox(config, Store(db_path))
    tools.focus = "api"
    first_line = CheckTarget(tools)(name="api").splitlines()[0]
    assert first_line.startswith("api: ") and "OK status=200" in first_line
    assert "(dns " in first_line and ", first byte " in first_line and first_line.endswith(" ms)")
    assert "first byte" not in tools.current_evidence().text()  # recall matches what the target did, not timings


def test_a_check_cut_short_shows_the_phase_it_was_waiting_in(web: Misbehaving) -> None:
    [hang, drip] = Checker().run([target(web.url("/hang"), timeout="300ms"), target(web.url("/drip"), timeout="300ms")])
    assert hang.error == drip.error == "timeout"
    assert hang.phases is not None and hang.phases["first_byte"] >= 250 and hang.phases["body"] == 0
    assert drip.phases is not None and drip.phases["body"] > 0


def test_a_name_that_does_not_resolve_spends_its_time_in_dns() -> None:
    [result] = Checker().run([target("http://no-such-host.invalid/")])
    assert result.error == "dns"
    assert result.phases is not None and result.phases["dns"] > 0 and result.phases["connect"] == 0
