"""A past incident that quotes what the target says now is about this failure: on any target, in any language
around the quote, and ahead of one that quotes it only in part. And a name that does not resolve is not a port
that refuses (the resolver's errors are errnos too)."""

from __future__ import annotations

import dataclasses

import pytest
from past import as_incident

from monitor.memory import candidates, kinds, quotes, recall


@pytest.mark.parametrize(
    ("answer", "text", "echo"),
    [
        (
            '{"session_store":"redis-sessions.internal:6379 NOAUTH Authentication required."}',
            "Toutes les requêtes échouaient avec « NOAUTH Authentication required. » vers redis-sessions",
            1.0,
        ),
        ("-ERR 'maximum connections exceeded'", 'telemetry-ingest 503 "nats: maximum connections exceeded"', 0.75),
        (
            "LDAP: error code 49 - 80090308: AcceptSecurityContext error, data 532, v4563",
            'binds failed with "AcceptSecurityContext error, data 52e" (bad password)',
            0.0,
        ),  # 52e is not 532
        (
            "LDAP: error code 49 - 80090308: AcceptSecurityContext error, data 532, v4563",
            "Die Bindungen scheiterten mit „AcceptSecurityContext error, data 532“: das Passwort war abgelaufen",
            1.0,
        ),
        (
            "error: connect ECONNREFUSED 10.0.3.12:5432 (stock-db-primary)",
            '"connect ECONNREFUSED 10.0.3.40:6379" - the cache Redis was restarted',
            0.0,
        ),  # another endpoint
        ("upstream answered 503 Service Unavailable", 'the CDN showed "503 Service Unavailable"', 0.0),  # no message
        ("403 InvalidProviderToken", "APNs が「403 InvalidProviderToken」を返した", 0.0),  # one word is not a message
        ("FATAL: sorry, too many clients already", 'the pool logged "too many connections for role invoicing_ro"', 0.0),
        ("no healthy upstream", "the mesh had no healthy upstream for an hour", 0.0),  # not quoted: by meaning
        (
            "Error: connect ECONNREFUSED 10.0.3.12:5432 (retried 10 times)",
            'redis said "Error: connect ECONNREFUSED 10.0.3.40:6379"',
            0.0,
        ),  # "10" says no 10.0.3.40:6379
        ("upstream connect error: connection refused", 'the check said "connection refused"', 0.0),  # every refusal's
        (
            "upstream connect error or disconnect/reset before headers. reset reason: overflow",
            'it said "upstream connect error or disconnect/reset before headers. reset reason: connection failure"',
            0.0,
        ),  # one field, two values: two failures
        (
            '{"queue":"degraded: consumer group webhooks lag 48211"}',
            'it said "degraded: consumer group webhooks lag 9"',
            1.0,
        ),  # a count is no other failure
    ],
)
def test_a_quote_the_target_says_now_is_echoed(answer: str, text: str, echo: float) -> None:
    assert quotes.echoed(answer, text) == pytest.approx(echo, abs=0.01)


def test_another_target_that_quoted_this_message_applies_and_outranks_a_closer_one() -> None:
    """cart-api's French note quotes the NOAUTH error web-frontend answers now; no component of the answer names
    cart-api's incident, so before it could not apply, and web-frontend's own i/o-timeout incident was named."""
    evidence = recall.Evidence(
        "web-frontend",
        reading="server_error",
        status_code=503,
        error="unexpected_status",
        answer='{"status":"unhealthy","session_store":"NOAUTH Authentication required."}',
    )
    own = {
        "id": 3,
        "target": "web-frontend",
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": "session_store: dial tcp 10.0.4.12:6379: i/o timeout; the primary was on a bad host",
        "resolution": "failed the primary over",
    }
    french = {
        "id": 2,
        "target": "cart-api",
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": "Toutes les requêtes échouaient avec « NOAUTH Authentication required. » : le mot de passe avait changé",
        "resolution": "mis à jour le secret REDIS_PASSWORD",
    }
    found = [
        recall.candidate(as_incident(own), evidence, 0.874, 0.21, ["own"]),
        recall.candidate(as_incident(french), evidence, 0.869, 0.21, ["text"]),
    ]
    assert found[1].echo == 1.0 and not found[1].shared and recall.applicable(found[1], evidence)
    assert recall.choose(found, evidence) == found[1]
    [_, parsed], _ = candidates.parse_listing(candidates.listing(candidates.Recalled(found)), "web-frontend")
    assert parsed.echo == 1.0 and recall.applicable(parsed, recall.Evidence("web-frontend", reading="server_error"))


