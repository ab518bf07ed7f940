"""The kind of a failure within its root cause (issue 18: no fix named for another failure of the same label).

A past incident on the same target under the same root cause was named as the fix whenever it read alike:
an expired certificate's renewal for a certificate issued to another name, a JWKS key rotation for an
expired OAuth client secret. Its kind, stated in the protocol's own words, now rules it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from past import as_incident
from servers import Answering
from test_recall import config, failing, investigate, past

from monitor.memory import candidates, components, health, kinds, quotes, recall
from monitor.memory.candidates import Recalled
from monitor.store import Store


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    store = Store(db_path)
    yield store
    store.close()


@pytest.mark.parametrize(
    ("text", "cause", "expected"),
    [
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)",
            "tls_error",
            {"certificate": "validity", "code": "CERTIFICATE_VERIFY_FAILED"},
        ),  # OpenSSL's code, a code
        (
            "certificate for example.test expires in 5.0 days (minimum 14); chain and name verified",
            "tls_error",
            {"certificate": "validity"},
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: IP address mismatch, certificate is not valid for '127.0.0.1'",
            "tls_error",
            {"certificate": "name", "code": "CERTIFICATE_VERIFY_FAILED"},
        ),
        ("certificate verify failed: unable to get local issuer certificate", "tls_error", {"certificate": "trust"}),
        ("portal presented a self-signed certificate after the ingress lost its secret", "tls_error", {"certificate": "trust"}),
        ("the certificate had expired, and it did not match the host name either", "tls_error", {}),  # two: none
        ("the certificate had run out over the weekend", "tls_error", {}),  # a paraphrase: compared by meaning
        (
            "TLS handshake failures: the leaf certificate's notAfter date had passed",
            "tls_error",
            {"certificate": "validity"},
        ),  # every certificate failure fails the handshake: the word is no kind
        ("sslv3 alert handshake failure: no shared cipher", "tls_error", {"certificate": "handshake"}),
        ("billing.corp.test does not exist (NXDOMAIN from 127.0.0.1)", "dns_failure", {"rcode": "NXDOMAIN"}),
        ("the server 10.0.0.2 could not answer for shop.corp.test (SERVFAIL)", "dns_failure", {"rcode": "SERVFAIL"}),
        (
            "partner-gw answered 401 invalid_token: the probe's token was signed with a retired key",
            "client_error",
            {"status": "401", "oauth": "invalid_token"},
        ),
        ("geo answered 429 after release v4.404.1 on port :443", "client_error", {"status": "429"}),
        ("the certificate has expired", "server_error", {}),  # kinds are stated under their own cause only
        ("health: storage probe failed: write /srv/uploads/.probe: no space left on device", "server_error", {"errno": "ENOSPC"}),
        ("connect() to unix:/run/php/php8.2-fpm.sock failed (11: Resource temporarily unavailable)", "server_error", {"errno": "EAGAIN"}),
        ("open /data/x: EACCES (Permission denied)", "job_failed", {"errno": "EACCES"}),  # a name and its message
        ("the volume was full, not a permission problem", "server_error", {}),  # no errno's words: by meaning
        ("clients failed verification: the installed file lacked the intermediate certificate", "tls_error", {"certificate": "trust"}),
        ("certbot renewals had been failing for a month", "tls_error", {"certificate": "validity"}),
        ("После релиза сервис отвечал 500 на все запросы", "server_error", {"status": "500"}),
        ("checkout answered 503: the payment gateway was down", "server_error", {"status": "503"}),
        ("max_connections (500) was reached; MemoryMax=512M; p99 500 ms", "server_error", {}),  # values, not statuses
        ("api answered 500, then 503 while it restarted", "server_error", {}),  # two: none
        ("5 percent of lookups for the API name got no answer within the deadline", "dns_failure", {"rcode": "no answer"}),
        ("OSError: [Errno 116] Stale file handle: '/mnt/media/thumbnails'", "server_error", {"errno": "ESTALE", "exception": "OSError"}),
        # the resolvers' own words: Go's for a failed lookup, Node's getaddrinfo code for a name that does not exist
        ("dial tcp: lookup login.example.com on 10.96.0.10:53: server misbehaving", "server_error", {"errno": "EAI_FAIL"}),
        ("getaddrinfo ENOTFOUND redis-sessions.cache.internal", "server_error", {"errno": "EAI_NONAME"}),
        ("dial tcp 20.190.160.67:443: i/o timeout", "server_error", {"errno": "ETIMEDOUT"}),
        ("rpc error: code = Unavailable desc = connection error", "server_error", {"grpc": "Unavailable"}),
        ("the stream ended with DEADLINE_EXCEEDED after 5 s", "timeout", {"grpc": "DeadlineExceeded"}),
        ("the service was unavailable for an hour", "server_error", {}),  # a word, not a gRPC code
        (
            "sqlalchemy.exc.ProgrammingError: (psycopg2.errors.UndefinedColumn) column x does not exist",
            "server_error",
            {"exception": "ProgrammingError"},
        ),
        ("HTTPError, then ValueError; Error: boom", "server_error", {"exception": "HTTPError,ValueError"}),
        ("partner-gateway probe getting 403.", "client_error", {"status": "403"}),  # a code ends a sentence
        ("the origin answered 502. Users saw errors", "server_error", {"status": "502"}),
        ("upgraded the client to 403.5 and 502.1", "client_error", {}),  # versions, not codes
        ('{"apns":"fail: 403 InvalidProviderToken"}', "server_error", {"code": "InvalidProviderToken"}),
        ('{"extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}', "client_error", {"code": "GRAPHQL_VALIDATION_FAILED"}),
        ("CloudFront and HikariPool were fine; DEADLINE_EXCEEDED", "server_error", {"grpc": "DeadlineExceeded"}),
        # a denied term states nothing (unseen-lang-ko-tls-expired: an OCSP incident that says so agreed on the expiry)
        ("the OCSP staple was stale; the certificate itself was valid and not expired", "tls_error", {}),
        ("it had not been renewed, so it expired on Sunday", "tls_error", {"certificate": "validity"}),
        ("x509: certificate is not yet valid", "tls_error", {"certificate": "validity"}),
        ("the certificate was installed without the intermediate", "tls_error", {"certificate": "trust"}),  # missing: stated
        # RFC 6125 matches the name against the subjectAltName (unseen-paraphrase-tls-missing-san: read as a renewal)
        ("after the renewal the www. name was missing from its subject alternative names", "tls_error", {"certificate": "name"}),
    ],
)
def test_a_text_states_a_kind_in_its_protocols_words(text: str, cause: str, expected: dict[str, str]) -> None:
    assert kinds.of(text, cause) == expected


def test_a_measured_status_outranks_one_written_and_differs_names_both() -> None:
    here = kinds.of('{"error":"invalid_client"}', "client_error", 401)
    there = kinds.of("api answered 403 invalid_token", "client_error")
    assert here == {"status": "401", "oauth": "invalid_client"}
    assert kinds.differs(here, there) == "oauth invalid_token, here invalid_client; status 403, here 401"
    assert kinds.differs(here, {"status": "401"}) == ""


def test_a_renewal_is_not_the_fix_for_a_certificate_issued_to_another_name() -> None:
    evidence = recall.Evidence(
        "intranet", reading="tls_error", error="tls", detail="[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch"
    )
    expired = {
        "id": 1,
        "target": "intranet",
        "root_cause": "tls_error",
        "status": "resolved",
        "diagnosis": "intranet's certificate had expired",
        "resolution": "forced renewal with cmctl renew",
    }
    found = recall.candidate(as_incident(expired), evidence, 0.89, 0.2, ["own"])
    assert found.differs == "certificate validity, here name" and not recall.applicable(found, evidence)
    assert recall.choose([found], evidence) is None
    renamed = recall.candidate(as_incident({**expired, "diagnosis": "intranet's certificate had run out"}), evidence, 0.85, 0.1, ["own"])
    assert recall.choose([found, renamed], evidence) == renamed  # stated in other words: open, by meaning


def test_another_kind_is_shown_to_the_model_and_parses_back(store: Store) -> None:
    evidence = recall.Evidence(
        "shop", reading="dns_failure", error="dns_servfail", detail="the server 127.0.0.1 could not answer for shop.corp.test (SERVFAIL)"
    )
    row = {
        "id": 3,
        "target": "shop",
        "root_cause": "dns_failure",
        "status": "resolved",
        "diagnosis": "shop.corp.test answered NXDOMAIN: the record was gone",
        "resolution": "restored the A record",
    }
    found = recall.candidate(as_incident(row), evidence, 0.88, 0.3, ["own"])
    line = found.line()
    assert "another failure: rcode NXDOMAIN, here SERVFAIL" in line
    [parsed], _ = candidates.parse_listing(candidates.listing(candidates.Recalled([found])), "shop")
    assert parsed.differs == found.differs
    assert not recall.applicable(parsed, recall.Evidence("shop", reading="dns_failure"))


def test_the_kind_is_read_again_when_a_recheck_brings_the_answer() -> None:
    """A candidate found on the stored results (status only) is compared again with the re-checked answer."""
    before = recall.Evidence("partner-gw", reading="client_error", status_code=401, error="unexpected_status")
    row = {
        "id": 1,
        "target": "partner-gw",
        "root_cause": "client_error",
        "status": "resolved",
        "diagnosis": "partner-gw answered 401 invalid_token: the probe's token was signed with a retired key id",
        "resolution": "minted a new probe token",
    }
    found = recall.candidate(as_incident(row), before, 0.87, 0.1, ["own"])
    assert found.differs == "" and recall.applicable(found, before)
    after = recall.Evidence(
        "partner-gw",
        reading="client_error",
        status_code=401,
        error="unexpected_status",
        answer='{"error":"invalid_client","error_description":"client secret expired"}',
        rechecked=True,
    )
    assert not recall.applicable(found, after)


@pytest.mark.parametrize(("error", "named"), [("invalid_client", False), ("invalid_token", True)])
def test_an_oauth_error_is_fixed_only_by_its_own_kinds_fix(store: Store, error: str, named: bool) -> None:
    """End to end on the builtin model: both past incidents of the target are client errors. An expired client
    secret (invalid_client) is fixed by neither a new token nor an allow-list; a token error by the new token."""
    body = json.dumps({"error": error, "error_description": "client_id monitor-probe: credentials refused"})
    with Answering(401, body) as web:
        token = past(
            store,
            "partner-gw",
            "client_error",
            "partner-gw answered 401 invalid_token: the probe's token was signed with a retired key id",
            "minted a new probe token with the current key",
        )
        past(
            store,
            "partner-gw",
            "client_error",
            "partner-gw answered 403; the monitor's address was not allowed",
            "added the new egress IP to the allow-list",
        )
        failing(store, "partner-gw", 401, "unexpected_status")
        run = investigate(config(web.base, "partner-gw"), store, "partner-gw")
    assert run.root_cause == "client_error" and run.related_incident == (token if named else None)


# -- a component the target's own health document says passes is not what fails now -----------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            'Content-Type: application/json\n\n{"status":"fail","checks":[{"name":"postgres","status":"pass"},'
            '{"name":"kafka","status":"fail","output":"broker unreachable"}]}',
            {"postgres": True, "kafka": False},
        ),
        (
            '{"status":"DOWN","components":{"db":{"status":"UP"},"redis":{"status":"DOWN","details":{"error":"x"}}}}',
            {"db": True, "redis": False},
        ),
        (
            '{"status":"fail","checks":{"postgres":"ok","redis":"error: READONLY You can\'t write against a read only replica."}}',
            {"postgres": True, "redis": False},
        ),  # a map of verdicts
        ('{"status":"error","message":"ok, retrying"}', {}),  # one string is no map of verdicts
        ('{"status":"fail","checks":[{"name":"postgres","status":"pa', {}),  # cut short: no verdicts
        ("upstream connect error or disconnect/reset before headers", {}),
    ],
)
def test_a_health_document_gives_each_components_verdict(answer: str, expected: dict[str, bool]) -> None:
    assert health.verdicts(answer) == expected


def test_a_past_incident_that_blamed_a_component_passing_now_does_not_apply() -> None:
    answer = '{"status":"fail","checks":[{"name":"postgres","status":"pass"},{"name":"kafka","status":"fail"}]}'
    evidence = recall.Evidence("inventory", reading="bad_content", status_code=200, error="condition_failed", answer=answer, rechecked=True)
    row = {
        "id": 1,
        "target": "inventory",
        "root_cause": "bad_content",
        "status": "resolved",
        "diagnosis": "inventory reported status fail: the postgres check failed on replica lag of 540 s",
        "resolution": "split the bulk import into batches",
    }
    blamed = recall.candidate(as_incident(row), evidence, 0.9, 0.3, ["own"])
    assert blamed.differs == "blames postgres, which passes now" and recall.choose([blamed], evidence) is None
    kafka = recall.candidate(
        as_incident({**row, "id": 2, "diagnosis": "inventory reported fail: kafka and postgres both down"}), evidence, 0.88, 0.3, ["own"]
    )
    assert kafka.differs == "" and recall.choose([blamed, kafka], evidence) == kafka  # it blames one failing now


# -- the operating system's error, a quoted message, a member of a cluster, a listing that fits ---------------


def test_a_full_disk_is_not_the_fix_for_a_file_it_may_not_write() -> None:
    """The errno is read in the summary too: a note may quote the probe there and explain in the diagnosis."""
    evidence = recall.Evidence(
        "media",
        reading="server_error",
        status_code=500,
        error="unexpected_status",
        answer="health: storage probe failed: write /srv/uploads/.probe: no space left on device",
    )
    denied = {
        "id": 2,
        "target": "media",
        "root_cause": "server_error",
        "status": "resolved",
        "summary": "media 500: storage probe failed: write /srv/uploads/.probe: permission denied",
        "diagnosis": "after the move to a non-root user the process could not write its volume",
        "resolution": "chowned the volume to uid 10001",
    }
    full = {
        **denied,
        "id": 1,
        "summary": "3 consecutive failures of media",
        "diagnosis": "the block device behind the uploads reached 100% capacity",
        "resolution": "grew the volume",
    }
    found = [recall.candidate(as_incident(row), evidence, similarity, 0.2, ["own"]) for row, similarity in ((denied, 0.91), (full, 0.85))]
    assert found[0].differs == "errno EACCES, here ENOSPC"
    assert recall.choose(found, evidence) == found[1]


@pytest.mark.parametrize(
    ("answer", "said", "unsaid"),
    [
        ('{"code":503,"message":"no healthy upstream"}', 'The sidecar answered 503 "local_rate_limited" after a policy', True),
        (
            '{"redis":"error: READONLY You can\'t write against a read only replica"}',
            'Health check failed with "MISCONF Redis is configured to save RDB snapshots"',
            True,
        ),
        (
            "connect() to unix:/run/php/php8.2-fpm.sock failed (11: Resource temporarily unavailable)",
            'nginx returned 502 with "connect() to unix:/run/php/php8.2-fpm.sock failed (11: Resource temporarily unavailable)"',
            False,
        ),
        ('{"status":401,"errorType":"security"}', 'Adyen answered 401 with errorType "security" to every call', False),
        ("x509: certificate signed by unknown authority", 'la verifica falliva con "autorità sconosciuta"', False),
        (
            "unhealthy: amqp publish to mq-prod-2.internal:5672 blocked (connection.blocked: low on memory)",
            'The health check showed "amqp dial mq-prod-1.internal:5672: connection refused"',
            True,
        ),  # another node
        (
            '{"db_write":"ERROR 1290 (HY000): The MySQL server is running with the --super-read-only option"}',
            'requests failed with "ERROR 1040 (HY000): Too many connections"',
            True,
        ),  # the same class, not the message
        ("", 'it answered "local_rate_limited"', False),  # no answer now: nothing to compare
        (
            "503 Service Unavailable: feature-flag provider unreachable (flagd.platform.svc:8013: context deadline exceeded)",
            'feed-api answered "503 Service Unavailable: upstream ranking-svc.platform.svc:8080 unreachable"',
            True,
        ),
        ("pg-main.db.internal:5432: connection refused", 'clients logged "pg-main: connection refused"', False),
        ("no healthy upstream", "the sidecar rate-limited every request", False),  # no quote: by meaning
        (
            "upstream connect error or disconnect/reset before headers. reset reason: overflow",
            'Envoy said "upstream connect error or disconnect/reset before headers. reset reason: connection failure"',
            True,
        ),  # the same words but the reason: another failure (a circuit breaker's overflow, not a dead upstream)
        (
            "upstream connect error or disconnect/reset before headers. reset reason: overflow",
            'Envoy said "disconnect/reset before headers. reset reason: overflow"',
            False,
        ),
        (
            '{"status":"error","component":"postgres","detail":"FATAL: sorry, too many clients already"}',
            'invoicing-api 500: "ERROR: too many connections for role \\"invoicing_ro\\""',
            True,
        ),  # half: a role's cap
    ],
)
def test_a_quoted_message_the_target_does_not_say_now_is_another_failure(answer: str, said: str, unsaid: bool) -> None:
    assert bool(quotes.unsaid(answer, said)) is unsaid


def answering(target: str, status: int, answer: str) -> recall.Evidence:
    """The evidence of a server error whose re-check brought ``answer``."""
    return recall.Evidence(target, reading="server_error", status_code=status, error="unexpected_status", answer=answer)


def server_error(number: int, target: str, diagnosis: str, resolution: str) -> dict[str, object]:
    """A resolved past server error, as the store returns it."""
    return {
        "id": number,
        "target": target,
        "root_cause": "server_error",
        "status": "resolved",
        "diagnosis": diagnosis,
        "resolution": resolution,
    }


def test_a_quote_rules_a_past_incident_out_and_the_line_parses_back() -> None:
    evidence = answering("reviews", 503, '{"code":503,"message":"no healthy upstream","cluster":"ratings-v2"}')
    row = server_error(
        3, "reviews", 'The sidecar answered 503 "local_rate_limited": a mesh policy set a 10 rps bucket', "raised the bucket"
    )
    found = recall.candidate(as_incident(row), evidence, 0.86, 0.04, ["own"])
    assert found.differs == "quotes 'local_rate_limited', which the target does not say now"
    assert recall.choose([found], evidence) is None
    [parsed], _ = candidates.parse_listing(candidates.listing(candidates.Recalled([found])), "reviews")
    assert parsed.differs == found.differs


def test_a_numbered_member_names_its_cluster() -> None:
    assert components.canonical("mq-prod-2.internal:5672") == "mq-prod"
    assert components.named_in("RabbitMQ node mq-prod-2 hit its memory watermark", ["mq-prod"]) == "mq-prod"
    assert components.named_in("pg-main-replica lagged", ["pg-main"]) is None
    trace = "java.lang.OutOfMemoryError at com.shop.catalog.cache.PriceCache.load via flagd.platform:8013"
    assert components.written(trace) == ["flagd.platform"]  # a code's package path is no component


def test_every_candidate_fits_the_observation_working_memory_keeps() -> None:
    """Five candidates with long notes were cut at max_observation (1,500 characters): the fourth and fifth
    lost their fix or vanished, so neither the builtin model nor a model could name them."""
    evidence = recall.Evidence("shop", reading="tls_error", error="cert_expired", detail="certificate has expired")
    rows = [
        {
            "id": n,
            "target": "shop",
            "root_cause": "tls_error",
            "status": "resolved",
            "diagnosis": f"incident {n}: " + "the certificate chain was long and the note longer " * 8,
            "resolution": f"fix {n}: " + "renewed and redeployed the certificate everywhere " * 8,
        }
        for n in range(1, 6)
    ]
    found = candidates.Recalled(
        [recall.candidate(as_incident(row), evidence, 0.9 - n / 100, 0.1, ["own"]) for n, row in enumerate(rows)], "hybrid", "", 0.78
    )
    text = candidates.listing(found, budget=1500)
    assert len(text) <= 1500
    parsed, floor = candidates.parse_listing(text, "shop")
    assert [c.id for c in parsed] == [1, 2, 3, 4, 5] and floor == 0.78
    assert all(c.fix and c.fix.startswith(f"fix {c.id}") for c in parsed)
    assert len(candidates.listing(found)) > 1500  # without a budget, the lines are as long as before


def test_another_target_sharing_the_component_is_not_held_to_this_targets_status_or_words() -> None:
    """portal answers 503 when the shared SSO is down; grafana answered 500 and its own message then: its fix
    applies all the same. On portal's own past, the same status and words would rule it out."""
    evidence = answering("portal", 503, '{"error":"failed to refresh signing keys from https://sso.corp.test: 503"}')
    row = server_error(
        2, "grafana", 'grafana answered 500 "oauth token exchange failed" while sso.corp.test was down', "restarted the SSO cluster"
    )
    other = recall.candidate(as_incident(row), evidence, 0.88, 0.2, ["component"])
    assert other.differs == "" and recall.applicable(other, evidence)
    own = recall.candidate(as_incident({**row, "target": "portal"}), evidence, 0.88, 0.2, ["own"])
    assert own.differs.startswith("status 500, here 503") and not recall.applicable(own, evidence)


