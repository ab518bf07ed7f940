"""The config in force: one immutable :class:`~monitor.config.Config`, swapped whole on reload.

Prometheus' own reload is the model: a new config is read and validated in full, then each part that
subscribed is handed the whole new config and applies what it cares about. Nobody copies fields from
one config into another, and nothing is updated in place, so a reader sees the old config or the new
one, never half of each::

    holder = ConfigHolder(load(path))
    holder.subscribe(tracker.apply_config)     # each part: apply_config(config) -> None
    holder.subscribe(web_pages.apply_config)
    holder.swap(load(path))                    # on SIGHUP: every subscriber, in the order they came
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from monitor.config.schema import Config

log = logging.getLogger("monitor.config")

Subscriber = Callable[[Config], None]


class ConfigHolder:
    """Holds the current config; ``swap`` replaces it and tells every subscriber."""

    def __init__(self, config: Config) -> None:
        self._current = config
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()  # one swap at a time: subscribers see the configs in one order

    @property
    def current(self) -> Config:
        """The config in force now (one attribute read: safe from any thread)."""
        return self._current

    def subscribe(self, apply: Subscriber) -> Callable[[], None]:
        """Call ``apply(config)`` at every swap from now on; returns what ends the subscription."""
        with self._lock:
            self._subscribers.append(apply)

        def unsubscribe() -> None:
            with self._lock:
                if apply in self._subscribers:
                    self._subscribers.remove(apply)

        return unsubscribe

    def swap(self, config: Config) -> bool:
        """Put ``config`` in force and hand it to every subscriber. A subscriber that fails is logged and the
        others still apply it; returns whether every one did."""
        with self._lock:
            self._current = config
            applied = True
            for apply in list(self._subscribers):
                try:
                    apply(config)
                except Exception:
                    log.exception("a part could not apply the new config (%s)", getattr(apply, "__qualname__", apply))
                    applied = False
            return applied
