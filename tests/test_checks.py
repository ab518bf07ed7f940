"""The check engine against real loopback servers, each misbehaving its own way."""

from __future__ import annotations

import json
import time

import pytest
from servers import Answering, Misbehaving, free_port

from monitor.checks import answers
from monitor.checks.engine import Checker, exit_code
from monitor.config import Target
from monitor.core import errors
from monitor.core.results import Result

TIMEOUT = 1.0
MARGIN = 0.6


def target(url: str, **fields: object) -> Target:
    return Target.model_validate({"name": "t", "url": url, "timeout": TIMEOUT, **fields})


def check(t: Target) -> tuple[Result, float]:
    started = time.monotonic()
    [result] = Checker().run([t])
    return result, time.monotonic() - started


@pytest.mark.parametrize(
    ("path", "error", "severity"),
    [
        ("/healthy", None, "ok"),
        ("/500", errors.STATUS, "critical"),
        ("/slow", errors.TIMEOUT, "critical"),
        ("/hang", errors.TIMEOUT, "critical"),
        ("/drip", errors.TIMEOUT, "critical"),
        ("/endless", errors.BODY_TOO_LARGE, "critical"),
        ("/big", errors.BODY_TOO_LARGE, "critical"),
        ("/reset", errors.RESET, "critical"),
        ("/loop", errors.REDIRECTS, "critical"),
        ("/garbage", errors.PROTOCOL, "critical"),
    ],
)
def test_each_behaviour_ends_in_time_with_its_error_kind(web: Misbehaving, path: str, error: str | None, severity: str) -> None:
    result, elapsed = check(target(web.url(path)))
    assert (result.error, result.severity) == (error, severity), result.detail
    assert result.ok is (severity == "ok")
    assert elapsed < TIMEOUT + MARGIN


def test_json_field_with_the_wrong_value_fails_the_condition(web: Misbehaving) -> None:
    expect = {"json": {"path": "status", "equals": "ok"}}
    bad, _ = check(target(web.url("/json-wrong"), expect=expect))
    good, _ = check(target(web.url("/healthy"), expect=expect))
    assert (bad.error, bad.severity) == (errors.CONDITION, "critical")
    assert "'degraded'" in (bad.excerpt or "") and "degraded" not in bad.detail  # the target's text is quoted
    assert good.ok


def test_a_deeply_nested_json_body_is_a_failed_condition_not_a_crash(web: Misbehaving) -> None:
    """Hostile input, round three, finding 4: it raised RecursionError every interval and stored nothing."""
    result, _ = check(target(web.url("/json-deep"), expect={"json": {"path": "status", "equals": "ok"}}))
    assert (result.error, result.severity) == (errors.CONDITION, "critical")
    assert "nested too deeply" in result.detail


def test_refused_port() -> None:
    result, elapsed = check(target(f"http://127.0.0.1:{free_port()}/"))
    assert result.error == errors.REFUSED
    assert elapsed < TIMEOUT + MARGIN


def test_unresolvable_host() -> None:
    result, elapsed = check(target("http://no-such-host.invalid/"))
    assert result.error == errors.DNS
    assert elapsed < TIMEOUT + MARGIN


def test_latency_over_the_limit_is_a_warning_not_down(web: Misbehaving) -> None:
    result, _ = check(target(web.url("/slowish"), expect={"max_latency": "20ms"}))
    assert (result.severity, result.error) == ("warning", errors.CONDITION)
    assert exit_code([result]) == 1


def test_body_contains(web: Misbehaving) -> None:
    good, _ = check(target(web.url("/healthy"), expect={"body_contains": '"ok"'}))
    bad, _ = check(target(web.url("/healthy"), expect={"body_contains": "missing"}))
    assert good.ok and bad.error == errors.CONDITION


def test_a_hung_target_does_not_slow_the_others(web: Misbehaving) -> None:
    hung = [Target(name=f"hang{i}", url=web.url("/hang"), timeout=TIMEOUT) for i in range(4)]
    fine = [Target(name=f"ok{i}", url=web.url("/healthy"), timeout=TIMEOUT) for i in range(40)]
    started = time.monotonic()
    results = Checker(concurrency=8).run(hung + fine)
    assert time.monotonic() - started < TIMEOUT + MARGIN + 1.0
    assert [r.name for r in results] == [t.name for t in hung + fine]
    assert all(r.ok for r in results[4:]) and not any(r.ok for r in results[:4])
    assert max(r.latency_ms for r in results[4:]) < TIMEOUT * 1000 * 0.8  # not stuck behind a hung one