def test_an_exception_class_this_target_does_not_raise_now_is_another_failure() -> None:
    evidence = answering(
        "reports", 500, "sqlalchemy.exc.ProgrammingError: (psycopg2.errors.UndefinedColumn) column invoices.tax_region does not exist"
    )
    division = recall.candidate(
        as_incident(server_error(3, "reports", "ZeroDivisionError in monthly_margin with no revenue yet", "guarded the division")),
        evidence,
        0.85,
        0.03,
        ["own"],
    )
    programming = recall.candidate(
        as_incident(server_error(4, "reports", "ProgrammingError after a column was renamed", "ran the migration")),
        evidence,
        0.84,
        0.05,
        ["own"],
    )
    assert division.differs == "exception ZeroDivisionError, here ProgrammingError"
    assert programming.differs == "" and recall.choose([division, programming], evidence) == programming
    elsewhere = recall.candidate(
        as_incident(server_error(5, "billing", "ZeroDivisionError in monthly_margin", "guarded it")), evidence, 0.85, 0.03, ["component"]
    )
    assert elsewhere.differs == ""  # another target's code raises its own classes


def test_a_component_named_only_in_a_fix_is_not_shared_with_the_failure() -> None:
    """cards-auth-api's past incident was hsm-a gone, fixed by moving to hsm-b; now hsm-b is unreachable. The
    fix names hsm-b, the failure did not: before, the candidate was marked as naming the failing component."""
    evidence = answering(
        "cards-auth-api", 500, '{"error":"HSM unreachable: connect to hsm-b.vault.dc2.internal:1500 timed out after 3000ms"}'
    )
    moved = server_error(
        2, "cards-auth-api", "hsm-a.vault.dc1.internal was decommissioned in the move", "pointed the config at hsm-b.vault.dc2.internal"
    )
    named = server_error(3, "cards-auth-api", "hsm-b.vault.dc2.internal lost power", "power restored")
    assert recall.candidate(as_incident(moved), evidence, 0.85, 0.1, ["own"]).shared == ()
    assert recall.candidate(as_incident(named), evidence, 0.85, 0.1, ["own"]).shared == ("hsm-b",)


