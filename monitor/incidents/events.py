"""Incident events: what the writer tells the rest of the program about each change it made.

Every change to an incident is one :class:`Event`, handed to one :class:`Publisher`, which passes it to
each subscriber in turn (the log, the metrics, the alerts' sender)::

    Writer ──Event──▶ Publisher ──▶ log line
                                ──▶ metrics (incidents opened)
                                ──▶ alerts (wake the sender: the messages were queued with the change)

A subscriber that fails is logged and skipped: the change is committed, and the others still hear of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from monitor.core.incidents import Event

__all__ = ["Event", "Publisher", "Subscriber", "log_event"]

log = logging.getLogger("monitor.incidents")

Subscriber = Callable[[Event], object]


def log_event(event: Event) -> None:
    incident = event.incident
    level = logging.DEBUG if event.kind == "annotated" else logging.INFO  # notes and agent states: bookkeeping
    log.log(level, "incident #%s %s: %s %s", incident.get("id"), event.kind, incident.get("target"), incident.get("summary"))


class Publisher:
    """Hands each event to every subscriber, in the order they subscribed. ``Publisher()`` only logs."""

    def __init__(self, *subscribers: Subscriber) -> None:
        self.subscribers: list[Subscriber] = [log_event, *subscribers]

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    def publish(self, event: Event) -> None:
        for subscriber in self.subscribers:
            try:
                subscriber(event)
            except Exception:  # the change is committed; the other subscribers must still hear of it
                log.exception("incident #%s %s: a subscriber failed", event.incident.get("id"), event.kind)