def test_exit_codes_follow_nagios() -> None:
    def result(severity: str) -> Result:
        return Result("n", "u", severity == "ok", severity, None, 1.0, None, "", 0.0)

    assert exit_code([result("ok")]) == 0
    assert exit_code([result("ok"), result("warning")]) == 1
    assert exit_code([result("warning"), result("critical")]) == 2


def test_json_field_walks_lists_and_objects() -> None:
    document = {"data": {"items": [{"id": 7}]}}
    assert answers.json_field(document, "data.items.0.id") == 7
    with pytest.raises(KeyError):
        answers.json_field(document, "data.items.3.id")


def test_the_failing_components_error_comes_first_and_whole() -> None:
    """Spring Boot lists components by name: the failing redis came after db, diskSpace, mail and ping, and the host
    its Lettuce error names (the shared cache) fell past the excerpt's end, so recall could not cross to the
    incident filed on another client of that cache. The failing components now come first."""
    passing = {
        name: {"status": "UP", "description": f"{name} is reachable and answered within its time limit"}
        for name in ("db", "diskSpace", "discoveryComposite", "mail", "ping", "refreshScope")
    }
    error = (
        "org.springframework.data.redis.RedisConnectionFailureException: Unable to connect to Redis; nested "
        "exception is io.lettuce.core.RedisConnectionException: Unable to connect to cache-3.prod.internal/"
        "10.40.2.31:6379"
    )
    document = {"status": "DOWN", "components": {**passing, "redis": {"status": "DOWN", "details": {"error": error}}}}
    with Answering(503, json.dumps(document)) as site:
        result, _ = check(target(site.base + "/actuator/health"))
    assert error in (result.excerpt or "")
    listed = [{"status": "pass", "output": "x" * 600}, {"status": "fail", "output": "y"}]
    assert [c["status"] for c in json.loads(answers.focused(json.dumps(listed).encode()))] == ["fail", "pass"]


def test_a_large_batch_split_over_processes_keeps_order_and_results(web: Misbehaving) -> None:
    targets = [Target(name=f"t{i}", url=web.url("/healthy" if i % 7 else "/500"), timeout=5) for i in range(600)]
    results = Checker(concurrency=16, processes=2).run(targets)
    assert [r.name for r in results] == [t.name for t in targets]
    assert [r.ok for r in results] == [bool(i % 7) for i in range(600)]


def test_a_long_health_document_shows_the_failing_components_error() -> None:
    """A Spring Boot document of 900 bytes was cut at 300: the excerpt held db's and diskSpace's details and
    not the ldap error that failed the check, so neither recall nor a model saw it. Passing components keep
    their verdict and lose their details; the failing one is shown whole."""
    document = {
        "status": "DOWN",
        "components": {
            "db": {"status": "UP", "details": {"database": "PostgreSQL", "validationQuery": "isValid()" * 40}},
            "diskSpace": {"status": "UP", "details": {"total": 107361579008, "free": 61532131328, "threshold": 10485760}},
            "ldap": {
                "status": "DOWN",
                "details": {
                    "error": "AuthenticationException: [LDAP: error code 49 - 80090308: AcceptSecurityContext error, data 532, v4563]"
                },
            },
        },
    }
    with Answering(503, json.dumps(document)) as site:
        result, _ = check(target(site.base + "/health"))
    assert result.error == errors.STATUS and "data 532" in (result.excerpt or "")
    assert '"db":{"status":"UP"}' in (result.excerpt or "") and "validationQuery" not in (result.excerpt or "")
    assert answers.focused(b"x" * 400) == b"x" * 400  # not a document: as it came
    failing = json.dumps({"status": "pass", "checks": [{"status": "fail", "output": "y" * 300}]}).encode()
    assert json.loads(answers.focused(failing))["checks"][0]["output"] == "y" * 300  # the document's own verdict
