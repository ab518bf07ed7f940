"""Review of the recall rules added after 25a9f4c (fields, codes, endpoints): the right past incident stays
applicable when its text differs from the answer only by what does not tell failures apart."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from past import as_incident
from test_kinds import answering, server_error

from monitor.memory import components, kinds, quotes, recall


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # a date (RFC 9110's Retry-After as an HTTP-date): the day it was written is no other failure
        (
            "HTTP 503\nRetry-After: Tue, 14 May 2024 12:30:45 GMT\n\nmaintenance",
            "HTTP 503\nRetry-After: Mon, 13 May 2024 09:00:00 GMT\n\nmaintenance",
        ),
        ("upstream timed out (elapsed: 950 ms)", "upstream timed out (elapsed: 1.2 seconds)"),  # a duration
        ("status: degraded\nuptime: 3 days\ndb: down", "status: degraded\nuptime: 12 hours\ndb: down"),
        # an id is letters and digits: its letters are no words ("bf", "da" against "fa", "de")
        (
            "reset reason: overflow, request_id=4bf92f3577b34da6a3ce929d0e0e4736",
            "reset reason: overflow, request_id=9c1d3e4fa7b2c1d0e9f8a7b6c5d4e3f2",
        ),
        ("upstream: fe80::1 refused", "upstream: fd00::5 refused"),
        # a note that translates the value (accents: not the software's words) does not contradict it
        ("reset reason: overflow", "Le proxy renvoyait\nreset reason: débordement de la file"),
    ],
)
def test_a_field_whose_value_differs_only_by_time_id_or_language_is_no_other_failure(answer: str, said: str) -> None:
    assert quotes.contradicted(answer, said) == ""


def test_a_field_with_another_value_in_words_still_contradicts() -> None:
    assert quotes.contradicted("reset reason: overflow", "reset reason: connection failure") != ""
    assert quotes.contradicted("job state=FAILED", "job state=STOPPED") != ""


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # the short name and the cluster-local name of one service
        ("upstream orders.shop.svc.cluster.local:8080 connection refused", "orders:8080 connection refused"),
        # the name and the address it resolved to: not comparable, one may be the other
        ("Connection to 10.0.4.12:8443 timed out (connect timeout=5)", "connect to fraud-score:8443 timed out"),
        # Redis INFO's fields are no endpoints (a host name holds no underscore, RFC 1123)
        (
            "redis-cache:6379 OOM command not allowed when used memory > 'maxmemory'",
            "OOM command not allowed\n# Clients\r\nconnected_clients:1203\r\nblocked_clients:0\r\n",
        ),
    ],
)
def test_the_same_endpoint_written_otherwise_is_not_elsewhere(answer: str, said: str) -> None:
    assert components.elsewhere(answer, said) == ""


def test_another_endpoint_is_still_elsewhere() -> None:
    assert components.elsewhere("connect to hsm-b.vault.dc2.internal:1500 timed out", "connect to fraud-score.internal:8443 timed out") == (
        "failed at fraud-score.internal, here hsm-b.vault.dc2.internal"
    )
    assert components.elsewhere("connect to 10.0.4.12:8443 timed out", "10.0.4.99:8443 timed out") != ""


def test_a_class_in_a_stack_frame_is_no_error_code() -> None:
    """The same exception with the same message: the frame the answer's trace shows first is no code the target
    writes, and the past incident that named another class of the same code path applies."""
    evidence = answering(
        "pricing",
        500,
        "java.lang.IllegalStateException: promo rules not loaded\n\tat com.shop.pricing.PromoRuleCache.get(PromoRuleCache.java:51)",
    )
    past = server_error(
        3, "pricing", "IllegalStateException: promo rules not loaded; the PromoRuleLoader job failed at startup", "re-ran the loader"
    )
    found = recall.candidate(as_incident(past), evidence, 0.9, 0.4, ["own"])
    assert found.differs == "" and recall.applicable(found, evidence)
    assert kinds.of("apns: 403 InvalidProviderToken.", "client_error")["code"] == "InvalidProviderToken"


@pytest.mark.parametrize(
    "body", ["a " * 32000, ("x" * 31 + " ") * 2000, "Abc" * 20000 + "_", "ab:" * 21000, "reset reason=" * 5000, "a" + " " * 60000 + "b:"]
)
def test_the_rules_read_a_64_kb_body_in_linear_time(body: str) -> None:
    started = time.perf_counter()
    quotes.contradicted(body, body)
    kinds.of(body, "server_error")
    components.elsewhere(body, body)
    assert time.perf_counter() - started < 2.0


def test_a_header_a_setting_an_errno_and_a_plain_field_state_no_failure() -> None:
    """An error page served by nginx before and by Envoy now is compared by what it says, not by its headers; a
    setting (DB_POOL_SIZE=10) and an errno's name are no error codes; latency:2500 is no endpoint."""
    before = "Content-Type: text/html\nServer: nginx\n\n<p>reset reason: overflow</p>"
    now = 'Content-Type: application/json\nServer: envoy\n\n{"error":"reset reason: overflow"}'
    assert quotes.contradicted(now, before) == ""
    assert kinds.of("DB_POOL_SIZE=10 was too low; EAI_AGAIN from the resolver", "server_error").get("code") is None
    assert components.elsewhere("redis-cache:6379 OOM command not allowed", "p99 latency:2500 on the cache") == ""


