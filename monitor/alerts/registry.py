"""Every configured receiver by its outbox name: the one place receivers are made, and their names read back.

A stored name that :func:`receivers` no longer makes belongs to a receiver that is no longer configured.
Every receiver kind is a :class:`~monitor.config.alerts.ReceiverKind` (the config's registry of them), found in the
``monitor.receivers`` entry point group: the built-in three are :data:`WEBHOOK`, :data:`APPRISE` and
:data:`ALERTMANAGER` (their sections the config's own fields, ``webhooks``, ``notify``, ``alertmanager``); a kind of
a package of its own declares its section of ``alerts:`` and how its receiver is made::

    RECEIVER = ReceiverKind("pager", PagerSettings, Pager)  # alerts.pager: {...} is validated by PagerSettings,
                                                            # and Pager(settings) is its receiver, named pager:...

    [project.entry-points."monitor.receivers"]
    pager = "monitor_pager:RECEIVER"

Its receiver implements :class:`~monitor.alerts.receivers.Receiver`; its outbox name is the kind's name or starts
``<name>:`` (what rules call it is the kind's name), and keeps no secret. A test declares one in its own process
(:func:`register`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from monitor.alerts.alertmanager import members
from monitor.alerts.apprise import Apprise
from monitor.alerts.receivers import Receiver
from monitor.alerts.webhook import Webhook
from monitor.config import AlertsConfig
from monitor.config.alerts import BUILTIN_RECEIVERS, ReceiverKind, declare_receiver, forget_receiver, receiver_kind, receiver_kinds

Make = Callable[[Any], Receiver]  # a kind's receiver, from its validated section

# The built-in kinds, monitor's own monitor.receivers entry points: one receiver per entry of their config's field
WEBHOOK = ReceiverKind("webhook", make=lambda hooks: [Webhook(hook) for hook in hooks], field="webhooks")
APPRISE = ReceiverKind("apprise", make=lambda urls: [Apprise(url) for url in urls], field="notify")
ALERTMANAGER = ReceiverKind("alertmanager", make=members, field="alertmanager")


def register(name: str, settings: type[BaseModel], make: Make) -> ReceiverKind:
    """Declare a receiver kind in this process: ``alerts.<name>`` is validated by ``settings``, and ``make(section)``
    is its receiver."""
    return declare_receiver(ReceiverKind(name, settings, make))


def unregister(name: str) -> None:
    """Forget a registered receiver kind (a test's)."""
    forget_receiver(name)


def receivers(config: AlertsConfig) -> dict[str, Receiver]:
    """Every configured receiver, by its name in the outbox: the built-in kinds' first, then the others'."""
    found: dict[str, Receiver] = {}
    sections: list[tuple[str, Any]] = [(name, getattr(config, builtin(name).field or "")) for name in BUILTIN_RECEIVERS]
    for name, section in sections + list(config.receiver_settings().items()):
        for receiver in made(name, section) if section else []:
            found.setdefault(receiver.name, receiver)  # two URLs alike but for their secrets: the first
    return found


def builtin(name: str) -> ReceiverKind:
    kind = receiver_kind(name)
    assert kind is not None  # receiver_kind says when monitor's own metadata lacks a built-in
    return kind


def made(name: str, section: Any) -> list[Receiver]:
    """The receivers kind ``name`` makes of its ``section``."""
    kind = receiver_kind(name)
    if kind is None or kind.make is None:
        raise ValueError(f"alerts.{name}: the receiver kind {name!r} was declared, but makes no receiver")
    result = kind.make(section)
    every: list[Receiver] = result if isinstance(result, list) else [result]
    for receiver in every if name not in BUILTIN_RECEIVERS else []:
        if receiver.name != name and not receiver.name.startswith(f"{name}:"):
            raise ValueError(f"a {name} receiver's outbox name must be {name!r} or start {name + ':'!r}, not {receiver.name!r}")
    return every


def kind_of(outbox: str) -> str | None:
    """The kind, not a built-in one, whose receiver has this outbox name (what rules call it), or None."""
    name = outbox.partition(":")[0]
    return name if name in receiver_kinds() else None
