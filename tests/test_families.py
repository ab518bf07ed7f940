"""Recurring failures: a failure that comes back is recognised as one family, and the family's fix that held is
asserted; more members make the claim stronger, never weaker (monitor.memory.families)."""

from __future__ import annotations

import queue
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from servers import Answering, Receiver, Shifted

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.core.incidents import Incident
from monitor.daemon import Cycle, daemon_cycle
from monitor.memory import claims, failures, families
from monitor.memory.candidates import Candidate
from monitor.memory.evidence import Evidence
from monitor.store import Store
from monitor.store.writes import IncidentWrites

DAY = 86_400.0
POOL = (
    '{"status":"down","db":"pg-main.db.internal:5432","error":"FATAL: sorry, too many clients already - '
    'pg-main connection pool exhausted (HikariPool-1 - Connection is not available, request timed out after 30000ms)"}'
)


def occurrence(cycle: Cycle, config: Config, store: Store, answering: Answering, fails: str) -> Incident:
    """The target fails with ``fails`` until an incident opens and is investigated; then it recovers."""
    answering.status, answering.body = 500, fails
    for _ in range(2):
        cycle.after_checks(Checker().run(config.targets))
    [incident] = store.incidents.open_incidents("api")
    cycle.drain()
    answering.status, answering.body = 200, '{"status":"up"}'
    for _ in range(2):
        cycle.after_checks(Checker().run(config.targets))
    found = store.incidents.incident(incident.id)
    assert found is not None and found.status == "resolved"
    return found


def test_a_failure_that_comes_back_a_third_time_asserts_the_family_fix(answering: Answering, tmp_path: Path) -> None:
    """The newcomer's flow (issue 41): resolved with a note, back and asserted; a note on the second too, and back
    a third time: the family's fix is asserted (on 7f53393 nothing was, and the exact match was dropped)."""
    clock = Shifted()
    with Receiver() as hook:
        config = Config.model_validate(
            {
                "targets": [{"name": "api", "url": answering.url, "timeout": 2}],
                "detectors": {"consecutive": 2, "recover_after": 2},
                "model": {"id": "builtin"},
                "memory": {"embedder": "none"},
                "alerts": {"webhooks": [{"url": hook.url}]},
            }
        )
        store = Store(str(tmp_path / "monitor.db"), clock=clock)
        other = IncidentWrites(store).open_incident(
            "billing", "consecutive", "billing answered 500: upstream timed out", root_cause="server_error"
        )
        IncidentWrites(store).close_incident(other)  # another target, no fix
        unlike = IncidentWrites(store).open_incident(
            "api", "consecutive", 'api answered 500 "ZeroDivisionError: division by zero" in /quote', root_cause="server_error"
        )
        IncidentWrites(store).close_incident(unlike, resolution="reverted the pricing change (CHG-2100)")
        alerts = wiring.alerts(config, store)
        cycle = daemon_cycle(config, store, alerts=alerts)
        investigator = cycle.investigator = wiring.investigator(config, store, cycle.parts)
        cycle.queue = queue.Queue()

        clock.ago = 40 * DAY
        first = occurrence(cycle, config, store, answering, POOL)
        investigator.tracker.writer.resolve(
            first.id, "pg-main connection pool exhausted by the report job; raised maximumPoolSize to 40 (CHG-2231)"
        )
        clock.ago = 20 * DAY
        second = occurrence(cycle, config, store, answering, POOL)
        assert second.related_incident == first.id  # the second time: the first's fix asserted
        investigator.tracker.writer.resolve(
            second.id, "pg-main connection pool exhausted again; raised maximumPoolSize to 40 again (CHG-2244)"
        )
        clock.ago = 0.0
        third = occurrence(cycle, config, store, answering, POOL)
        alerts.deliver_due()

    assert third.related_incident == second.id  # the newest fix that held
    claim = third.claim or ""
    assert f'"members": [{first.id}, {second.id}]' in claim
    assert "3rd time since" in claim and "raised maximumPoolSize to 40 again" in claim
    [sent] = [m for m in hook.received if m["incident"]["id"] == third.id]  # what on-call reads (resolved by now)
    assert f"Same failure as past incident #{second.id}" in sent["text"] and "Recurring: 3rd time since" in sent["text"]


def member(id_: int, *, opened: float, closed: float | None, fix: str | None, target: str = "api", **more: Any) -> Candidate:
    fields: dict[str, Any] = {"root_cause": "server_error", "status": "resolved", "symptom": "pool exhausted", "similarity": 0.9}
    return Candidate(id_, target, fix=fix, opened=opened, closed=closed, same_target=target == "api", **{**fields, **more})


