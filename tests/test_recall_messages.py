"""Another message behind the same prefix is another failure, and another place's incident is no fix that applies.

A careful reader tells failures apart by the message proper after its severity (``FATAL:  sorry, too many clients
already``, not ``FATAL:  password authentication failed``), however many other words the two share, and not by the
words every message has ("for", "not"); and an incident about another place (another target's, about another
instance of the component) is no fix that "could apply too".
"""

from __future__ import annotations

from past import as_incident
from test_claims import cand
from test_kinds import answering, server_error

from monitor.memory import claims, quotes, recall
from monitor.memory.candidates import parse_listing

PG_PREFIX = 'psycopg2.OperationalError: connection to server at "pg-main-02.db.internal" (10.40.2.12), port 5432 failed: '


def test_the_message_after_a_severity_is_a_field_of_its_own() -> None:
    answer = f'{{"error":"{PG_PREFIX.replace(chr(34), chr(92) + chr(34))}FATAL:  sorry, too many clients already"}}'
    other = f'{PG_PREFIX}FATAL:  password authentication failed for user "billing". Vault rotated the credentials.'
    same = f"{PG_PREFIX}FATAL:  sorry, too many clients already; a job leaked its sessions."
    assert quotes.contradicted(answer, other).startswith("gives fatal 'password authentication failed")
    assert quotes.contradicted(answer, same) == ""
    assert quotes.fields("reset reason: overflow") == {"reset reason": frozenset({"overflow"})}  # as before
    refused = f"ledger_db: {PG_PREFIX}Connection refused"  # the failed connection's value is the whole of the chain
    assert quotes.contradicted(refused, other).startswith("gives port 5432 failed 'FATAL:  password")


def test_words_every_message_has_do_not_make_two_messages_one() -> None:
    answer = '{"error":"FATAL: password authentication failed for user \\"inventory_rw\\" (SQLSTATE 28P01)"}'
    assert quotes.contradicted(answer, 'inventory-api 500: FATAL: no pg_hba.conf entry for host "10.4.12.17"') != ""
    assert quotes.contradicted("job state: not ready", "job state: not found") != ""
    assert quotes.contradicted("read: EOF", "read: EOF after 3 retries") == ""  # one word, and the same


ENVOY = "upstream connect error or disconnect/reset before headers. "


def test_a_field_is_found_by_its_name_though_a_sentence_runs_into_it() -> None:
    answer = f"{ENVOY}retried and the latest reset reason: remote connection failure, transport failure reason: TLS_error"
    overflow = f'The sidecar returned 503 "{ENVOY}reset reason: overflow". The circuit breaker tripped.'
    assert quotes.contradicted(answer, overflow) == "gives reset reason 'overflow', here 'remote connection failure'"
    assert quotes.contradicted(answer, f"{ENVOY}reset reason: remote connection failure") == ""
    assert quotes.contradicted("transport failure reason: x509", "reason: TLS handshake") == ""  # one word: any reason


def test_two_values_that_share_one_word_of_several_are_two_failures() -> None:
    answer = f"{ENVOY}reset reason: remote connection failure, transport failure reason: delayed connect error: 111"
    termination = f"{ENVOY}reset reason: connection termination"  # Envoy's reasons share "connection"
    tls = f"{ENVOY}reset reason: connection failure, transport failure reason: TLS_error:|268435581:SSL routines"
    assert quotes.contradicted(answer, termination).startswith("gives reset reason 'connection termination'")
    assert quotes.contradicted(answer, tls).startswith("gives transport failure reason 'TLS_error:")  # "tls" is a word
    assert quotes.contradicted("error: connection timeout", "error: timeout") == ""  # all the shorter one says


def test_an_address_is_no_field() -> None:
    assert quotes.fields('Get "https://login.microsoftonline.com/x/openid-configuration": dial tcp: lookup') == {
        "dial tcp": frozenset({"lookup"})
    }


def test_another_places_incident_does_not_keep_this_places_fix_from_being_asserted() -> None:
    here = cand(4, 0.87, shared=("pg-main",), echo=1.0, same_target=False)
    there = cand(2, 0.84, sibling="minio-backup, here minio-main", same_target=False)  # about another instance
    said = claims.claim(here, [here, there])
    assert said.asserted == 4 and not said.reasons
    near = cand(3, 0.84, shared=("pg-main",), same_target=False)  # about this place: it could apply too
    assert claims.claim(here, [here, near]).asserted is None


def test_an_incident_about_another_instance_ranks_below_one_about_this_instance() -> None:
    evidence = answering(
        "session-api", 500, '{"redis":"redis-sessions-01.cache.internal:6379","error":"MISCONF Redis is configured to save RDB snapshots"}'
    )
    ratelimit = server_error(
        2,
        "session-api",
        'The rate limiter got "MISCONF Redis is configured to save RDB snapshots" from redis-ratelimit-02.cache.internal.',
        "Expanded the PVC.",
    )
    sessions = server_error(1, "cart-api", "redis-sessions-01 refused every write: BGSAVE fork failed.", "vm.overcommit_memory=1")
    ranked = recall.weighed(
        [as_incident(ratelimit), as_incident(sessions)], evidence, [(0.92, 0.3), (0.86, 0.1)], {"vector": [2, 1]}, frozenset()
    )
    assert [c.id for c in ranked] == [1, 2] and ranked[1].displaced and "redis-ratelimit" in ranked[1].sibling
    listed, _ = parse_listing("\n".join(c.line() for c in ranked), "session-api")  # as the model reads them, and the builtin
    assert [c.id for c in listed] == [1, 2] and listed[1].displaced and listed[1].score < listed[0].score
    alone = recall.weighed([as_incident(ratelimit)], evidence, [(0.92, 0.3)], {"vector": [2]}, frozenset())
    assert not alone[0].displaced  # with nothing about this instance beside it, it keeps its rank
