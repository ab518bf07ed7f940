"""Gatus-like conditions: parsed at config load (errors with file:line), judged on real loopback answers."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from monitor.checks.engine import Checker
from monitor.config import ConfigError, Target, parse
from monitor.core import errors
from monitor.core.causes import root_cause_of
from monitor.core.results import Result

ITEMS = json.dumps({"status": "UP", "data": {"items": [{"id": 1, "name": "a"}, {"id": 7, "name": "b"}]}, "count": "12"}).encode()
BODIES = {
    "/items": (200, ITEMS),
    "/empty": (200, json.dumps({"status": "DOWN", "data": {"items": []}, "errors": ["disk full"]}).encode()),
    "/error-page": (200, b"<html>Internal error: database unreachable</html>"),
    "/teapot": (418, b"short and stout"),
    "/down": (500, json.dumps({"status": "DOWN", "error": "database connection pool exhausted"}).encode()),
    "/deep": (200, b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    "/wide": (200, json.dumps({"items": list(range(100_000))}).encode()),
}


class _Bodies(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        status, body = BODIES[self.path]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(server: ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    yield from (f"http{base}" for base in _serve(ThreadingHTTPServer(("127.0.0.1", 0), _Bodies)))


@pytest.fixture(scope="module")
def secure_site(pki: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bodies)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from (f"https{base}" for base in _serve(server))


def check(url: str, *conditions: str, **fields: object) -> Result:
    target = Target.model_validate({"name": "t", "url": url, "timeout": 5, "conditions": list(conditions), **fields})
    [result] = Checker().run([target])
    return result


def test_conditions_that_hold_pass(site: str) -> None:
    result = check(
        f"{site}/items",
        "[STATUS] == 200",
        "[STATUS] == any(200, 204)",
        "[RESPONSE_TIME] < 5000",
        "[BODY].status == UP",
        "len([BODY].data.items) > 1",
        "[BODY].data.items[1].id >= 7",
        "[BODY].data.items[?id > `5`].name | [0] == b",
        "[BODY].count == 12",
        "[BODY].count < 13",
        "has([BODY].errors) == false",
        '[BODY] == pat(*"UP"*)',
        "[BODY] != pat(*error*)",
        '[BODY].status != "DOWN"',
        "[CONNECTED] == true",
    )
    assert result.ok, result.detail


def test_each_failed_condition_is_named_with_what_was_seen(site: str) -> None:
    result = check(
        f"{site}/empty",
        "[STATUS] == 200",
        "len([BODY].data.items) > 0",
        "[BODY].status == UP",
        "has([BODY].errors) == false",
        "[RESPONSE_TIME] < 5000",
    )
    assert (result.severity, result.error) == ("critical", errors.CONDITION)
    assert result.detail == ("len([BODY].data.items) (0) > 0 failed; [BODY].status == UP failed; has([BODY].errors) (true) == false failed")
    assert result.excerpt is not None and "[BODY].status is DOWN" in result.excerpt  # the target's text: quoted
    assert "DOWN" not in result.detail


def test_a_slow_answer_names_its_time_and_is_a_warning(site: str) -> None:
    result = check(f"{site}/items", "[RESPONSE_TIME] < 0.001", "[STATUS] == 200")
    assert (result.severity, result.error) == ("warning", errors.CONDITION)
    assert result.detail.startswith("[RESPONSE_TIME] (") and result.detail.endswith("ms) < 0.001 failed")


def test_not_contains_by_pattern_and_by_expect(site: str) -> None:
    by_pattern = check(f"{site}/error-page", "[BODY] != pat(*Internal error*)")
    by_expect = check(f"{site}/error-page", expect={"body_not_contains": "Internal error"})
    assert (by_pattern.error, by_pattern.detail) == (errors.CONDITION, "[BODY] != pat(*Internal error*) failed")
    assert (by_expect.error, by_expect.detail) == (errors.CONDITION, "body contains 'Internal error'")
    assert check(f"{site}/items", expect={"body_not_contains": "Internal error"}).ok


def test_a_status_condition_replaces_the_default_expected_codes(site: str) -> None:
    assert check(f"{site}/teapot", "[STATUS] == 418").ok
    assert check(f"{site}/teapot").error == errors.STATUS
    written = check(f"{site}/teapot", "[STATUS] == 418", expect={"status": [200]})
    assert written.error == errors.STATUS  # expect.status written out still applies


def test_expect_and_conditions_together_report_both(site: str) -> None:
    result = check(f"{site}/empty", "len([BODY].data.items) > 0", expect={"body_contains": "UP"})
    assert result.detail == "body does not contain 'UP'; len([BODY].data.items) (0) > 0 failed"


@pytest.mark.parametrize("condition", ["[BODY].a.a.a == 1", "has([BODY].a) == true", "len([BODY].a) > 0"])
def test_a_deeply_nested_body_is_a_failed_condition_not_an_exception(site: str, condition: str) -> None:
    result = check(f"{site}/deep", condition, max_body=1 << 21)
    assert (result.severity, result.error) == ("critical", errors.CONDITION)
    assert "nested too deeply" in result.detail or result.detail == "has([BODY].a) (false) == true failed"


def test_paths_that_do_not_fit_the_body_fail_as_conditions(site: str) -> None:
    result = check(f"{site}/error-page", "[BODY].status == UP", "[BODY].items[0] < 3")
    assert result.detail == "[BODY].status == UP failed: the body is not JSON; [BODY].items[0] < 3 failed: the body is not JSON"
    typed = check(f"{site}/items", "[BODY].abs(status) == 1", "[BODY].status > 3", "[BODY].nothing > 3")
    assert typed.detail.count("failed") == 3 and typed.error == errors.CONDITION, typed.detail


def test_a_large_body_is_judged_in_bounded_time(site: str) -> None:
    result = check(f"{site}/wide", "len([BODY].items) == 100000", "[BODY].items[-1] == 99999", "[BODY] != pat(*x*y*z*w*)", max_body=1 << 21)
    assert result.ok, result.detail
    assert result.latency_ms < 5000


def test_certificate_expiration_on_https_and_tls(secure_site: str, pki: Path) -> None:
    trusted = {"ca_file": str(pki / "ca.pem")}
    assert check(f"{secure_site}/items", "[CERTIFICATE_EXPIRATION] > 48h", **trusted).ok  # it has 5 days
    soon = check(f"{secure_site}/items", "[CERTIFICATE_EXPIRATION] > 30d", **trusted)
    assert (soon.severity, soon.error) == ("warning", errors.CONDITION)
    assert soon.detail.startswith("[CERTIFICATE_EXPIRATION] (") and soon.detail.endswith("d) > 30d failed")
    tls = "tls" + secure_site.removeprefix("https")
    assert check(tls, "[CERTIFICATE_EXPIRATION] > 48h", **trusted).ok  # the condition replaces the 14 days' default
    assert check(tls, "[CERTIFICATE_EXPIRATION] > 30d", **trusted).severity == "warning"


def test_a_failed_condition_reads_as_the_cause_it_shows(site: str, secure_site: str, pki: Path) -> None:
    """A [STATUS] condition failed by a 500 read as bad_content (the agent said 'the body is wrong' of an
    outage), and [RESPONSE_TIME] or [CERTIFICATE_EXPIRATION] ones too: their detail has no word 'latency'."""

    def cause(result: Result) -> str:
        return root_cause_of(result.error, result.status_code, result.detail or "")

    down = check(f"{site}/down", "[STATUS] == 200", "[BODY].status == UP")
    assert cause(down) == "server_error"
    assert root_cause_of(down.error, 500, f" {down.detail}") == "server_error"  # as the builtin model reads a line
    assert cause(check(f"{site}/teapot", "[STATUS] == any(200, 204)")) == "client_error"
    assert cause(check(f"{site}/items", "[RESPONSE_TIME] < 0.001")) == "slow_response"
    assert cause(check(f"{secure_site}/items", "[CERTIFICATE_EXPIRATION] > 30d", ca_file=str(pki / "ca.pem"))) == "tls_error"
    assert cause(check(f"{site}/empty", "[STATUS] == 200", "len([BODY].data.items) > 0")) == "bad_content"
    assert cause(check(f"{site}/items", expect={"max_latency": 0.000001})) == "slow_response"


BAD = """\
targets:
  - name: fine
    url: http://127.0.0.1:1/
    conditions: ["[STATUS] == 200"]
  - name: api
    url: http://127.0.0.1:1/
    conditions:
      - "[STATUS] == 200"
      - "[STATUS] = 200"
      - "[BODY].a..b == 1"
      - "[CERTIFICATE_EXPIRATION] > 48h"
      - "[STATSU] == 200"
      - "[BODY].x < UP"
      - "[RESPONSE_TIME] < fast"
      - "[STATUS] > pat(2*)"
      - 200
  - name: port
    url: tcp://127.0.0.1:1
    conditions: ["[BODY] == 1", "[RESPONSE_TIME] < 20ms"]
