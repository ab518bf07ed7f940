"""SIGHUP's reloads, off the main thread: the main thread goes on reading signals, so SIGTERM stops the daemon
even while a config is being read (a fleet of 100,000 targets in target files takes half a minute)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from monitor.config import Config

log = logging.getLogger("monitor.daemon")


class Reloads:
    """Runs ``reload`` on a thread of its own, one at a time; a request while one runs makes one more after it
    (the file may have changed again since that one read it), however many requests came."""

    def __init__(self, reload: Callable[[], object]) -> None:
        self._reload = reload
        self._lock = threading.Lock()
        self._pending = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        with self._lock:
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="monitor-reload", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._thread = None
                    return
                self._pending = False
            try:
                self._reload()
            except Exception:  # reload logs its own failures; this is for a bug in it
                log.exception("config reload failed; the daemon goes on")


def read_config(path: str, listen: str | None) -> Config | None:
    """The config file, read and validated whole (its metrics listening on ``listen``, when given); None, and a
    log line, when it cannot be used."""
    from monitor import config as config_module

    try:
        new = config_module.load(path)
        return new.model_copy(update={"metrics": new.metrics.listening_on(listen)}) if listen else new
    except config_module.ConfigError as exc:
        log.error("config not reloaded, the old one stays in force:\n%s", exc)
    except Exception:  # a bug must not take the daemon down with it
        log.exception("config not reloaded, the old one stays in force")
    return None