def test_an_echo_crosses_a_root_cause_on_another_target_but_not_another_failure() -> None:
    """nats-bus's TCP check reads a bad reply; telemetry-ingest, a client of the same NATS, had labelled the same
    message a server error: each target labels a shared failure by what it sees. A quote that differs in its
    errno (a proxy that timed out, or reset, where it refuses now) is another failure under any label."""
    evidence = recall.Evidence(
        "nats-bus", reading="bad_content", error="tcp_unexpected_reply", answer="reply: \"-ERR 'maximum connections exceeded'\""
    )
    client = {
        "id": 4,
        "target": "telemetry-ingest",
        "root_cause": "server_error",
        "status": "resolved",
        "summary": 'telemetry-ingest 503 "nats: maximum connections exceeded"',
        "diagnosis": "the NATS cluster was at its connection cap",
        "resolution": "rolled the collector back",
    }
    found = recall.candidate(as_incident(client), evidence, 0.846, 0.32, ["text", "vector"])
    assert found.echo == 0.75 and recall.applicable(found, evidence)
    assert not recall.applicable(dataclasses.replace(found, echo=0.0, said=""), recall.Evidence("nats-bus", "bad_content"))
    evidence = recall.Evidence(
        "api",
        reading="server_error",
        status_code=502,
        error="unexpected_status",
        answer="proxyconnect tcp: dial tcp 10.20.0.15:3128: connect: connection refused",
    )
    for root_cause, said, errno in (("timeout", "i/o timeout", "ETIMEDOUT"), ("server_error", "connection reset by peer", "ECONNRESET")):
        other = {
            "id": 1,
            "target": "fetcher",
            "root_cause": root_cause,
            "status": "resolved",
            "diagnosis": f'All fetches failed with "proxyconnect tcp: dial tcp 10.20.0.15:3128: {said}"',
            "resolution": "restored the security group rule",
        }
        found = recall.candidate(as_incident(other), evidence, 0.9, 0.3, ["text"])
        assert found.differs == f"errno {errno}, here ECONNREFUSED" and not recall.applicable(found, evidence)


@pytest.mark.parametrize(
    ("text", "errno"),
    [
        ('could not translate host name "orders-db.prod.internal" to address: Name or service not known', "EAI_NONAME"),
        ("dial tcp: lookup pricing-svc on 10.96.0.10:53: no such host", "EAI_NONAME"),
        ("getaddrinfo failed: Temporary failure in name resolution", "EAI_AGAIN"),
        ("could not connect to server: Connection refused", "ECONNREFUSED"),
    ],
)
def test_the_resolvers_errors_are_errnos(text: str, errno: str) -> None:
    assert kinds.of(text, "server_error").get("errno") == errno


def test_a_name_that_does_not_resolve_is_not_a_port_that_refuses() -> None:
    evidence = recall.Evidence(
        "orders-api",
        reading="server_error",
        status_code=500,
        error="unexpected_status",
        answer='{"error": "OperationalError: could not translate host name '
        '\\"orders-db.prod.internal\\" to address: Name or service not known"}',
    )
    refused = {
        "id": 6,
        "target": "orders-api",
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": "OperationalError: could not connect to server: Connection refused. Is the server "
        "running on host orders-db.prod.internal?",
        "resolution": "restarted postgres",
    }
    spanish = {
        "id": 3,
        "target": "orders-api",
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": "La aplicación no podía resolver orders-db.prod.internal: el registro se borró",
        "resolution": "recreado el registro en la zona",
    }
    found = [
        recall.candidate(as_incident(refused), evidence, 0.895, 0.31, ["own"]),
        recall.candidate(as_incident(spanish), evidence, 0.888, 0.15, ["own"]),
    ]
    assert found[0].differs.startswith("errno ECONNREFUSED, here EAI_NONAME")
    assert recall.choose(found, evidence) == found[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "502: upstream render-worker (pid 4127) terminated by signal 9 (SIGKILL); memory.max 512Mi reached",
            {"signal": "SIGKILL", "status": "502"},
        ),
        ("Der Render-Worker wurde vom OOM-Killer des Kernels beendet", {"signal": "SIGKILL"}),
        ("the pods got SIGTERM from the autoscaler while still rendering", {"signal": "SIGTERM"}),
        ("the container exited with exit code 139", {"signal": "SIGSEGV"}),
        ("-LOADING Redis is loading the dataset in memory", {"redis": "LOADING"}),
        ("-OOM command not allowed when used memory > 'maxmemory'", {"redis": "OOM"}),
        ("the OOM killer struck, then Redis answered LOADING Redis is loading", {"signal": "SIGKILL", "redis": "LOADING"}),
        ("the worker got SIGTERM, and later SIGKILL", {}),  # two of one family: a comparison, no kind
        ("Segmentation fault (core dumped)", {"signal": "SIGSEGV"}),  # any core-dumping signal prints "core dumped"
        ("Azure Service Bus error: the queue is full", {}),  # no bus error of a process
        ('{"status":"BUSY"}', {}),  # a word in capitals, not Redis's error reply and its message
    ],
)
def test_signals_and_redis_replies_are_kinds(text: str, expected: dict[str, str]) -> None:
    assert kinds.of(text, "server_error") == expected


