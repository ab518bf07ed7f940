"""Incident notifications: a generic JSON webhook and Prometheus Alertmanager's v2 API.

Notifying only writes to the store's outbox, so a dead receiver never slows
the checks. Each receiver has its own sender thread, so a hanging one delays
no other; it delivers what is due, retrying with exponential backoff (capped
at ``alerts.retry_max``), and drops what is too old or failed too often. Undelivered notifications stay in
the outbox and are retried after a restart.

Alertmanager gets ``POST /api/v2/alerts`` with labels that stay fixed while
the incident lives (``alertname``, ``target``, ``incident``: the store's key, unique
across databases, ``instance``: ``alerts.instance`` or the host name, ``source``) and
annotations (``summary``, ``pattern``, ``severity``, ``diagnosis``,
``suspected_cause``, ``root_cause``, ``confidence``, ``related_incident``,
``past_fix``), so its dedup, grouping and silences apply; a
resolved incident is sent again with ``endsAt``. Open incidents are re-sent
(``refresh``) so Alertmanager does not time them out. With several Alertmanagers
(an HA cluster), each member gets every alert, as Prometheus sends them, each from
its own outbox receiver (``alertmanager:<url>``); the cluster deduplicates.

Latest state wins: a message is built from the incident as the store holds it
when it is queued, in the same transaction, and replaces the message still
pending for that receiver and incident. So after a receiver's outage it gets
each incident's newest state once, and a resolved incident never fires again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from monitor.config import AlertsConfig
from monitor.core import urls
from monitor.incidents.tracker import Event
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import describe

log = logging.getLogger("monitor.alerts.delivery")

ALERTMANAGER = "alertmanager"
BACKOFF_BASE = 1.0


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def alertmanager_alert(incident: dict[str, Any], past_fix: str | None = None, *, key: str | None = None,
                       instance: str | None = None) -> dict[str, Any]:
    # The labels are the alert's identity in Alertmanager, so they must not change while the incident
    # lives: pattern, severity and the diagnosis can, and go in the annotations. ``key`` (the store's
    # incident key) and ``instance`` keep two installs' incident #1 apart.
    related = incident.get("related_incident")
    alert: dict[str, Any] = {
        "labels": {"alertname": "MonitorIncident", "target": incident["target"],
                   "incident": key or str(incident["id"]), "instance": instance or socket.gethostname(),
                   "source": "monitor"},
        "annotations": {"summary": incident.get("summary") or "",
                        "pattern": incident["pattern"], "severity": incident.get("severity") or "critical",
                        "diagnosis": incident.get("diagnosis") or "",
                        "suspected_cause": incident.get("suspected_cause") or "",
                        "root_cause": incident.get("root_cause") or "",
                        "confidence": incident.get("confidence") or "",
                        "related_incident": f"#{related}" if related else "",
                        "past_fix": past_fix or ""},
        "startsAt": iso(incident["opened_at"]),
    }
    if incident.get("closed_at"):
        alert["endsAt"] = iso(incident["closed_at"])
    return alert


def webhook_payload(kind: str, incident: dict[str, Any], patterns: list[str],
                    diagnosis: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = {"event": kind, "incident": incident, "patterns": patterns, "source": "monitor"}
    return payload if diagnosis is None else {**payload, "diagnosis": diagnosis}


def apprise_receiver(url: str) -> str:
    """An Apprise channel's name in the outbox: a digest, so its URL (and the secrets in it) is never stored."""
    return "apprise:" + hashlib.sha256(url.encode()).hexdigest()[:16]


def apprise_message(kind: str, incident: dict[str, Any], past_fix: str | None) -> dict[str, str]:
    """A title and body people read on a phone: target, pattern, severity, diagnosis and the past fix."""
    severity = incident.get("severity") or "critical"
    title = f"[monitor] {incident['target']}: incident #{incident['id']} {kind}"
    if kind != "resolved":
        title += f" ({severity})"
    lines = [f"{incident.get('summary') or ''}", f"target: {incident['target']}, pattern: {incident['pattern']}, "
             f"severity: {severity}"]
    if incident.get("root_cause") and incident.get("confidence"):
        lines.append(f"diagnosis: {incident['root_cause']} ({incident['confidence']} confidence): "
                     f"{incident.get('diagnosis') or ''}")
    if incident.get("related_incident"):
        lines.append(f"like past incident #{incident['related_incident']}, fixed by: {past_fix or 'no note'}")
    kinds = {"opened": "failure" if severity == "critical" else "warning", "resolved": "success"}
    return {"title": title, "body": urls.redact_text("\n".join(lines)), "type": kinds.get(kind, "info")}