def test_an_error_type_in_snake_case_is_an_exception_class() -> None:
    """Stripe's invalid_request_error is not its api_connection_error: before, a past incident naming the other
    type applied by meaning, and it was named over the one about the rotated key."""
    evidence = answering(
        "checkout", 502, '{"error":"payment_provider_error","message":"Invalid API Key provided","type":"invalid_request_error"}'
    )
    outage = recall.candidate(
        as_incident(server_error(2, "checkout", "api_connection_error from stripe-go: their outage", "waited")),
        evidence,
        0.86,
        0.1,
        ["own"],
    )
    assert outage.differs.startswith("exception api_connection_error") and not recall.applicable(outage, evidence)
    assert kinds.of("cluster_block_exception on products_v7", "server_error") == {"exception": "cluster_block_exception"}


def test_a_bracketed_value_is_a_fields_value() -> None:
    """Elasticsearch's "blocked by: [FORBIDDEN/8/index write (api)]" is not its flood-stage block: the value in
    brackets was not read before, and the write-block incident was named for a full disk."""
    now = (
        '{"reason":"index [products_v7] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage '
        'watermark, index has read-only-allow-delete block];"}'
    )
    before = 'failed with "cluster_block_exception: index [products_v7] blocked by: [FORBIDDEN/8/index write (api)]"'
    assert quotes.contradicted(now, before).startswith("gives blocked by 'FORBIDDEN/8/index write")


@pytest.mark.parametrize(
    ("text", "rcode"),
    [
        ("The A record answered 10.40.9.9, the address of the decommissioned ledger VIP", "wrong answer"),
        ("api resolves to wrong IP 10.20.0.99 after the failover", "wrong answer"),
        ("the A answers lack 10.0.0.5", "wrong answer"),  # what the DNS check says of a wrong answer
        ("SERVFAIL from resolver 10.0.0.2", "SERVFAIL"),  # the resolver's address is no answer
        ("answered NXDOMAIN, then answered 10.0.0.9 from the stale cache", None),  # two kinds: none
    ],
)
def test_a_name_that_answered_a_wrong_address_is_its_own_dns_failure(text: str, rcode: str | None) -> None:
    """A record that answers the old address (NOERROR) is not a name gone (NXDOMAIN): before, the note stated no
    kind and its fix (update the record) was named for a deleted zone."""
    assert kinds.of(text, "dns_failure").get("rcode") == rcode
    evidence = recall.Evidence(
        "ledger-dns", reading="dns_failure", error="dns_nxdomain", detail="ledger.pay.example.com does not exist (NXDOMAIN from 10.0.0.2)"
    )
    moved = {
        "id": 2,
        "target": "ledger-dns",
        "root_cause": "dns_failure",
        "status": "resolved",
        "diagnosis": "The A record answered 10.40.9.9, the old VIP",
        "resolution": "updated the record",
    }
    assert not recall.applicable(recall.candidate(as_incident(moved), evidence, 0.86, 0.1, ["own"]), evidence)


def test_the_same_service_in_another_region_is_another_endpoint() -> None:
    """inventory-svc in eu-west-1 times out now; the past incident was its us-east-1 twin in an AZ outage: both read
    as the one component inventory-svc before, so the other region's fix applied."""
    now = '{"error":"gateway timeout","upstream":"inventory-svc.eu-west-1.internal:8080"}'
    assert components.elsewhere(now, "upstream inventory-svc.us-east-1.internal:8080 had no healthy instance") == (
        "failed at inventory-svc.us-east-1.internal, here inventory-svc.eu-west-1.internal"
    )
    assert components.elsewhere("kafka-main-2.kafka.svc:9092 refused", "kafka-main-0.kafka.svc:9092 refused") == ""
    assert components.elsewhere("orders.shop.svc.cluster.local:8080 refused", "orders:8080 refused") == ""


