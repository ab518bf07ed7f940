"""The kind of a failure within its root cause (issue 18: no fix named for another failure of the same label).

A past incident on the same target under the same root cause was named as the fix whenever it read alike:
an expired certificate's renewal for a certificate issued to another name, a JWKS key rotation for an
expired OAuth client secret. Its kind, stated in the protocol's own words, now rules it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from test_recall import Answering, config, failing, investigate, past

from monitor.memory import health, kinds, recall
from monitor.store import Store


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    store = Store(db_path)
    yield store
    store.close()


@pytest.mark.parametrize(("text", "cause", "expected"), [
    ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)",
     "tls_error", {"certificate": "validity"}),
    ("certificate for example.test expires in 5.0 days (minimum 14); chain and name verified", "tls_error",
     {"certificate": "validity"}),
    ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: IP address mismatch, certificate is not valid "
     "for '127.0.0.1'", "tls_error", {"certificate": "name"}),
    ("certificate verify failed: unable to get local issuer certificate", "tls_error", {"certificate": "trust"}),
    ("portal presented a self-signed certificate after the ingress lost its secret", "tls_error",
     {"certificate": "trust"}),
    ("the certificate had expired, and it did not match the host name either", "tls_error", {}),  # two: none
    ("the certificate had run out over the weekend", "tls_error", {}),  # a paraphrase: compared by meaning
    ("billing.corp.test does not exist (NXDOMAIN from 127.0.0.1)", "dns_failure", {"rcode": "NXDOMAIN"}),
    ("the server 10.0.0.2 could not answer for shop.corp.test (SERVFAIL)", "dns_failure", {"rcode": "SERVFAIL"}),
    ('partner-gw answered 401 invalid_token: the probe\'s token was signed with a retired key', "client_error",
     {"status": "401", "oauth": "invalid_token"}),
    ("geo answered 429 after release v4.404.1 on port :443", "client_error", {"status": "429"}),
    ("the certificate has expired", "server_error", {}),  # kinds are stated under their own cause only
])
def test_a_text_states_a_kind_in_its_protocols_words(text: str, cause: str, expected: dict[str, str]) -> None:
    assert kinds.of(text, cause) == expected


def test_a_measured_status_outranks_one_written_and_differs_names_both() -> None:
    here = kinds.of('{"error":"invalid_client"}', "client_error", 401)
    there = kinds.of("api answered 403 invalid_token", "client_error")
    assert here == {"status": "401", "oauth": "invalid_client"}
    assert kinds.differs(here, there) == "oauth invalid_token, here invalid_client; status 403, here 401"
    assert kinds.differs(here, {"status": "401"}) == ""


def test_a_renewal_is_not_the_fix_for_a_certificate_issued_to_another_name() -> None:
    evidence = recall.Evidence("intranet", reading="tls_error", error="tls",
                               detail="[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch")
    expired = {"id": 1, "target": "intranet", "root_cause": "tls_error", "status": "resolved",
               "diagnosis": "intranet's certificate had expired", "resolution": "forced renewal with cmctl renew"}
    found = recall.candidate(expired, evidence, 0.89, 0.2, ["own"])
    assert found.differs == "certificate validity, here name" and not recall.applicable(found, evidence)
    assert recall.choose([found], evidence) is None
    renamed = recall.candidate({**expired, "diagnosis": "intranet's certificate had run out"}, evidence, 0.85, 0.1,
                               ["own"])
    assert recall.choose([found, renamed], evidence) == renamed  # stated in other words: open, by meaning


def test_another_kind_is_shown_to_the_model_and_parses_back(store: Store) -> None:
    evidence = recall.Evidence("shop", reading="dns_failure", error="dns_servfail",
                               detail="the server 127.0.0.1 could not answer for shop.corp.test (SERVFAIL)")
    row = {"id": 3, "target": "shop", "root_cause": "dns_failure", "status": "resolved",
           "diagnosis": "shop.corp.test answered NXDOMAIN: the record was gone", "resolution": "restored the A record"}
    found = recall.candidate(row, evidence, 0.88, 0.3, ["own"])
    line = found.line()
    assert "another failure: rcode NXDOMAIN, here SERVFAIL" in line
    [parsed], _ = recall.parse_listing(recall.listing(recall.Recalled([found])), "shop")
    assert parsed.differs == found.differs
    assert not recall.applicable(parsed, recall.Evidence("shop", reading="dns_failure"))


def test_the_kind_is_read_again_when_a_recheck_brings_the_answer() -> None:
    """A candidate found on the stored results (status only) is compared again with the re-checked answer."""
    before = recall.Evidence("partner-gw", reading="client_error", status_code=401, error="unexpected_status")
    row = {"id": 1, "target": "partner-gw", "root_cause": "client_error", "status": "resolved",
           "diagnosis": "partner-gw answered 401 invalid_token: the probe's token was signed with a retired key id",
           "resolution": "minted a new probe token"}
    found = recall.candidate(row, before, 0.87, 0.1, ["own"])
    assert found.differs == "" and recall.applicable(found, before)
    after = recall.Evidence("partner-gw", reading="client_error", status_code=401, error="unexpected_status",
                            answer='{"error":"invalid_client","error_description":"client secret expired"}',
                            rechecked=True)
    assert not recall.applicable(found, after)


@pytest.mark.parametrize(("error", "named"), [("invalid_client", False), ("invalid_token", True)])
def test_an_oauth_error_is_fixed_only_by_its_own_kinds_fix(store: Store, error: str, named: bool) -> None:
    """End to end on the builtin model: both past incidents of the target are client errors. An expired client
    secret (invalid_client) is fixed by neither a new token nor an allow-list; a token error by the new token."""
    body = json.dumps({"error": error, "error_description": "client_id monitor-probe: credentials refused"})
    with Answering(401, body) as web:
        token = past(store, "partner-gw", "client_error",
                     "partner-gw answered 401 invalid_token: the probe's token was signed with a retired key id",
                     "minted a new probe token with the current key")
        past(store, "partner-gw", "client_error", "partner-gw answered 403; the monitor's address was not allowed",
             "added the new egress IP to the allow-list")
        failing(store, "partner-gw", 401, "unexpected_status")
        run = investigate(config(web.base, "partner-gw"), store, "partner-gw")
    assert run["root_cause"] == "client_error" and run["related_incident"] == (token if named else None)


# -- a component the target's own health document says passes is not what fails now -----------------------


@pytest.mark.parametrize(("answer", "expected"), [
    ('Content-Type: application/json\n\n{"status":"fail","checks":[{"name":"postgres","status":"pass"},'
     '{"name":"kafka","status":"fail","output":"broker unreachable"}]}', {"postgres": True, "kafka": False}),
    ('{"status":"DOWN","components":{"db":{"status":"UP"},"redis":{"status":"DOWN","details":{"error":"x"}}}}',
     {"db": True, "redis": False}),
    ('{"status":"fail","checks":[{"name":"postgres","status":"pa', {}),  # cut short: no verdicts
    ("upstream connect error or disconnect/reset before headers", {}),
])
def test_a_health_document_gives_each_components_verdict(answer: str, expected: dict[str, bool]) -> None:
    assert health.verdicts(answer) == expected


def test_a_past_incident_that_blamed_a_component_passing_now_does_not_apply() -> None:
    answer = '{"status":"fail","checks":[{"name":"postgres","status":"pass"},{"name":"kafka","status":"fail"}]}'
    evidence = recall.Evidence("inventory", reading="bad_content", status_code=200, error="condition_failed",
                               answer=answer, rechecked=True)
    row = {"id": 1, "target": "inventory", "root_cause": "bad_content", "status": "resolved",
           "diagnosis": "inventory reported status fail: the postgres check failed on replica lag of 540 s",
           "resolution": "split the bulk import into batches"}
    blamed = recall.candidate(row, evidence, 0.9, 0.3, ["own"])
    assert blamed.differs == "blames postgres, which passes now" and recall.choose([blamed], evidence) is None
    kafka = recall.candidate({**row, "id": 2, "diagnosis": "inventory reported fail: kafka and postgres both down"},
                             evidence, 0.88, 0.3, ["own"])
    assert kafka.differs == "" and recall.choose([blamed, kafka], evidence) == kafka  # it blames one failing now
