"""Incident notifications: an outbox in the store, and a sender for each receiver.

Notifying only writes to the store's outbox, so a dead receiver never slows
the checks. Each receiver (:mod:`monitor.alerts.receivers`: webhooks, Apprise
channels, Alertmanagers) has its own sender thread, so a hanging one delays
no other; it delivers what is due, retrying with exponential backoff (capped
at ``alerts.retry_max``), and drops what is too old or failed too often. Undelivered notifications stay in
the outbox and are retried after a restart, by this process or the next: a resolve from
``monitor incidents resolve`` or ``monitor web`` is queued there and the daemon delivers it. Each replica
delivers its own; with ``lease``, a live replica takes over those of one whose lease ended
(:mod:`monitor.daemon.members`), and a replica that finds, mid-batch, that a notification was taken from it
leaves the rest of the batch to its new owner.

Latest state wins: a message is built from the incident as the store holds it
when it is queued, in the same transaction, and replaces the message still
pending for that receiver and incident. So after a receiver's outage it gets
each incident's newest state once, and a resolved incident never fires again.
Whether maintenance holds a message back is :mod:`monitor.incidents.maintenance`'s to say.

Two producers fill the outbox, each named: the incident writer queues what a change makes (:meth:`Alerts.messages`,
called in the change's transaction), and the follow-ups queue what time makes (:meth:`Alerts.follow_up`:
reminders and escalations; :meth:`Alerts.refresh`: Alertmanager's firing alerts sent again), through the outbox's
``enqueue_follow_up``. Nothing else queues (``tests/test_one_writer.py``).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from monitor.alerts import facts
from monitor.alerts.alertmanager import ALERTMANAGER, alertmanager_alert, iso
from monitor.alerts.apprise import apprise_message, apprise_receiver
from monitor.alerts.client import delivery_client
from monitor.alerts.links import page_links
from monitor.alerts.outages import Outages
from monitor.alerts.receivers import Context, Receiver
from monitor.alerts.registry import receivers
from monitor.alerts.routes import Routes, rule_names
from monitor.alerts.webhook import webhook_payload
from monitor.config import AlertsConfig, Config
from monitor.core.incidents import Event, Incident
from monitor.core.outbox import Queued
from monitor.incidents.maintenance import Maintenance
from monitor.metrics import Metrics
from monitor.store import Notification, Store
from monitor.store.engines import describe

__all__ = ["ALERTMANAGER", "Alerts", "alertmanager_alert", "apprise_message", "apprise_receiver", "iso", "webhook_payload"]

log = logging.getLogger("monitor.alerts.delivery")

BACKOFF_BASE = 1.0


class Alerts:
    """The outbox and its senders. ``start()`` the senders; ``notify`` from any thread.

    ``messages`` is what the incident writer queues with each change; ``maintenance`` says which
    incidents' alerts are held back; ``routes`` (:mod:`monitor.alerts.routes`), who hears of which target
    and when. Both are made by the composition root (:func:`monitor.wiring.alerts`).
    """

    def __init__(
        self,
        config: AlertsConfig,
        store: Store,
        *,
        client: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
        poll: float = 0.5,
        metrics: Metrics | None = None,
        maintenance: Maintenance,
        routes: Routes,
    ) -> None:
        self.config, self.store, self.clock, self.poll, self.metrics = config, store, clock, poll, metrics
        self.routes = routes
        self.outages = Outages(store, lambda: self.routes, self._build)
        self.maintenance = maintenance
        self._client = client
        self._client_made = threading.Lock()  # each receiver's sender thread asks for the client first at once
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._senders: dict[str, threading.Thread] = {}
        self._receivers: tuple[AlertsConfig | None, dict[str, Receiver]] = (None, {})
        self._rule_names: dict[str, str] = {}

    def apply_config(self, config: Config) -> None:
        """After a config reload: its receivers, rules and delivery limits (the queued notifications stay)."""
        self.config = config.alerts
        self.routes.apply_config(config)

    @property
    def client(self) -> httpx.Client:
        """Made when first needed, once however many receivers' senders ask at the same moment (a second one made
        would replace the first, and its open connections go to the garbage collector unclosed): a process that only
        queues (``monitor incidents resolve``) never sends."""
        with self._client_made:
            if self._client is None:
                self._client = delivery_client()  # each delivery within a deadline, its answer capped
            return self._client

    @property
    def instance(self) -> str:
        """What tells this install's alerts apart: ``alerts.instance``, else the host name."""
        return self.config.instance or socket.gethostname()

    @property
    def enabled(self) -> bool:
        return bool(self.receivers())

    def receivers(self) -> dict[str, Receiver]:
        """The configured receivers by outbox name, made again when a reload brought a new ``alerts``."""
        if self._receivers[0] is not self.config:
            found = receivers(self.config)
            self._receivers, self._rule_names = (self.config, found), rule_names(found)
        return self._receivers[1]

    def notify(self, event: Event) -> None:
        """An incident changed: wake the sender when the writer queued notifications with the change."""
        if event.queued:
            self._wake.set()
            self._observe_pending()

    def messages(self, event: Event, current: Incident | None) -> list[Notification]:
        """What to queue for the event, per receiver, given the incident as stored now (see
        :mod:`monitor.alerts.outages` for first messages, which wait and gather an outage). Per receiver and
        incident only the newest state waits in the outbox, so a resolved incident is never followed by an older
        "firing" message."""
        incident = current or event.incident
        if event.kind == "annotated":  # an investigation that ended lets out what it held back
            return self._released(incident) if incident.agent_state else []
        if incident.status == "resolved" and event.kind != "resolved":
            return []  # a stale event: the incident resolved since, and that is what is (or was) sent
        kind, only = event.page or (event.kind, None)  # paged: an "opened" or "resolved" for some receivers only
        held_back = self.maintenance.silences(incident)
        after = self._after_maintenance(kind, incident) if held_back else None
        if held_back and after is None:
            return []
        now, out = self.clock(), []
        for receiver in self._chosen(kind, incident, event.quiet, only):
            held = self.outages.message(receiver, kind, incident, now)
            if held is not None:
                out.append(held)
                continue
            context = self._context(incident, [incident])
            told = event.diagnosis.to_json() if event.diagnosis is not None else None
            out.append(Notification(receiver.name, receiver.message(kind, incident, context, [p.name for p in event.patterns], told)))
        return out if after is None else [n._replace(due=max(after, n.due or now)) for n in out]

    def _after_maintenance(self, kind: str, incident: Incident) -> float | None:
        """When a message that maintenance holds back goes out after all: the "resolved" of an incident its
        receivers heard of, when the window ends (one longer than ``alerts.max_age`` drops it). None: never."""
        if kind != "resolved" or incident.silenced or not self.store.outbox.told(incident.id):
            return None
        return self.maintenance.ends(incident.target)

    def _released(self, incident: Incident) -> list[Notification]:
        """The held first messages of an incident whose investigation ended (with no diagnosis), to go now."""
        now, every = self.clock(), self.receivers().values()
        return [n for n in (self.outages.release(r, incident, now) for r in every) if n is not None]

    def _chosen(
        self, kind: str, incident: Incident, quiet: frozenset[str] = frozenset(), only: frozenset[str] | None = None
    ) -> list[Receiver]:
        """The receivers of the target that hear of ``kind``: its routes', and those it escalated to; none whose rule
        name is in ``quiet``, and only those in ``only`` when given (receivers with thresholds of their own)."""
        every = self.receivers()
        target = incident.target
        wanted = self.routes.receivers(target, self._rule_names)
        escalated = self.routes.escalation(target, self._rule_names) & set(self.store.outbox.last_sent(f"incident:{incident.id}"))
        return [
            r
            for name, r in every.items()
            if kind in r.kinds
            and (name in wanted | escalated or r.refreshes)
            and (r.refreshes or kind != "resolved" or self.routes.send_resolved(target, self._rule_names[name]))
            and self._rule_names[name] not in quiet
            and (only is None or self._rule_names[name] in only)
        ]

    def _build(self, receiver: Receiver, kind: str, members: list[Incident]) -> dict[str, Any]:
        context = self._context(members[0], members)
        return receiver.message(kind, members[0], context, [], None)

    def _context(self, incident: Incident, members: list[Incident] | None = None) -> Context:
        related = self.store.incidents.incident(incident.related_incident) if incident.related_incident else None
        now = self.clock()
        return Context(
            self.store.incidents.incident_key(incident.id),
            self.instance,
            related.resolution if related else None,
            tuple(self._facts(m, now) for m in members or [incident]),
            page_links(self.routes.external_url, incident),
        )

    def _facts(self, incident: Incident, now: float) -> dict[str, Any]:
        """An incident's facts, with its target's group when it has one (a webhook template says it)."""
        found, group = facts.facts(incident, self.store, now), self.routes.group(incident.target)
        return found if group is None else {**found, "group": group}

    def _still_firing(self, incident: Incident | None) -> list[Notification]:
        if incident is None or incident.status != "open" or self.maintenance.silences(incident, refresh=True):
            return []
        context = self._context(incident)
        return [Notification(r.name, r.message("updated", incident, context, [], None)) for r in self.receivers().values() if r.refreshes]

    def follow_up(self, open_incidents: list[Incident]) -> int:
        """Reminders of incidents still open (``repeat_every``) and escalations (``escalate``), for those not
        acknowledged nor silenced; returns how many were queued. Run every few seconds (the daemon's
        ``FOLLOW_UP_EVERY``), so each comes within that of its time: looking costs reads only, and what is due
        is decided again in the transaction that queues it, from what the outbox says was sent, so none goes
        twice."""
        queued = 0
        for incident in open_incidents:
            policy = self.routes.policy(incident.target)
            if (policy.repeat_every or policy.escalate) and not incident.acknowledged_at and self._due(incident):
                queued += self.store.outbox.enqueue_follow_up(incident.id, self._follow_ups)
        if queued:
            self._wake.set()
            self._observe_pending()
        return queued

    def _follow_ups(self, incident: Incident | None) -> list[Notification]:
        return [
            Notification(r.name, self._build(r, kind, members), at=at)
            for kind, r, members, at in (self._due(incident) if incident is not None else [])
        ]

    def _due(self, incident: Incident) -> list[tuple[str, Receiver, list[Incident], float]]:
        """The reminders and escalation due now: (kind, receiver, the incidents it lists, when it fell due). A
        reminder falls due ``repeat_every`` after the last message to its receiver, and counts from then, not
        from when it was queued, so that reminders keep their period."""
        if incident.status != "open" or incident.acknowledged_at or self.maintenance.silences(incident):
            return []
        policy, now, target = self.routes.policy(incident.target), self.clock(), incident.target
        every = self.receivers()
        due: list[tuple[str, Receiver, list[Incident], float]] = []
        keys, reminded = self._outage(incident)
        period = policy.repeat_every
        if period and reminded:
            sent = self.store.outbox.last_sent(*keys)
            due += [
                ("reminder", every[name], reminded, at + (now - at) // period * period)
                for name, at in sent.items()
                if name in every and not every[name].refreshes and now - at >= period
            ]
        if policy.escalate and now - incident.opened_at >= policy.escalate.after:
            sent = self.store.outbox.last_sent(f"incident:{incident.id}")
            due += [
                ("escalated", every[name], [incident], now)
                for name in self.routes.escalation(target, self._rule_names)
                if name not in sent and name in every
            ]
        return due

    def _outage(self, incident: Incident) -> tuple[list[str], list[Incident]]:
        """The outbox keys of the incident's outage (its own, when it was sent alone), and the incidents a
        reminder lists: the outage's that are open, unacknowledged and not silenced, when ``incident`` is the
        first of them (the others' reminders are its); else none."""
        ids = self.store.outbox.outage_of(incident.id)
        members = [incident if i == incident.id else self.store.incidents.incident(i) for i in ids]
        waiting = [
            m for m in members if m is not None and m.status == "open" and not m.acknowledged_at and not self.maintenance.silences(m)
        ]
        first = bool(waiting) and waiting[0].id == incident.id
        return [f"incident:{i}" for i in ids], waiting if first else []

    def refresh(self, open_incidents: list[Incident]) -> None:
        """Re-send firing alerts to Alertmanager, which otherwise resolves them after its resolve_timeout.

        Each replaces the incident's pending Alertmanager message, so a receiver that is down never
        builds a backlog, and an incident resolved since is not sent as firing.
        """
        if not any(r.refreshes for r in self.receivers().values()):
            return
        for incident in open_incidents:
            self.store.outbox.enqueue_follow_up(incident.id, self._still_firing)
        self._wake.set()
        self._observe_pending()

    def deliver_due(self, receiver: str | None = None) -> int:
        """Try every due notification (``receiver``'s only, when given) once; returns how many were delivered."""
        delivered = 0
        for item in self.store.outbox.due_notifications(self.clock(), receiver=receiver):
            if self._stop.is_set() and self._thread is not None:
                break
            target = self.receivers().get(item.receiver)
            reason = self._stale(item, target)
            if reason is not None or target is None:
                self._drop(item, reason or "its receiver is no longer configured")
                continue
            error = target.send(json.loads(item.payload), self.client, f"{self.store.incidents.install_id}-{item.id}")
            self._count(item, "delivered" if error is None else "failed")
            delivered += error is None
            if not (self.store.outbox.mark_delivered(item.id) if error is None else self._failed(item, error)):
                log.warning(
                    "notification %s was taken over by another replica (this one's lease had ended): the rest of this batch is left to it",
                    item.id,
                )
                break
        self._observe_pending()
        return delivered

    def _failed(self, item: Queued, error: str) -> bool:
        """Retry later, or give up; False when the notification is no longer this replica's."""
        if item.attempts + 1 >= self.config.max_attempts:
            self._drop(item, f"gave up after {item.attempts + 1} attempts, the last: {error}")
            return True
        delay = min(self.config.retry_max, BACKOFF_BASE * 2**item.attempts)
        if not self.store.outbox.mark_failed(item.id, error, self.clock() + delay):
            return False
        log.warning("notification %s to %s failed (%s); retry in %.0fs", item.id, item.receiver, error, delay)
        return True

    def _stale(self, item: Queued, receiver: Receiver | None) -> str | None:
        """Why a notification is not worth sending any more, if it is not."""
        if receiver is None:
            return "its receiver is no longer configured"
        if item.created_at < self.clock() - self.config.max_age:
            return f"older than alerts.max_age ({self.config.max_age:g}s)"
        return None

    def _drop(self, item: Queued, reason: str) -> None:
        self.store.outbox.drop_notification(item.id, reason)
        self._count(item, "dropped")
        log.warning("notification %s to %s dropped: %s", item.id, item.receiver, reason)

    def _count(self, item: Queued, result: str) -> None:
        if self.metrics is not None:
            self.metrics.observe_notification(item.receiver, result)

    def _observe_pending(self) -> None:
        if self.metrics is not None:
            self.metrics.observe_pending(self.store.outbox.pending_notifications())

    def start(self) -> Alerts:
        self._thread = threading.Thread(target=self._run, name="monitor-alerts", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        waiting = False  # for the database: said once, not every poll
        while not self._stop.is_set():
            try:
                self._dispatch()
                if waiting:
                    log.info("alert delivery goes on: the database answers again")
                waiting = False
            except self.store.errors as exc:
                if not waiting:
                    log.warning("alert delivery waits for the database: %s", describe(exc))
                waiting = True
            except Exception:  # the dispatcher must outlive any one bad notification
                log.exception("alert delivery failed")
            self._wake.wait(self.poll)
            self._wake.clear()

    def _dispatch(self) -> None:
        """A sender thread for each receiver with something due, so a hanging one delays no other."""
        for receiver in self.store.outbox.due_receivers(self.clock()):
            sender = self._senders.get(receiver)
            if sender is None or not sender.is_alive():
                sender = threading.Thread(
                    target=self._deliver_to, args=(receiver,), daemon=True, name=f"monitor-alerts-{len(self._senders)}"
                )
                self._senders[receiver] = sender
                sender.start()

    def _deliver_to(self, receiver: str) -> None:
        try:
            self.deliver_due(receiver)
        except Exception:
            log.exception("alert delivery to %s failed", receiver)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout
        for thread in [self._thread, *self._senders.values()]:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._client is not None:
            self._client.close()
