"""Serving the web UI: on a thread of the daemon (:func:`start_server`, :class:`WebServer`), or in the
foreground for ``monitor web`` (:func:`serve`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from monitor import wiring
from monitor.config import Config, ConfigHolder
from monitor.incidents.writer import Writer
from monitor.store import Store
from monitor.web.app import create_app, create_status_app
from monitor.web.editor import Editor
from monitor.web.guard import Guard, guarded_protocol

if TYPE_CHECKING:  # uvicorn: imported when a server starts
    import uvicorn


def _listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"the web UI cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _server(app: ASGIApp, guard: Guard) -> uvicorn.Server:
    """uvicorn, speaking HTTP through h11 with ``guard``'s bounds on connections and read time."""
    import uvicorn

    return uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=2,
            http=guarded_protocol(guard),
        )
    )


def start_server(
    store: Store,
    config: Config | ConfigHolder,
    *,
    clock: Callable[[], float] = time.time,
    writer: Writer | None = None,
    edits: tuple[str, Callable[[], bool]] | None = None,
) -> WebServer:
    """The daemon's web UI on ``web.listen``, reading through its own connection to the database (WAL: a
    page never waits for the daemon's writes, nor they for it), unless the database is in memory. Given the
    daemon's holder, the pages follow every reload; the listener stays until a restart. Its actions go
    through the daemon's incident writer (``writer``); ``edits`` (the config file's path, the daemon's reload)
    lets the admin pages and API change the config."""
    listen = (config.current if isinstance(config, ConfigHolder) else config).web
    own = None if store.path == ":memory:" else store.reopen(timeout=1.0)  # closing never waits long
    editor = Editor(edits[0], wiring.config_log(own or store), edits[1]) if edits else None
    app = create_app(own or store, config, clock=clock, writer=writer, editor=editor)
    try:
        return WebServer(app, listen.host, listen.port, closing=own).start()
    except BaseException:
        if own is not None:
            own.close()
        raise


def start_status_server(store: Store, config: Config | ConfigHolder, *, clock: Callable[[], float] = time.time) -> WebServer | None:
    """The status pages alone on ``web.status_listen`` (None when it is not set), with or without the web
    UI, through their own connection to the database; the listener stays until a restart."""
    address = (config.current if isinstance(config, ConfigHolder) else config).web.status_address()
    if address is None:
        return None
    own = None if store.path == ":memory:" else store.reopen(timeout=1.0)
    app = create_status_app(own or store, config, clock=clock)
    try:
        return WebServer(app, *address, closing=own, name="monitor-status").start()
    except BaseException:
        if own is not None:
            own.close()
        raise


class WebServer:
    """The web UI on its own thread and listener (``web.listen``), for the daemon; ``guard`` bounds its
    connections (:mod:`monitor.web.guard`)."""

    def __init__(
        self, app: ASGIApp, host: str, port: int, *, closing: Store | None = None, guard: Guard | None = None, name: str = "monitor-web"
    ) -> None:
        self.closing = closing
        self.guard = guard or Guard()
        self.socket = _listener(host, port)
        self.server = _server(app, self.guard)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, name=name, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self, timeout: float = 10.0) -> WebServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        self.socket.close()
        if self.closing is not None:
            self.closing.close()


def serve(app: ASGIApp, host: str, port: int, ready: Callable[[str], None] | None = None, guard: Guard | None = None) -> None:
    """Serve in the foreground until SIGINT or SIGTERM (``monitor web``)."""
    sock = _listener(host, port)
    server = _server(app, guard or Guard())
    if ready is not None:
        name = sock.getsockname()
        ready(f"http://{name[0]}:{name[1]}")
    server.run(sockets=[sock])
