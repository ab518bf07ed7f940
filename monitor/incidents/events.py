"""Incident events: what the writer tells the rest of the program about each change it made.

Every change to an incident is one :class:`Event`, handed to one :class:`Publisher`, which passes it to
each subscriber in turn (the log, the metrics, the alerts' sender)::

    Writer ──Event──▶ Publisher ──▶ log line
                                ──▶ metrics (incidents opened)
                                ──▶ alerts (wake the sender: the messages were queued with the change)

A subscriber that fails is logged and skipped: the change is committed, and the others still hear of it.
A bulk change (an import, forgetting) is one :class:`Bulk`, logged, and handed to the bulk subscribers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from monitor.core.incidents import Bulk, Event

__all__ = ["Bulk", "Event", "Publisher", "Subscriber", "log_event"]

log = logging.getLogger("monitor.incidents")

Subscriber = Callable[[Event], object]
BulkSubscriber = Callable[[Bulk], object]


def log_event(event: Event) -> None:
    incident = event.incident
    level = logging.DEBUG if event.kind == "annotated" else logging.INFO  # notes and agent states: bookkeeping
    log.log(level, "incident #%s %s: %s %s", incident.id, event.kind, incident.target, incident.summary)


def log_bulk(change: Bulk) -> None:
    log.info("%s %d incidents", change.kind, change.count)


class Publisher:
    """Hands each event to every subscriber, in the order they subscribed. ``Publisher()`` only logs."""

    def __init__(self, *subscribers: Subscriber) -> None:
        self.subscribers: list[Subscriber] = [log_event, *subscribers]
        self.bulk_subscribers: list[BulkSubscriber] = [log_bulk]

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    def subscribe_bulk(self, subscriber: BulkSubscriber) -> None:
        self.bulk_subscribers.append(subscriber)

    def publish_bulk(self, change: Bulk) -> None:
        for subscriber in self.bulk_subscribers:
            try:
                subscriber(change)
            except Exception:  # committed: the others must still hear of it
                log.exception("%s %d incidents: a subscriber failed", change.kind, change.count)

    def publish(self, event: Event) -> None:
        for subscriber in self.subscribers:
            try:
                subscriber(event)
            except Exception:  # the change is committed; the other subscribers must still hear of it
                log.exception("incident #%s %s: a subscriber failed", event.incident.id, event.kind)
