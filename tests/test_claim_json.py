"""A claim is one value from the memory to every channel: stored as JSON with a diagnosis and read back whole."""

from __future__ import annotations

import json

from test_claims import cand

from monitor.core.claims import Claim, Suggestion, suggestions
from monitor.eval.verdict import Verdict
from monitor.incidents.diagnosis import Diagnosis
from monitor.memory import claims, judge

EVERY_FIELD = Claim(
    asserted=None,
    suggested=(Suggestion(4, "api", "same target, names pg-main", "raised the pool", 0.9123), Suggestion(7, "billing", "on billing")),
    margin=0.0312,
    specific=True,
    reasons=("the fix of #7 could apply too",),
    picked=Suggestion(4, "api", "same target, names pg-main", "raised the pool", 0.9123),
    weighed=({"id": 4, "score": 0.9123, "specific": True}, {"id": 9, "score": 0.5, "applicable": False}),
    family="3rd time since March",
    members=(2, 4),
    kin=("the same fix noted",),
    judged={"model": "m", "picked": 4, "vouched": None, "refused": "no calibration", "void": ""},
)


def test_a_claim_reads_back_from_what_is_stored_as_it_was_made() -> None:
    assert Claim.from_json(EVERY_FIELD.to_json()) == EVERY_FIELD
    assert json.loads(EVERY_FIELD.to_json()) == EVERY_FIELD.to_dict()
    assert Claim.from_json(Claim().to_json()) == Claim()


def test_the_memory_s_claim_reads_back_whole_and_stores_the_same_json_again() -> None:
    picked, other = cand(1, 0.86, shared=("pg-main",)), cand(2, 0.84)
    made = claims.claim(picked, [picked, other], shown=[picked, other])
    assert made.suggested and made.weighed  # the figures behind it are stored too
    stored = made.to_json()
    read = Claim.from_json(stored)
    assert read == made and read is not None and read.to_json() == stored


def test_the_stored_json_keeps_its_keys_and_a_judge_s_verdict_comes_last_only_when_there_is_one() -> None:
    keys = ["asserted", "suggested", "margin", "specific", "not_asserted_because", "picked", "weighed", "family", "kin", "members"]
    assert list(Claim().to_dict()) == keys
    assert list(EVERY_FIELD.to_dict()) == [*keys, "judged"]
    assert judge.recorded(Claim(asserted=3), None) == Claim(asserted=3)


def test_nothing_stored_or_what_is_no_claim_reads_as_none() -> None:
    for stored in (None, "", "not json", "[1, 2]", "null", '"text"'):
        assert Claim.from_json(stored) is None, stored
    assert suggestions(None) == () and suggestions("not json") == ()


def test_an_older_row_reads_with_what_it_has_and_a_malformed_suggestion_is_left_out() -> None:
    old = {"asserted": 5, "suggested": [{"id": 6, "target": "api", "why": "same target", "fix": None}, {"target": "x"}, "#8"]}
    read = Claim.from_json(json.dumps(old))
    assert read == Claim(asserted=5, suggested=(Suggestion(6, "api", "same target"),))
    assert read is not None and read.ids() == [5, 6] and read.confidence == "high"
    assert [s.id for s in suggestions(json.dumps(old))] == [6]


def test_every_channel_reads_the_same_value() -> None:
    said = Diagnosis("server_error", 4, "high", "pool exhausted", "raised the pool", EVERY_FIELD.to_json())
    assert said.said == EVERY_FIELD and said.family == "3rd time since March"
    assert said.to_dict()["suggested"] == [s.to_dict() for s in EVERY_FIELD.suggested]
    assert "Possibly related (not asserted): #7 on billing (on billing), fixed by: none noted" in str(said)
    verdict = Verdict("s", [], ["server_error"], 4, True, claim=EVERY_FIELD)
    assert verdict.to_dict()["claim"] == EVERY_FIELD.to_dict() and verdict.judged == EVERY_FIELD.judged
    assert Verdict("s", [], ["server_error"], 4, True).to_dict()["claim"] == {}
