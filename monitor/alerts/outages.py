"""Outages: an incident's first message, held so that it says more, and shared by incidents that fail together.

A first message to a person's receiver (not Alertmanager, which groups and waits by itself) is queued to be
sent ``Routes.hold`` later. While it waits:

* an incident of another target that belongs to the same outage (a shared component, or opened within
  ``alerts.group_window``) joins it: the message is built again, listing both, and keeps its time;
* a change to an incident it lists builds it again from the store; a diagnosis sends it at once, so
  that one message carries the diagnosis;
* once every incident it lists has resolved, it goes at once, as a "resolved";
* an investigation that ended without a diagnosis sends it at once (:meth:`Outages.release`): waiting
  longer would tell nobody more.

The incidents a first message listed stay one outage (``Store.outage_of``): a recovery of one of them is
held ``Routes.hold`` too, and the recoveries of the others within that time join it, so the outage recovers in
one message listing its targets (at once when the last of them recovers); reminders list them together
(:meth:`monitor.alerts.delivery.Alerts.follow_up`).

Everything happens in the transaction of the incident change (the outbox's ``held`` rows are read there),
so two changes can never build the same message from different states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monitor.alerts.receivers import Receiver
from monitor.alerts.routes import Routes
from monitor.core.incidents import Incident
from monitor.core.outbox import Queued
from monitor.store import Notification, Store

# builds one receiver's message: (receiver, kind, the incidents it lists) -> payload
Build = Callable[[Receiver, str, list[Incident]], dict[str, Any]]


class Outages:
    """First messages held in the outbox, by receiver. See the module docstring."""

    def __init__(self, store: Store, routes: Callable[[], Routes], build: Build) -> None:
        self.store, self.routes, self.build = store, routes, build

    def message(self, receiver: Receiver, kind: str, incident: Incident, now: float) -> Notification | None:
        """The held message this change builds (again), or None when it is no business of a held message."""
        routes = self.routes()
        if routes.hold <= 0 or receiver.refreshes:
            return None
        held = [row for row in self.store.outbox.held(receiver.name, now) if "group" in row.message]
        mine = next((row for row in held if incident.id in row.message["group"]), None)
        if mine is not None:
            return self._again(receiver, kind, mine, now)
        if kind == "resolved":
            return self._recovery(receiver, incident, now)
        if kind != "opened":
            return None
        for row in held:
            leader = self.store.incidents.incident(row.message["group"][0])
            if leader is not None and leader.status == "open" and routes.together(leader, incident):
                return self._join(receiver, row, incident)
        return self._notification(receiver, [incident], now + routes.hold, None)

    def release(self, receiver: Receiver, incident: Incident, now: float) -> Notification | None:
        """The held message listing ``incident``, to be sent now; None when none is held."""
        held = self.store.outbox.held(receiver.name, now)
        mine = next((row for row in held if incident.id in row.message.get("group", ())), None)
        return None if mine is None else self._again(receiver, "diagnosed", mine, now)

    def _recovery(self, receiver: Receiver, incident: Incident, now: float) -> Notification | None:
        """The outage's recoveries so far, this one with them: held, unless the outage is over."""
        outage = self.store.outbox.outage_of(incident.id)
        if len(outage) < 2:
            return None
        key = f"outage:{outage[0]}"
        held = next((row for row in self.store.outbox.held(receiver.name, now) if row.key == key), None)
        recovered = list(dict.fromkeys([*(held.message["recovered"] if held else []), incident.id]))
        over = all(member.status == "resolved" for member in self._members(outage))
        due = now if over else held.next_attempt_at if held else now + self.routes().hold
        payload = {**self.build(receiver, "resolved", self._members(recovered)), "recovered": recovered}
        return Notification(receiver.name, payload, due, key)

    def _again(self, receiver: Receiver, kind: str, row: Queued, now: float) -> Notification:
        members = self._members(row.message["group"])
        done = all(m.status == "resolved" for m in members)
        due = now if kind == "diagnosed" or done else row.next_attempt_at
        return self._notification(receiver, members, due, row.key)

    def _join(self, receiver: Receiver, row: Queued, incident: Incident) -> Notification:
        members = [*self._members(row.message["group"]), incident]
        return self._notification(receiver, members, row.next_attempt_at, row.key)

    def _members(self, ids: list[int]) -> list[Incident]:
        return [incident for incident in map(self.store.incidents.incident, ids) if incident is not None]

    def _notification(self, receiver: Receiver, members: list[Incident], due: float, key: str | None) -> Notification:
        kind = "resolved" if all(m.status == "resolved" for m in members) else "opened"
        ids = tuple(m.id for m in members)
        payload = {**self.build(receiver, kind, members), "group": list(ids)}
        return Notification(receiver.name, payload, due, key, outage=ids)