def test_a_key_that_holds_an_error_is_no_error_type() -> None:
    """Keycloak's health document holds "last_error": its key was read as an exception class of that name."""
    assert kinds.of('{"name":"Infinispan cluster view","data":{"last_error":"timeout"},"type":"api_connection_error"}', "server_error") == {
        "exception": "api_connection_error"
    }


def test_a_message_quoted_in_single_quotes_that_the_target_does_not_say_rules_the_incident_out() -> None:
    """A note quotes a message in single quotes as often as in double ones; an apostrophe inside a word is none."""
    evidence = answering("maps", 403, '{"status":"REQUEST_DENIED","error_message":"This API project is not authorized to use this API."}')
    row = server_error(
        4, "maps", "error_message: 'The provided API key is expired.' The key's rotation job had stopped.", "rotated the key"
    )
    row["root_cause"] = "client_error"
    found = recall.candidate(as_incident(row), replace(evidence, reading="client_error"), 0.88, 0.1, ["own"])
    assert found.differs == "quotes 'The provided API key is expired.', which the target does not say now"
    assert quotes.quotes("the team's 'can't reach the vault' alert and the pods' config") == ["can't reach the vault"]


def test_a_server_error_filed_on_a_tcp_target_applies_to_its_unexpected_reply() -> None:
    """A TCP check has no status: the service's own error is a reply that is not the one expected, read as
    bad_content; the past incident filed as server_error is the same failure."""
    evidence = recall.Evidence(
        "zk", reading="bad_content", error="tcp_unexpected_reply", answer="This ZooKeeper instance is not currently serving requests"
    )
    row = server_error(
        3, "zk", "Two of three members were evicted at once; no quorum, the last one declined client work.", "added a PodDisruptionBudget"
    )
    found = recall.candidate(as_incident(row), evidence, 0.86, 0.05, ["own"])
    assert recall.choose([found], evidence) == found
    timeout = recall.candidate(as_incident({**row, "root_cause": "timeout"}), evidence, 0.86, 0.05, ["own"])
    assert recall.choose([timeout], evidence) is None


def test_smtp_enhanced_codes_of_another_subject_are_another_failure() -> None:
    """RFC 3463: X.7 (policy: too many connections) is not X.3 (the mail system: its spool is full); 4.3.1 and
    4.3.2 are one subject, and a version number is no code."""
    evidence = recall.Evidence(
        "mx",
        reading="bad_content",
        error="tcp_unexpected_reply",
        answer="421 4.7.0 mx1.example.net Error: too many connections from 10.2.0.7",
    )
    spool = server_error(
        2, "mx", "The spool filled up; postfix answered 452 4.3.1 Insufficient system storage.", "purged the deferred queue"
    )
    assert recall.candidate(as_incident(spool), evidence, 0.86, 0.05, ["own"]).differs == "smtp X.3, here X.7"
    assert kinds.of("421 4.3.2 queue file write error", None)["smtp"] == kinds.of("452 4.3.1 full", None)["smtp"]
    assert "smtp" not in kinds.of("after the upgrade to postfix 3.6.1", None)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # a renewal told as the context of a chain's failure states the chain, not the validity
        ("After the manual renewal only the leaf was installed; the intermediate was missing from the bundle.", "trust"),
        ("certbot's renewal timer was disabled after the migration", "validity"),  # a renewal and nothing else
        # RFC 8446's handshake_failure alert (40): the two sides shared no protocol or cipher
        ("TLS handshake failure (alert 40) from the probe: the LB policy is TLS 1.3-only", "handshake"),
        # Go's x509 HostnameError quoted in a German note: the name, in words that hold no name term
        ('Clients meldeten "x509: certificate is valid for *.elb.amazonaws.com, not pay.example.com".', "name"),
    ],
)
def test_a_certificates_kind_is_read_from_what_the_note_states_first(text: str, kind: str) -> None:
    assert kinds.of(text, "tls_error") == {"certificate": kind}


def test_a_fields_value_ends_with_its_sentence() -> None:
    """A note's "Envoy: ..." swallowed the sentence after it, and with it the field that told the two apart."""
    said = "Envoy: 'upstream connect error or disconnect/reset before headers. reset reason: connection failure'"
    answer = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
    assert quotes.contradicted(answer, said) == "gives reset reason 'connection failure', here 'overflow'"
    assert quotes.fields("primary: db-one.example. state: FAILED") == {"primary": {"db", "one", "example"}, "state": {"failed"}}
