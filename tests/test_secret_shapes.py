"""Every shape a credential takes in a failing target's answer, hidden by the one redaction (issue 42, item 1),
with the words around it kept: the memory reads error texts, so only the secret values go.

detect-secrets (Yelp's maintained catalogue of secret detectors) is the oracle: what it finds in a redacted text is a
shape the catalogue in :mod:`monitor.core.redaction` lacks."""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from outbox import Stop, plain_alerts, queue
from past import known
from servers import Background, Receiver
from starlette.testclient import TestClient
from test_alertmanager import active_alerts, running_alertmanager

from monitor.checks.engine import Checker
from monitor.cli.main import main
from monitor.config import Config, load
from monitor.core.diagnoses import Diagnosed
from monitor.core.urls import redact_text, redacted
from monitor.incidents import evidence
from monitor.incidents.tracker import Event
from monitor.mcp.server import Tools
from monitor.mcp.source import Source
from monitor.memory import transcripts, working
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app

AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"
)
PEM_ESCAPED = PEM_BODY.replace("\n", "\\n")  # as a JSON string writes it
SLACK = "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
GITLAB = "glpat-Xy9zAbCdEfGhIjKlMnOp"

# (text, the secrets in it, words that stay)
SHAPES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("login refused: creds admin:hunter2x", ("hunter2x",), ("creds admin", "login refused")),
    ("retrying with pass hunter3y now", ("hunter3y",), ("retrying with pass", "now")),
    (f"aws keys {AWS_ID} {AWS_SECRET} in env", (AWS_ID, AWS_SECRET), ("aws keys", "in env")),
    (f"aws_secret_access_key={AWS_SECRET}", (AWS_SECRET,), ("aws_secret_access_key=",)),
    (f"{AWS_ID}:{AWS_SECRET}", (AWS_ID, AWS_SECRET), ()),
    (f"session {JWT} expired", (JWT, JWT.split(".")[2]), ("session", "expired")),
    (
        f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nbye",
        tuple(PEM_BODY.split("\n")),
        ("BEGIN RSA PRIVATE KEY", "bye"),
    ),
    (f"-----BEGIN OPENSSH PRIVATE KEY-----\\n{PEM_ESCAPED}", tuple(PEM_BODY.split("\n")), ()),
    (f"slack said {SLACK} is revoked", (SLACK, SLACK[-20:]), ("slack said", "is revoked")),
    (f"clone with {GITHUB} failed", (GITHUB,), ("clone with", "failed")),
    (f"Authorization: Token {GITLAB}\nAccept: */*", (GITLAB, GITLAB[6:]), ("Authorization:", "Accept: */*")),
    (f'{{"headers": {{"Authorization": "Token {GITLAB}"}}}}', (GITLAB,), ('"Authorization"',)),
    ("GET /login?user=app&pw=Tr0ub4dor&next=/", ("Tr0ub4dor",), ("user=app", "next=/")),
    ("body password%3Ds3cr3t-enc%26user%3Dapp", ("s3cr3t-enc",), ("body", "user")),
    ("form p%61ssword=s3cr3t-enc2&lang=en", ("s3cr3t-enc2",), ("form", "lang=en")),
    ("<login><user>app</user><password>xml-s3cr3t</password></login>", ("xml-s3cr3t",), ("<user>app</user>", "<password>")),
    ("password: 'hunter4 correct horse battery' rejected", ("hunter4", "correct horse battery", "horse"), ("password:", "rejected")),
    ('{"password": "two words9 \\"quoted\\" here"}', ("two words9", "quoted", "here"), ('"password"',)),
    (
        "Cookie: JSESSIONID=6A5F3C2B1D0E9F8A7B6C5D4E3F2A1B0C; PHPSESSID=9k2j3h4g5f6d7s8a",
        ("6A5F3C2B1D0E9F8A7B6C5D4E3F2A1B0C", "9k2j3h4g5f6d7s8a"),
        ("JSESSIONID=", "PHPSESSID="),
    ),
    ("Set-Cookie: PHPSESSID=q1w2e3r4t5y6u7i8; Path=/; HttpOnly", ("q1w2e3r4t5y6u7i8",), ("PHPSESSID=", "Path=/")),
    ("Location: https://app.example.test/next?pw=loc-s3cret9&lang=en", ("loc-s3cret9",), ("app.example.test/next", "lang=en")),
    ("Location: /next?pw=loc-s3cret8", ("loc-s3cret8",), ("Location: /next?pw=",)),
    ("the password is Sup3r-secret!", ("Sup3r-secret",), ("the password is",)),
]
# error texts the memory reads: they stay as written
PLAIN = [
    "connection pool exhausted",
    'FATAL: password authentication failed for user "app"',
    "password authentication failed for user app",
    "pass the request on; token expired at 12:30; session timed out",
    "Basic authentication failed; the primary key is id; Content-Type: text/plain; retry-after: 30",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b, request 9a0364b9-e99b-b480-dd25-e1f0284c8555",
    "the password is required",
    "GET http://db-internal.corp:5432/app?page=2 failed: 503 Service Unavailable",
]