def test_a_past_failure_that_gives_a_field_another_value_is_another_failure() -> None:
    """checkout-api answers Envoy's 503 for the upstream cluster stock-hold-svc; its past incident whose summary
    wrote the same message for promo-engine (unquoted) was named before, over the one about stock-hold-svc."""
    evidence = answering(
        "checkout-api",
        503,
        "upstream connect error or disconnect/reset before headers. reset reason: connection failure (upstream cluster: stock-hold-svc)",
    )
    promo = server_error(
        2,
        "checkout-api",
        "checkout-api 503: upstream connect error or disconnect/reset before headers (upstream cluster: promo-engine)",
        "raised its memory limit",
    )
    stock = server_error(
        4, "checkout-api", "the stock reservation service could not be reached: its listener died", "restarted stock-hold-svc"
    )
    found = [
        recall.candidate(as_incident(promo), evidence, 0.90, 0.4, ["own"]),
        recall.candidate(as_incident(stock), evidence, 0.87, 0.0, ["own"]),
    ]
    assert found[0].differs == "gives upstream cluster 'promo-engine', here 'stock-hold-svc'"
    assert recall.choose(found, evidence) == found[1]
    line = candidates.listing(Recalled(found, "hybrid"))
    assert [c.differs for c in candidates.parse_listing(line, "checkout-api")[0]] == [found[0].differs, ""]


