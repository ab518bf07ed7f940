"""Every configured receiver by its outbox name: the one place receiver names are made, and read back.

A stored name that :func:`receivers` no longer makes belongs to a receiver that is no longer configured.
The built-in kinds are the config's own fields (``webhooks``, ``notify``, ``alertmanager``). A receiver kind of a
module of its own registers here, which declares its section of ``alerts:`` to the config::

    registry.register("pager", PagerSettings, Pager)   # alerts.pager: {...} is validated by PagerSettings,
                                                       # and Pager(settings) is its receiver, named pager:...

Its receiver implements :class:`~monitor.alerts.receivers.Receiver`; its outbox name is the kind's name or starts
``<name>:`` (what rules call it is the kind's name), and keeps no secret.
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
from monitor.config.alerts import ReceiverKind, declare_receiver, forget_receiver

Make = Callable[[Any], Receiver]  # a registered kind's receiver, from its validated section

_MADE: dict[str, Make] = {}


def register(name: str, settings: type[BaseModel], make: Make) -> None:
    """A receiver kind: ``alerts.<name>`` is validated by ``settings``, and ``make(section)`` is its receiver."""
    if _MADE.get(name, make) is not make:
        raise ValueError(f"receiver kind {name!r} is already registered")
    declare_receiver(ReceiverKind(name, settings))
    _MADE[name] = make


def unregister(name: str) -> None:
    """Forget a registered receiver kind (a test's)."""
    _MADE.pop(name, None)
    forget_receiver(name)


def receivers(config: AlertsConfig) -> dict[str, Receiver]:
    """Every configured receiver, by its name in the outbox."""
    found: dict[str, Receiver] = {}
    every: list[Receiver] = [*map(Webhook, config.webhooks), *map(Apprise, config.notify), *members(config.alertmanager)]
    for receiver in every + registered(config):
        found.setdefault(receiver.name, receiver)  # two URLs alike but for their secrets: the first
    return found


def registered(config: AlertsConfig) -> list[Receiver]:
    """The receivers of the registered kinds' sections ``config`` has."""
    made = []
    for name, settings in config.receiver_settings().items():
        if name not in _MADE:
            raise ValueError(f"alerts.{name}: the receiver kind {name!r} was declared, never registered")
        receiver = _MADE[name](settings)
        if receiver.name != name and not receiver.name.startswith(f"{name}:"):
            raise ValueError(f"a {name} receiver's outbox name must be {name!r} or start {name + ':'!r}, not {receiver.name!r}")
        made.append(receiver)
    return made


def kind_of(outbox: str) -> str | None:
    """The registered kind whose receiver has this outbox name (what rules call it), or None."""
    name = outbox.partition(":")[0]
    return name if name in _MADE else None