def test_a_summarys_kind_stands_against_what_the_diagnosis_goes_on_to_tell() -> None:
    """ "certificate expired" in the summary, "renew" and "revoked" (the DNS credentials) in the diagnosis: read
    as one text, two kinds of the certificate cancelled out and the incident stated none, so it stayed a
    candidate for a certificate that names another host."""
    evidence = recall.Evidence(
        "pay-tls",
        reading="tls_error",
        error="cert_hostname_mismatch",
        detail="the certificate does not name pay.example.com: Hostname mismatch",
    )
    row = {
        "id": 2,
        "target": "pay-tls",
        "root_cause": "tls_error",
        "status": "resolved",
        "summary": "pay.example.com certificate expired",
        "diagnosis": "cert-manager could not renew the certificate because the DNS-01 solver credentials had been revoked",
        "resolution": "new credentials",
    }
    found = recall.candidate(as_incident(row), evidence, 0.887, 0.34, ["own"])
    assert dict(found.kinds)["certificate"] == "validity" and found.differs == "certificate validity, here name"


def test_a_lookup_timing_out_is_no_answer_not_a_missing_record() -> None:
    assert kinds.of("ws.chat.example.io lookups timing out from the monitor", "dns_failure") == {"rcode": "no answer"}


def test_the_same_kind_of_failure_outranks_a_closer_candidate_and_parses_back() -> None:
    """thumbnailer's worker was killed for its memory (SIGKILL); the German note says the OOM killer ended it,
    the English one tells of a rolling deploy in words closer to the answer."""
    evidence = recall.Evidence(
        "thumbnailer",
        reading="server_error",
        status_code=502,
        error="unexpected_status",
        answer="502 Bad Gateway: upstream render-worker (pid 4127) terminated by signal 9 (SIGKILL); container memory.max 512Mi reached",
    )
    deploy = {
        "id": 1,
        "target": "thumbnailer",
        "root_cause": "server_error",
        "status": "resolved",
        "summary": "thumbnailer 502 Bad Gateway, upstream render-worker unavailable",
        "diagnosis": "During the rolling deploy all old pods were terminated before the new ones were ready",
        "resolution": "maxUnavailable 0",
    }
    german = {
        "id": 2,
        "target": "thumbnailer",
        "root_cause": "server_error",
        "status": "resolved",
        "summary": "Render-Worker startet ständig neu",
        "diagnosis": "Der Render-Worker wurde vom OOM-Killer des Kernels beendet: sehr große TIFF-Uploads",
        "resolution": "Speicherlimit auf 2Gi erhöht",
    }
    found = [
        recall.candidate(as_incident(deploy), evidence, 0.892, 0.16, ["own"]),
        recall.candidate(as_incident(german), evidence, 0.864, 0.05, ["own"]),
    ]
    assert (found[0].agrees, found[1].agrees) == ("", "signal SIGKILL")
    assert recall.choose(found, evidence) == found[1]
    _, parsed = candidates.parse_listing(candidates.listing(candidates.Recalled(found)), "thumbnailer")[0]
    assert parsed.agrees == "signal SIGKILL" and parsed.score == pytest.approx(found[1].score, abs=0.01)


def test_another_target_earns_no_weight_for_this_targets_own_exception_class() -> None:
    evidence = recall.Evidence(
        "orders", reading="server_error", status_code=500, error="unexpected_status", answer="KeyError: 'currency' in price_of"
    )
    row = {
        "id": 2,
        "target": "billing",
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": "billing raised KeyError on a missing tax code",
        "resolution": "added the code",
    }
    assert recall.candidate(as_incident(row), evidence, 0.9, 0.1, ["component"]).agrees == ""
    assert recall.candidate(as_incident({**row, "target": "orders"}), evidence, 0.9, 0.1, ["own"]).agrees == "exception KeyError"


def test_a_line_reads_back_whole_when_a_health_documents_key_holds_a_colon() -> None:
    found = candidates.Candidate(
        3, "api", "server_error", "resolved", "pool exhausted", "raised the pool", 0.9, differs="blames db: primary,\nwhich passes now"
    )
    [parsed], _ = candidates.parse_listing(candidates.listing(candidates.Recalled([found])), "api")
    assert (parsed.differs, parsed.symptom) == ("blames db primary, which passes now", "pool exhausted")