def send_apprise(url: str | None, message: dict[str, str]) -> str | None:
    """Deliver through Apprise; the error, if it could not."""
    if url is None:
        return "this Apprise URL is no longer configured"
    import apprise

    notifier = apprise.Apprise()
    if not notifier.add(url):
        return "Apprise does not understand this URL"
    sent = notifier.notify(title=message["title"], body=message["body"], notify_type=message["type"])
    return None if sent else f"Apprise could not deliver to {urls.redact(url)}"


class Alerts:
    """The outbox and its sender. ``start()`` the sender; ``notify`` from any thread."""

    def __init__(self, config: AlertsConfig, store: Store, *, client: httpx.Client | None = None,
                 clock: Callable[[], float] = time.time, poll: float = 0.5, metrics: Metrics | None = None) -> None:
        self.config, self.store, self.clock, self.poll, self.metrics = config, store, clock, poll, metrics
        self.client = client or httpx.Client(timeout=5.0, trust_env=False)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._senders: dict[str, threading.Thread] = {}

    @property
    def instance(self) -> str:
        """What tells this install's alerts apart: ``alerts.instance``, else the host name."""
        return self.config.instance or socket.gethostname()

    @property
    def enabled(self) -> bool:
        return bool(self.config.webhooks or self.config.alertmanager or self.config.notify)

    def notify(self, event: Event) -> int:
        """Queue the incident's state as it is now for every receiver; returns how many were queued.

        Per receiver and incident only the newest state waits in the outbox, so a resolved incident
        can never be followed by an older "firing" message.
        """
        if event.queued:  # with the change itself, by the tracker
            self._wake.set()
            return 0
        if event.kind == "updated" and not self.config.alertmanager:
            return 0
        queued = self.store.enqueue_for_incident(event.incident["id"], lambda now: self.messages(event, now))
        if queued:
            self._wake.set()
            self._observe_pending()
        return queued

    def messages(self, event: Event, current: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
        """What to queue for the event, per receiver, given the incident as stored now."""
        incident = current or event.incident
        if incident.get("silenced") or incident.get("status") == "resolved" and event.kind != "resolved":
            return []  # a stale event: the incident resolved since, and that is what is (or was) sent
        messages: list[tuple[str, dict[str, Any]]] = []
        if event.kind in ("opened", "resolved", "diagnosed"):
            payload = {**webhook_payload(event.kind, incident, [p.name for p in event.patterns], event.diagnosis),
                       "key": self.store.incident_key(incident["id"]), "instance": self.instance}
            # the outbox keeps no secret: the receiver is the redacted URL, its headers stay in the config
            messages += [(f"webhook:{urls.redact(hook.url)}", payload) for hook in self.config.webhooks]
            if self.config.notify:
                note = apprise_message(event.kind, incident, self._past_fix(incident))
                messages += [(apprise_receiver(url), note) for url in self.config.notify]
        if self.config.alertmanager:
            message = self._alertmanager_message(incident)
            messages += [(receiver, message) for receiver in self._alertmanagers()]
        return messages

    def _alertmanagers(self) -> dict[str, str]:
        """Each Alertmanager by its outbox receiver: ``alertmanager`` alone, ``alertmanager:<url>`` in a cluster."""
        members = self.config.alertmanager
        if len(members) == 1:
            return {ALERTMANAGER: members[0]}
        return {f"{ALERTMANAGER}:{urls.redact(url)}": url for url in members}

    def _alertmanager_message(self, incident: dict[str, Any]) -> dict[str, Any]:
        return {"alerts": [alertmanager_alert(incident, self._past_fix(incident),
                                              key=self.store.incident_key(incident["id"]),
                                              instance=self.instance)]}

    def _still_firing(self, incident: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
        if incident is None or incident["status"] != "open" or incident.get("silenced"):
            return []
        message = self._alertmanager_message(incident)
        return [(receiver, message) for receiver in self._alertmanagers()]

    def refresh(self, open_incidents: list[dict[str, Any]]) -> None:
        """Re-send firing alerts to Alertmanager, which otherwise resolves them after its resolve_timeout.

        Each replaces the incident's pending Alertmanager message, so a receiver that is down never
        builds a backlog, and an incident resolved since is not sent as firing.
        """
        if not self.config.alertmanager:
            return
        for incident in open_incidents:
            self.store.enqueue_for_incident(incident["id"], self._still_firing)
        self._wake.set()
        self._observe_pending()

    def deliver_due(self, receiver: str | None = None) -> int:
        """Try every due notification (``receiver``'s only, when given) once; returns how many were delivered."""
        delivered = 0
        for item in self.store.due_notifications(self.clock(), receiver=receiver):
            if self._stop.is_set() and self._thread is not None:
                break
            reason = self._stale(item)
            if reason is not None:
                self._drop(item, reason)
                continue
            error = self._send(item)
            self._count(item, "delivered" if error is None else "failed")
            if error is None:
                self.store.mark_delivered(item["id"])
                delivered += 1
            elif item["attempts"] + 1 >= self.config.max_attempts:
                self._drop(item, f"gave up after {item['attempts'] + 1} attempts, the last: {error}")
            else:
                delay = min(self.config.retry_max, BACKOFF_BASE * 2 ** item["attempts"])
                self.store.mark_failed(item["id"], error, self.clock() + delay)
                log.warning("notification %s to %s failed (%s); retry in %.0fs",
                            item["id"], item["receiver"], error, delay)
        self._observe_pending()
        return delivered

    def _stale(self, item: dict[str, Any]) -> str | None:
        """Why a notification is not worth sending any more, if it is not."""
        if not self._configured(item["receiver"]):
            return "its receiver is no longer configured"
        if item["created_at"] < self.clock() - self.config.max_age:
            return f"older than alerts.max_age ({self.config.max_age:g}s)"
        return None

    def _past_fix(self, incident: dict[str, Any]) -> str | None:
        related = self.store.incident(incident["related_incident"]) if incident.get("related_incident") else None
        return related.get("resolution") if related else None

    def _configured(self, receiver: str) -> bool:
        if receiver == ALERTMANAGER or receiver.startswith(f"{ALERTMANAGER}:"):
            return receiver in self._alertmanagers()
        if receiver.startswith("apprise:"):
            return any(receiver == apprise_receiver(url) for url in self.config.notify)
        return any(receiver == f"webhook:{urls.redact(h.url)}" for h in self.config.webhooks)

    def _drop(self, item: dict[str, Any], reason: str) -> None:
        self.store.drop_notification(item["id"], reason)
        self._count(item, "dropped")
        log.warning("notification %s to %s dropped: %s", item["id"], item["receiver"], reason)

    def _count(self, item: dict[str, Any], result: str) -> None:
        if self.metrics is not None:
            self.metrics.observe_notification(item["receiver"], result)

    def _observe_pending(self) -> None:
        if self.metrics is not None:
            self.metrics.observe_pending(self.store.pending_notifications())

    def _send(self, item: dict[str, Any]) -> str | None:
        payload = json.loads(item["payload"])
        receiver: str = item["receiver"]
        if receiver.startswith("apprise:"):
            return send_apprise(next((u for u in self.config.notify if apprise_receiver(u) == receiver), None),
                                payload)
        if receiver == ALERTMANAGER or receiver.startswith(f"{ALERTMANAGER}:"):
            member = self._alertmanagers().get(receiver)
            if member is None:
                return "this alertmanager is no longer configured"
            url, body = member.rstrip("/") + "/api/v2/alerts", payload["alerts"]
            headers: dict[str, str] = {}
        else:
            url = receiver.removeprefix("webhook:")
            hook = next((h for h in self.config.webhooks if url in (urls.redact(h.url), h.url)), None)
            if hook is None:
                return "this webhook is no longer configured"
            # the same for every retry of this message, and unique across installs: a receiver can de-duplicate
            url, body = hook.url, payload
            headers = {**hook.headers, "Idempotency-Key": f"{self.store.install_id}-{item['id']}"}
        try:
            response = self.client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {urls.redact_text(str(exc))}"
        return None if response.is_success else f"HTTP {response.status_code}"

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
        for receiver in self.store.due_receivers(self.clock()):
            sender = self._senders.get(receiver)
            if sender is None or not sender.is_alive():
                sender = threading.Thread(target=self._deliver_to, args=(receiver,), daemon=True,
                                          name=f"monitor-alerts-{len(self._senders)}")
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
        self.client.close()