def test_fixes_that_agree_make_one_family_and_more_members_never_weaken_it() -> None:
    a = member(1, opened=0, closed=3600, fix="raised maximumPoolSize to 40 (CHG-2231)")
    b = member(2, opened=20 * DAY, closed=20 * DAY + 3600, fix="raised maximumPoolSize to 40 again (CHG-2244)")
    c = member(3, opened=30 * DAY, closed=30 * DAY + 3600, fix="maximumPoolSize raised to 40 on the report pool")
    [two] = families.families([b, a], now=40 * DAY)
    [three] = families.families([c, b, a], now=40 * DAY)
    assert two.fixed is not None and two.fixed.id == 2
    assert three.fixed is not None and three.fixed.id == 3 and three.ids == {1, 2, 3}


def test_a_fix_after_which_the_failure_came_back_within_a_day_did_not_hold() -> None:
    real = member(1, opened=0, closed=3600, fix="fixed the connection leak in the report job (PR 812)")
    restart = member(2, opened=10 * DAY, closed=10 * DAY + 3600, fix="restarted the api pods", related=1)  # asserted #1 then
    [found] = families.families([restart, real], now=10 * DAY + 5 * 3600)  # back five hours after the restart
    assert found.fixed is not None and found.fixed.id == 1
    assert "the fix of #2 did not hold" in found.story()
    again = member(3, opened=DAY, closed=DAY + 1800, fix="restarted the api pods")  # back an hour after the leak fix
    [both] = families.families([again, real], now=20 * DAY)
    assert both.fixed is not None and both.fixed.id == 3 and "the fix of #1 did not hold" in both.story()


def test_other_failures_and_peoples_no_split_a_family() -> None:
    a = member(1, opened=0, closed=3600, fix="raised maximumPoolSize to 40", kinds=(("redis", "LOADING"),))
    b = member(2, opened=DAY, closed=DAY + 3600, fix="raised maximumPoolSize to 40", kinds=(("redis", "MISCONF"),))
    assert not families.kin(a, b)  # another kind of failure, whatever the fixes say

    @dataclass
    class Said:
        incident: int
        other: int
        verdict: str

    c = member(3, opened=2 * DAY, closed=2 * DAY + 3600, fix="raised maximumPoolSize to 40")
    assert families.kin(a, c)
    assert not families.kin(a, c, [Said(3, 1, "not")])  # a person said they are not one: never overruled
    assert families.kin(c, b, [Said(2, 3, "same")])  # nor when they said they are


def investigated(answering: Answering, tmp_path: Path, answer: str, past: list[tuple[str, str, str]]) -> tuple[Incident, Receiver]:
    """One failure of ``api`` answering ``answer``, investigated by the builtin model over ``past`` incidents
    (answering, what it said, its fix); the incident, and the webhook's receiver with what it was sent."""
    hook = Receiver()
    with hook:
        config = Config.model_validate(
            {
                "targets": [{"name": "api", "url": answering.url, "timeout": 2}],
                "detectors": {"consecutive": 2},
                "model": {"id": "builtin"},
                "memory": {"embedder": "none"},
                "alerts": {"webhooks": [{"url": hook.url}]},
            }
        )
        store = Store(str(tmp_path / "monitor.db"))
        for where, said, fix in past:
            IncidentWrites(store).close_incident(
                IncidentWrites(store).open_incident(where, "consecutive", said, root_cause="server_error"), resolution=fix
            )
        alerts = wiring.alerts(config, store)
        cycle = daemon_cycle(config, store, alerts=alerts)
        cycle.investigator = wiring.investigator(config, store, cycle.parts)
        cycle.queue = queue.Queue()
        answering.status, answering.body = 500, answer
        for _ in range(2):
            cycle.after_checks(Checker().run(config.targets))
        [incident] = store.incidents.open_incidents("api")
        cycle.drain()
        alerts.deliver_due()
    found = store.incidents.incident(incident.id)
    assert found is not None
    return found, hook


MISCONF = "MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk"


def test_an_old_message_quoted_in_an_aside_decides_no_assertion(answering: Answering, tmp_path: Path) -> None:
    """The failing signal is the OutOfMemoryError; last week's Redis error quoted beside it is an aside: the Redis
    fix may be shown as possibly related, never asserted (on 7f53393 it was, at high confidence, on the webhook)."""
    answer = (
        '{"status":"down","error":"java.lang.OutOfMemoryError: Java heap space in the quote renderer",'
        f'"banner":"FYI, last week: {MISCONF}"}}'
    )
    found, hook = investigated(answering, tmp_path, answer, [("api", f'api answered 500 "{MISCONF}"', "freed the Redis volume, BGSAVE ok")])
    assert found.related_incident is None and found.confidence != "high"
    [sent] = hook.received
    assert sent["diagnosis"]["related_incident"] is None and "Same failure as" not in sent["text"]
    assert "Possibly related (not asserted): #1" in sent["text"]