"""


def test_bad_conditions_are_config_errors_with_their_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(BAD, "monitor.yaml")
    lines = str(caught.value).splitlines()
    assert [line.split(": ")[0:2] for line in lines] == [
        ["monitor.yaml:9", "targets[1].conditions[1]"],
        ["monitor.yaml:10", "targets[1].conditions[2]"],
        ["monitor.yaml:11", "targets[1].conditions[3]"],
        ["monitor.yaml:12", "targets[1].conditions[4]"],
        ["monitor.yaml:13", "targets[1].conditions[5]"],
        ["monitor.yaml:14", "targets[1].conditions[6]"],
        ["monitor.yaml:15", "targets[1].conditions[7]"],
        ["monitor.yaml:16", "targets[1].conditions[8]"],
        ["monitor.yaml:19", "targets[2].conditions[0]"],
    ]
    text = str(caught.value)
    assert "LEFT OP RIGHT" in lines[0] and "is not a JMESPath expression" in lines[1]
    assert "an http:// target has no [CERTIFICATE_EXPIRATION]" in lines[2] and "unknown placeholder [STATSU]" in lines[3]
    assert "compares numbers" in lines[4] and "'fast' is not a time" in lines[5] and "pat() goes with == or !=" in lines[6]
    assert "a tcp target has no [BODY]" in lines[8] and "conditions[1]" not in text.split("targets[2]")[-1]


def test_conditions_come_back_as_written() -> None:
    config = parse("targets: [{name: a, url: 'http://127.0.0.1:1/', conditions: ['[BODY].ok == true']}]")
    assert config.model_dump()["targets"][0]["conditions"] == ["[BODY].ok == true"]
    assert config.targets[0].model_copy() == config.targets[0]