@pytest.mark.parametrize(("text", "secrets", "kept"), SHAPES, ids=[shape[0][:40] for shape in SHAPES])
def test_each_shape_of_a_credential_is_hidden_and_its_words_kept(text: str, secrets: tuple[str, ...], kept: tuple[str, ...]) -> None:
    out = redact_text(text)
    assert [s for s in secrets if s in out] == [], out
    assert [w for w in kept if w not in out] == [], out
    assert "***" in out
    assert redact_text(out) == out  # idempotent


@pytest.mark.parametrize("text", PLAIN)
def test_error_words_are_not_redacted(text: str) -> None:
    assert redact_text(text) == text


def test_a_quoted_value_is_one_value_and_json_stays_json() -> None:
    document = json.dumps({"password": 'p"q r', "key": 12, "note": "token=abc== and more", "ok": "fine"})
    assert json.loads(redact_text(document)) == {"password": "***", "key": 12, "note": "token=*** and more", "ok": "fine"}
    assert redacted({"a": ["pass hunter5z"], "b": 3}) == {"a": ["pass ***"], "b": 3}


def test_a_user_name_stays_beside_its_hidden_password() -> None:
    assert redact_text("creds admin:hunter2x") == "creds admin:***"
    assert redact_text("credentials=app:pgpass99") == "credentials=app:***"


def _detections(text: str) -> Iterator[tuple[str, str]]:
    """What detect-secrets' detectors find in ``text``, line by line: (detector, secret)."""
    from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.ip_public import IPPublicDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.settings import default_settings

    with default_settings():
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

        # typed Dict[str, Type[Plugin]] with Plugin a TypeVar bound by no argument: each value is a plugin class
        classes: set[type[BasePlugin]] = set(get_mapping_from_secret_type_to_class().values())
        detectors: list[BasePlugin] = [
            c() for c in classes if issubclass(c, RegexBasedDetector) and c not in (IPPublicDetector, PrivateKeyDetector)
        ]
        detectors += [KeywordDetector(), BasicAuthDetector()]
        for line in text.splitlines():
            for detector in detectors:
                yield from ((type(detector).__name__, found) for found in detector.analyze_string(line))


def test_detect_secrets_finds_nothing_in_what_was_redacted() -> None:
    corpus = "\n".join(text for text, _, _ in SHAPES)
    seen = {detector for detector, _ in _detections(corpus)}  # the oracle sees the shapes
    assert {"AWSKeyDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector", "SlackDetector"} <= seen
    assert sorted(set(_detections(redact_text(corpus)))) == []


# ---- generated secrets in generated bodies ---------------------------------------------------------------------------