def test_another_target_answering_an_old_body_word_for_word_decides_no_assertion(answering: Answering, tmp_path: Path) -> None:
    """A different target that answers what an old incident of another quoted, with no component in common: the
    words alone do not make it that failure (on 7f53393 that incident was asserted)."""
    body = '{"status":"error","message":"upstream request quota exceeded for this billing period, try again later"}'
    past = [("reports", f"reports answered 500 '{body}'", "asked the vendor to raise the monthly quota")]
    found, hook = investigated(answering, tmp_path, body, past)
    assert found.related_incident is None
    assert "Same failure as" not in hook.received[0]["text"]


def test_a_past_failure_of_another_instance_ranks_below() -> None:
    """The same Redis error from another Redis (the rate limiter's, not the sessions' one the target names): that
    incident's fix was made there (unseen-para-redis-noeviction: it was shown first, above the right one)."""
    evidence = Evidence("cart-api", "server_error", 500, "unexpected_status", "", '{"addr":"redis-sessions-0.cache.internal:6379"}')
    there = "rate limiter (redis-ratelimit-0.cache.internal) answered OOM command not allowed"
    assert failures.sibling(evidence.names, there) == "redis-ratelimit, here redis-sessions"
    assert failures.sibling(evidence.names, "the session cache redis-sessions-0 refused writes") == ""
    assert failures.sibling(evidence.names, "pods OOMKilled, exit code 137") == ""  # names no other instance
    other = member(4, opened=0, closed=3600, fix="flushed the limiter", target="checkout", sibling="redis-ratelimit, here redis-sessions")
    assert other.score < replace(other, sibling="").score


def test_two_targets_that_quoted_the_message_said_now_are_one_family_and_a_cluster_named_here_is_no_sibling() -> None:
    """A shared etcd that ran out of space, seen by two other clients: both quote the message the target says now,
    so they are one failure wherever they were seen (unseen-r-etcd-space-exceeded-shared: two fixes, nothing said);
    the cluster they name, ``etcd-platform``, is the one the evidence's member ``etcd-0.etcd-platform.svc`` is of."""
    answer = '{"endpoints":["etcd-0.etcd-platform.svc:2379"],"error":"etcdserver: mvcc: database space exceeded"}'
    evidence = Evidence("flagd-api", "server_error", 500, "unexpected_status", "", answer)
    said = 'Every write to etcd-platform failed with "etcdserver: mvcc: database space exceeded"'
    assert failures.sibling(evidence.names, said, evidence.text()) == ""
    assert failures.sibling(evidence.names, "etcd-archive answered timeouts", evidence.text()) == "etcd-archive, here etcd-0"
    quoting = {"echo": 1.0, "agrees": "", "symptom": "writes failing"}
    one = member(1, opened=0, closed=3600, fix="compact, defrag each member, alarm disarm", target="config-api", said=said, **quoting)
    again = member(
        3,
        opened=40 * DAY,
        closed=40 * DAY + 3600,
        fix="compacted again, enabled auto-compaction",
        target="lock-service",
        said='NOSPACE alarm again: "mvcc: database space exceeded" on etcd-platform',
        **quoting,
    )
    [found] = families.families([one, again], now=60 * DAY)
    assert found.ids == {1, 3} and found.why == ("the same message quoted",)
    elsewhere = replace(again, sibling="etcd-archive, here etcd-0")  # the same words from another cluster: not one
    assert len(families.families([one, elsewhere], now=60 * DAY)) == 2


def test_a_family_outweighs_a_look_alike_that_agrees_on_nothing_and_one_ranked_among_it_still_stands() -> None:
    """More members make the claim stronger: two incidents with one fix, the best of them naming the failing
    component, are asserted beside another that agrees on nothing specific; alone, either would only be suggested."""
    first = member(1, opened=0, closed=3600, fix="postsuper -d the newsletter deferrals, moved newsletter@ to its own transport")
    again = member(
        4, opened=20 * DAY, closed=20 * DAY + 3600, fix="deleted the newsletter deferrals with postsuper -d, own transport again"
    )
    best = replace(again, similarity=0.95, shared=("mail-relay-1",))
    other = member(2, opened=10 * DAY, closed=10 * DAY + 3600, fix="rolled back the mail library", similarity=0.85)
    said = claims.claim(best, [best, first, other], now=40 * DAY)
    assert said.asserted == 4 and said.kin == ("the same fix noted",) and "the fix of #1 did not hold" not in said.family
    assert claims.claim(best, [best, other], now=40 * DAY).asserted is None  # alone: the fix of #2 could apply too
    among = replace(other, similarity=0.92, shared=("mail-relay-1",))  # agrees on something, ranked above a member
    assert claims.claim(best, [best, among, first], now=40 * DAY).asserted is None
