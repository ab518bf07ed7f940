"""The daemon's listeners, those its config turns on: /metrics with /healthz, heartbeat pings and /probe; the web
UI; the status pages. Each is started in the background and logs its address."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.config import Config, ConfigHolder
from monitor.incidents.writer import Writer
from monitor.listener import MetricsServer
from monitor.listener.probe import Prober
from monitor.metrics import Metrics
from monitor.store import Store

if TYPE_CHECKING:  # starlette and uvicorn: only when the web UI is on
    from monitor.web.server import WebServer

log = logging.getLogger("monitor.daemon")


def listen(
    holder: ConfigHolder,
    store: Store,
    metrics: Metrics,
    *,
    max_age: float,
    pings: Callable[[str, str, str | None], str | None],
    writer: Writer,
    clock: Callable[[], float],
    edits: tuple[str, Callable[[], bool]] | None = None,
) -> tuple[MetricsServer | None, WebServer | None, WebServer | None]:
    """Start the listeners the config in ``holder`` turns on; returns the metrics listener, the web UI's and the
    status pages' (None: off). ``edits`` (the config file, the daemon's reload) lets the web UI change the config."""
    config, server, web, status = holder.current, None, None, None
    if config.metrics.enabled:
        prober = Prober(lambda: holder.current.probe)
        server = MetricsServer(metrics, config.metrics.host, config.metrics.port, max_age, pings=pings, prober=prober).start()
        log.info("metrics on %s/metrics", server.url)
    try:
        if config.web.enabled:
            from monitor.web.server import start_server  # starlette and uvicorn: only when the web UI is on

            web = start_server(store, holder, clock=clock, writer=writer, edits=edits)
            log.info("web UI on %s", web.url)
        if config.web.status_listen:
            from monitor.web.server import start_status_server

            status = start_status_server(store, holder, clock=clock)
            log.info("status pages on %s/status/", status.url if status else "-")
    except BaseException:  # one that cannot listen (its address taken since): the ones started stop, sockets closed
        for started in (web, server):
            if started is not None:
                started.stop()
        raise
    return server, web, status


def unavailable(config: Config) -> str | None:
    """Why a listener ``config`` turns on cannot listen (its address is taken, most often), found by binding each
    address a moment, before the daemon opens anything; None when each can. They bind for real when they start."""
    wanted = [("metrics listener", config.metrics.host, config.metrics.port)] if config.metrics.enabled else []
    if config.web.enabled:
        wanted.append(("web UI", config.web.host, config.web.port))
    status = config.web.status_address()
    if status is not None:
        wanted.append(("status pages", *status))
    for what, host, port in wanted:
        if port == 0:  # any free port: one always is
            continue
        try:
            _bind(host, port)
        except OSError as exc:
            return f"the {what} cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _bind(host: str, port: int) -> None:
    family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the listeners do: TIME_WAIT is no owner
        sock.bind(address)
