"""What recall may tell people: a past fix asserted only when the evidence decides, else incidents suggested."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from past import known
from servers import Answering
from test_recall import config, failing, investigate, past

from monitor.incidents.diagnosis import Diagnosis
from monitor.memory import claims
from monitor.memory.candidates import Candidate
from monitor.store import Store
from monitor.store.writes import IncidentWrites


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    store = Store(db_path)
    yield store
    store.close()


FIXES = ["raised the pool", "rolled back the deploy", "restarted the worker", "rotated the key", "grew the disk"]


def cand(id: int, similarity: float, fix: str | None = "", **kw: object) -> Candidate:  # noqa: A002
    """A past incident of this target; each id its own fix (two incidents with one fix are one family: test_families)."""
    fix = FIXES[id % len(FIXES)] if fix == "" else fix
    return Candidate(id, "api", "server_error", "resolved", "api answered 500", fix, similarity, **{"same_target": True, **kw})  # type: ignore[arg-type]


def test_the_only_applicable_incident_that_agrees_on_something_specific_is_asserted() -> None:
    lone = cand(1, 0.86, shared=("pg-main",))
    other = cand(2, 0.95, differs="another status: 502")
    said = claims.claim(lone, [lone], shown=[lone, other])
    assert said.asserted == 1 and said.confidence == "high" and said.ids() == [1] and not said.reasons
    assert said.suggested == ()  # beside an assertion, only what could apply too
    unsure = claims.claim(cand(1, 0.86), [cand(1, 0.86)], shown=[cand(1, 0.86), other])
    assert [s.id for s in unsure.suggested] == [1, 2] and "though another status 502" in unsure.suggested[1].why


def test_two_applicable_incidents_are_only_suggested_however_far_apart() -> None:
    fitting = [cand(1, 0.95, agrees="errno ECONNREFUSED"), cand(2, 0.80), cand(3, 0.5), cand(4, 0.4)]
    said = claims.claim(fitting[0], fitting)
    assert said.asserted is None and said.confidence == "medium"
    assert [s.id for s in said.suggested] == [1, 2, 3]  # at most three
    assert "same errno ECONNREFUSED" in said.suggested[0].why and "root cause server_error" in said.suggested[1].why
    assert "the fix of #2, #3, #4 could apply too" in said.reasons


def test_a_lone_incident_with_only_the_label_in_common_is_suggested() -> None:
    label_only = cand(1, 0.88, words=claims.ASSERT_WORDS / 2)
    said = claims.claim(label_only, [label_only])
    assert said.asserted is None and [s.id for s in said.suggested] == [1]
    assert said.reasons == ("it shares no component, quoted message, kind of failure or enough words with the evidence",)
    enough_words = cand(1, 0.88, words=claims.ASSERT_WORDS)
    assert claims.claim(enough_words, [enough_words]).asserted == 1
    # without vectors the similarity is the share of words
    assert claims.claim(cand(1, claims.ASSERT_WORDS), [cand(1, claims.ASSERT_WORDS)], by_words=True).asserted == 1


def test_an_incident_with_no_fix_is_never_asserted() -> None:
    lone = cand(5, 0.95, fix=None, shared=("pg-main",))
    said = claims.claim(lone, [lone])
    assert said.asserted is None and said.reasons == ("no fix noted",)
    assert [s.id for s in said.suggested] == [5]
    assert "fixed by: none noted" in str(Diagnosis("server_error", None, "medium", "x", None, said.to_json()))


def test_a_pick_that_is_not_the_best_applicable_is_suggested_first_not_asserted() -> None:
    fitting = [cand(1, 0.95, shared=("a-b",)), cand(2, 0.50)]
    said = claims.claim(fitting[1], fitting)
    assert said.asserted is None and [s.id for s in said.suggested] == [2, 1]


def test_the_stored_claim_reads_back_for_every_reader() -> None:
    fitting = [cand(1, 0.9), cand(2, 0.899)]
    stored = claims.claim(fitting[0], fitting).to_json()
    assert claims.suggested_ids(stored) == [1, 2]
    text = str(Diagnosis("server_error", None, "medium", "api answers 500", None, stored))
    assert "Possibly related (not asserted): #1 on api (same target, root cause server_error), fixed by: rolled back the deploy" in text
    assert json.loads(stored)["not_asserted_because"]
    assert claims.suggested_ids("not json") == [] and claims.suggested_ids(None) == []


def test_a_past_incident_with_no_fix_is_suggested_not_asserted_by_the_builtin_model(store: Store) -> None:
    """The defect: "#5 on nightly-backup: 'no resolution noted'" asserted, at high confidence."""
    with Answering(500, '{"error":"backup volume pg-backup-01 is full"}') as web:
        nofix = past(store, "api", "server_error", "api answered 500: backup volume pg-backup-01 was full", "")
        IncidentWrites(store).update_incident(nofix, resolution=None)
        failing(store, "api", 500, "unexpected_status")
        run = investigate(config(web.base), store, "api")
    assert run.related_incident is None and run.confidence != "high"
    assert claims.suggested_ids(run.claim) == [nofix]
    assert "no resolution noted" not in (run.diagnosis or "")
    # the model's final answer says no more than the claim: its sentence quoting #N as the fix is not kept
    assert "no resolution noted" not in known(run.final_answer) and known(run.final_answer).startswith("server_error")
    assert known(run.final_answer).endswith(f"Possibly related, not asserted: #{nofix}.")


def test_an_asserted_incident_whose_fix_is_gone_is_not_called_the_fix() -> None:
    text = str(Diagnosis("server_error", 7, "high", "api answers 500", None, None))
    assert "fixed by: None" not in text and "Like past incident #7 (no fix of it is on record)" in text


def test_another_targets_incident_about_another_instance_of_the_component_is_no_ground() -> None:
    """The same MinIO error seen on another target, about another MinIO cluster (its backup store, where retention
    was re-enabled): that fix was made there, so it is suggested, not asserted (unseen-null-minio-drive-threshold:
    asserted on e2a795b)."""
    there = cand(4, 0.9, same_target=False, echo=1.0, agrees="code XMinioStorageFull")
    assert claims.claim(there, [there]).asserted == 4
    elsewhere = replace(there, sibling="minio-backup, here minio.storage.internal")
    said = claims.claim(elsewhere, [elsewhere])
    assert said.asserted is None and said.ids() == [4]
    assert "it is another target's, and names no component the evidence names" in said.reasons