PROSE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.\n", max_size=60)
SECRET = st.text(alphabet="abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789-_.~!*", min_size=8, max_size=32).filter(
    lambda s: any(c.isdigit() for c in s) and s[-1] not in ".!"
)
KEYS = st.sampled_from(["password", "passwd", "pwd", "pw", "db_password", "api_key", "X-Api-Key", "token", "client_secret", "secret"])
TEMPLATES: list[Callable[[str, str], str]] = [
    lambda key, s: f"{key}={s}",
    lambda key, s: f"{key}: {s}",
    lambda key, s: f'"{key}": "{s}"',
    lambda key, s: f"{key} = '{s} and more'",
    lambda key, s: f"<{key}>{s}</{key}>",
    lambda key, s: f"https://svc.example.test/a?{key}={s}&x=y",
    lambda key, s: f"postgres://app:{s}@db:5432/app",
    lambda key, s: f"Authorization: Bearer {s}",
    lambda key, s: f"Authorization: Token {s}",
    lambda key, s: f"Cookie: JSESSIONID={s}; theme=dark",
    lambda key, s: f"{key}%3D{s}",
    lambda key, s: f"pass {s}",
    lambda key, s: f"creds admin:{s}",
    lambda key, s: json.dumps({"error": "denied", key: s}),
]
CATALOGUED = st.one_of(
    st.from_regex(r"(AKIA|ASIA)[0-9A-Z]{16}", fullmatch=True),
    st.from_regex(r"gh[pousr]_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"glpat-[A-Za-z0-9_-]{20}", fullmatch=True),
    st.from_regex(r"xox[abp]-[0-9]{10,12}-[0-9]{10,12}-[A-Za-z0-9]{24}", fullmatch=True),
    st.from_regex(r"sk_live_[0-9a-zA-Z]{24}", fullmatch=True),
    st.from_regex(r"AIza[0-9A-Za-z_-]{35}", fullmatch=True),
).filter(lambda s: any(c.isdigit() for c in s))


def _windows(secret: str) -> set[str]:
    """The parts of ``secret`` that could not be prose: every 6 characters with a digit in them."""
    return {secret[i : i + 6] for i in range(len(secret) - 5) if any(c.isdigit() for c in secret[i : i + 6])}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=PROSE, after=PROSE, key=KEYS, secret=SECRET, template=st.sampled_from(TEMPLATES))
def test_generated_secrets_in_generated_bodies_are_hidden(
    before: str, after: str, key: str, secret: str, template: Callable[[str, str], str]
) -> None:
    out = redact_text(f"{before} {template(key, secret)} {after}")
    assert [w for w in _windows(secret) if w in out] == [], out


@settings(max_examples=150, deadline=None)
@given(before=PROSE, after=PROSE, token=CATALOGUED)
def test_generated_tokens_of_the_catalogue_are_hidden(before: str, after: str, token: str) -> None:
    out = redact_text(f"{before} {token} {after}")
    assert [w for w in _windows(token) if w in out] == [], out


# ---- every way out, end to end ---------------------------------------------------------------------------------------


