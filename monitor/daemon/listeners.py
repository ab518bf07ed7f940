"""The daemon's listeners, those its config turns on: /metrics with /healthz, heartbeat pings and /probe; the web
UI; the status pages. Each is started in the background and logs its address."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from monitor.config import ConfigHolder
from monitor.incidents.writer import Writer
from monitor.metrics import Metrics, MetricsServer
from monitor.metrics.probe import Prober
from monitor.store import Store

log = logging.getLogger("monitor.daemon")


def listen(holder: ConfigHolder, store: Store, metrics: Metrics, *, max_age: float, pings: Callable[[str, str, str | None], str | None],
           writer: Writer, clock: Callable[[], float]) -> tuple[MetricsServer | None, Any, Any]:
    """Start the listeners the config in ``holder`` turns on; returns the metrics listener, the web UI's and the
    status pages' (None: off)."""
    config, server, web, status = holder.current, None, None, None
    if config.metrics.enabled:
        prober = Prober(lambda: holder.current.probe)
        server = MetricsServer(metrics, config.metrics.host, config.metrics.port, max_age, pings=pings,
                               prober=prober).start()
        log.info("metrics on %s/metrics", server.url)
    if config.web.enabled:
        from monitor.web.server import start_server  # starlette and uvicorn: only when the web UI is on

        web = start_server(store, holder, clock=clock, writer=writer)
        log.info("web UI on %s", web.url)
    if config.web.status_listen:
        from monitor.web.server import start_status_server

        status = start_status_server(store, holder, clock=clock)
        log.info("status pages on %s/status/", status.url if status else "-")
    return server, web, status