@pytest.mark.parametrize(
    ("answer", "diagnosis"),
    [
        (
            '{"status":"degraded","checks":{"apns":"fail: 403 InvalidProviderToken"}}',
            "apns check: 403 ExpiredProviderToken; the provider JWT was cached for longer than an hour",
        ),
        (
            '{"errors":[{"message":"Cannot query field on type Query","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}',
            'responses were {"errors":[{"extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]} until clients re-registered',
        ),
    ],
)
def test_another_error_code_of_the_same_target_is_another_failure(answer: str, diagnosis: str) -> None:
    """Before, a code in CamelCase or UPPER_SNAKE stated nothing, and the past incident applied by meaning."""
    evidence = answering("api", 503, answer)
    past = recall.candidate(as_incident(server_error(4, "api", diagnosis, "fixed")), evidence, 0.87, 0.1, ["own"])
    assert past.differs.startswith("code ") and not recall.applicable(past, evidence)
    elsewhere = recall.candidate(as_incident(server_error(5, "web", diagnosis, "fixed")), evidence, 0.87, 0.1, ["own"])
    assert "code" not in elsewhere.differs  # another target writes its own codes


def test_a_past_failure_at_another_endpoint_is_another_failure() -> None:
    """The HSM at hsm-b:1500 times out; a past incident that timed out connecting to fraud-score:8443, told in the
    same words, applied before. One that names the same host still applies."""
    evidence = answering(
        "cards-auth-api", 500, '{"error":"HSM unreachable: connect to hsm-b.vault.dc2.internal:1500 timed out after 3000ms"}'
    )
    fraud = server_error(
        4,
        "cards-auth-api",
        "cards-auth-api 500: connect to fraud-score.internal:8443 timed out after 3000ms",
        "enabled the rules-only fallback",
    )
    found = recall.candidate(as_incident(fraud), evidence, 0.87, 0.3, ["own"])
    assert found.differs == "failed at fraud-score.internal, here hsm-b.vault.dc2.internal" and not recall.applicable(found, evidence)
    same = server_error(5, "cards-auth-api", "connect to hsm-b.vault.dc2.internal:1500 refused after a reboot", "ok")
    assert recall.applicable(recall.candidate(as_incident(same), evidence, 0.87, 0.3, ["own"]), evidence)
    assert components.elsewhere("client 10.1.2.3:51234 asked; upstream pg-main:5432 refused", "pg-main:5432 down") == ""