class _Shapes(BaseHTTPRequestHandler):
    """``GET /<i>``: 503 with SHAPES[i]'s text as the body; the Location shape as a real Location header too."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        text = SHAPES[int(self.path.strip("/"))][0]
        body = text.encode()
        self.send_response(503)
        if text.startswith("Location: "):
            self.send_header("Location", text.removeprefix("Location: "))
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


FORMS = ("full", "succinct", "messages")  # monitor memory export's, beside dump (working.export)


def _ways_out(store: Store, config: Config, incidents: list[int], tmp_path: Path) -> dict[str, str]:
    """What each channel that is not an alert receiver shows of ``incidents``: the API, MCP, the CLI, the exports."""
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110")
    shown = {path: client.get(path).text for path in ("/api/v1/incidents?limit=100", "/api/v1/targets?limit=100", "/api/v1/runs")}
    shown |= {f"/api/v1/incidents/{i}": client.get(f"/api/v1/incidents/{i}").text for i in incidents}
    mcp = Tools(Source(store, config))
    shown["mcp incidents"] = json.dumps(mcp.answer(lambda: mcp.answers.incidents(status="all", limit=100)))
    shown |= {f"mcp incident {i}": json.dumps(mcp.answer(functools.partial(mcp.answers.incident, i))) for i in incidents}
    runner = CliRunner()
    shown |= {f"cli show {i}": runner.invoke(main, ["incidents", "show", str(i), "--db", store.path]).output for i in incidents}
    working.export(store, str(tmp_path / "memory.json"))
    for form in FORMS:
        transcripts.export(store, str(tmp_path / f"runs-{form}.json"), form)
    return shown | {name: (tmp_path / name).read_text() for name in ("memory.json", *(f"runs-{form}.json" for form in FORMS))}


def test_every_shape_from_a_failing_target_is_hidden_on_every_way_out(tmp_path: Path, db_path: str, stopped: Stop) -> None:
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(Background(_Shapes))
        hook, apprise = stack.enter_context(Receiver()), stack.enter_context(Receiver())
        # a real Alertmanager where one is installed (.ci/run installs it)
        am = stack.enter_context(running_alertmanager(tmp_path)) if shutil.which("prometheus-alertmanager") else None
        names = [f"shape-{i}" for i in range(len(SHAPES))]
        receivers = {"webhooks": [{"url": hook.url}], "notify": [apprise.url.replace("http://", "json://")], "alertmanager": am}
        config = Config.model_validate(
            {
                "targets": [{"name": name, "url": f"{server.base}/{i}", "timeout": "2s"} for i, name in enumerate(names)],
                "alerts": {**{k: v for k, v in receivers.items() if v}, "wait_for_diagnosis": "0s"},
            }
        )
        store = Store(db_path)
        results = Checker().run(config.targets)
        store.results.add_results(results)
        alerts, incidents = stopped(plain_alerts(config.alerts, store)), []
        for result, (text, _, _) in zip(sorted(results, key=lambda r: names.index(r.name)), SHAPES, strict=True):
            found = evidence.evidence(store.results.recent_results(result.name, 10), result)
            incident = IncidentWrites(store).open_incident_unless_open(
                result.name, "consecutive", f"{result.name} failed: {text}", evidence=found
            )
            assert incident is not None and text.split()[0] in str(found) + (result.excerpt or "")  # the body got this far
            run = store.runs.start_run("t", target=result.name, incident_id=incident)
            IncidentWrites(store).record_diagnosis(
                run,
                incident,
                Diagnosed(diagnosis=text, root_cause="server_error", related_incident=None, confidence="low", suspected_cause="5xx"),
            )
            queue(alerts, Event("opened", known(store.incidents.incident(incident))))
            incidents.append(incident)
        assert alerts.deliver_due() >= 2 * len(SHAPES) + (1 if am else 0)  # Alertmanager's are sent in batches
        channels = {"webhook": json.dumps(hook.received), "apprise": json.dumps(apprise.received)}
        if am:
            channels["alertmanager"] = json.dumps(active_alerts(am))
    channels |= _ways_out(store, config, incidents, tmp_path)
    secrets = {s for _, found, _ in SHAPES for s in found}
    for name, text in channels.items():
        assert "shape-" in text or name == "runs-messages.json", name  # the channel shows the incidents (a model's messages: its task)
        assert sorted(s for s in secrets if s in text) == [], name
    assert "creds admin:***" in channels["webhook"] and "password authentication" not in channels["webhook"]


def test_a_secret_the_config_substitutes_into_an_expectation_is_hidden(
    tmp_path: Path, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEALTH_SECRET", "hs-7c1e9a52")
    monkeypatch.setenv("PROBE_TOKEN", "Zq8vN2mK5xR7tY4wP1sL")
    with Background(_Shapes) as server:
        path = tmp_path / "monitor.yaml"
        path.write_text(
            "targets:\n"
            f"  - name: health\n    url: {server.base}/0\n    timeout: 2s\n    expect: {{status: [503]}}\n"
            '    conditions: ["[BODY].status == ${HEALTH_SECRET}"]\n'
            f"  - name: body\n    url: {server.base}/1\n    timeout: 2s\n"
            "    expect: {status: [503], body_contains: '${HEALTH_SECRET}'}\n"
            f"  - name: token\n    url: {server.base}/2\n    timeout: 2s\n"
            "    expect: {status: [503], body_contains: '${PROBE_TOKEN}'}\n"
            f"  - name: plain\n    url: {server.base}/3\n    timeout: 2s\n"
            "    expect: {status: [503], body_contains: '${PLAIN_WORD}'}\n"
        )
        monkeypatch.setenv("PLAIN_WORD", "degraded")  # neither named as a secret nor shaped like one: shown
        config = load(path)
        store = Store(db_path)
        results = Checker().run(config.targets)
        store.results.add_results(results)
    assert {r.name: "hs-7c1e9a52" in r.detail or "Zq8vN2mK5xR7tY4wP1sL" in r.detail for r in results} == {
        "health": True,
        "body": True,
        "token": True,
        "plain": False,
    }  # the check's own words name what it expected
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110")
    for page in ("/api/v1/targets", "/api/v1/targets/health", "/api/v1/targets/body/results", "/api/v1/targets/token"):
        text = client.get(page).text
        assert "hs-7c1e9a52" not in text and "Zq8vN2mK5xR7tY4wP1sL" not in text, page
        assert "***" in text, path
    assert "degraded" in client.get("/api/v1/targets/plain").text
