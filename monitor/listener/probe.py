"""``/probe?target=&module=``: one check on demand, answered in blackbox_exporter's series.

A Prometheus job written for blackbox_exporter switches by changing its address::

    - job_name: blackbox
      metrics_path: /probe
      params: {module: [http_2xx]}
      static_configs: [{targets: [https://example.com]}]
      relabel_configs:
        - {source_labels: [__address__], target_label: __param_target}
        - {source_labels: [__param_target], target_label: instance}
        - {target_label: __address__, replacement: monitor:9108}

The modules and the targets a scrape may ask for are the config's ``probe:`` section
(:mod:`monitor.config.probe`), read at each request, so a reload applies. A target outside
``probe.allow`` (and every target when it is empty) is refused with 403; a redirect is followed only
within it too, and the address a probe connects to, after DNS, must be one it allows (a name resolving to
loopback or link-local fails the probe with ``address_refused``, unless a pattern names that address).
At most ``probe.concurrency`` probes run at once: past that a scrape waits, and past twice as many waiting
it gets 503 at once. A probe's timeout is its module's, cut to Prometheus'
``X-Prometheus-Scrape-Timeout-Seconds`` less half a second, as blackbox_exporter does; ``&debug=true``
puts what the check found (its error kind and detail) before the series.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import ValidationError

from monitor.checks import network, registry
from monitor.config import Target
from monitor.config.probe import ProbeConfig
from monitor.core.results import Result
from monitor.metrics.probes import probe_exposition

Answer = tuple[int, bytes, str]
TEXT = "text/plain; charset=utf-8"
SCRAPE_OFFSET = 0.5  # seconds left for Prometheus to receive the answer (blackbox's --timeout-offset)
MIN_TIMEOUT = 0.1


class Prober:
    """Answers /probe: finds the module, builds and guards the target, runs one check, renders it."""

    def __init__(
        self,
        settings: Callable[[], ProbeConfig],
        *,
        clock: Callable[[], float] = time.time,
        resolve: Callable[[str, int], Awaitable[list[str]]] = network.resolve,
    ) -> None:
        self.settings, self.clock, self.resolve = settings, clock, resolve
        self.concurrency = settings().concurrency
        self._running = threading.BoundedSemaphore(self.concurrency)

    def answer(self, query: str, scrape_timeout: str | None = None) -> Answer:
        """The HTTP answer to ``/probe?<query>``: (status, body, content type)."""
        config = self.settings()
        asked = {key: values[-1] for key, values in parse_qs(query).items()}
        target, name = asked.get("target", "").strip(), asked.get("module", "http_2xx")
        if not config.allow:
            return 403, b"probe.allow is empty: /probe refuses every target until the config lists those it may probe\n", TEXT
        module = config.modules.get(name)
        if module is None:
            return 400, f"unknown module {name[:60]!r}; modules: {', '.join(sorted(config.modules))}\n".encode(), TEXT
        if not target or len(target) > 2000:
            return 400, b"target is required: /probe?target=HOST_OR_URL&module=NAME\n", TEXT
        address = module.address(target)
        if not config.allows(address):
            return 403, f"{address[:200]!r} is not in probe.allow\n".encode(), TEXT
        try:
            checked = module.target(address, _timeout(module.timeout, scrape_timeout))
        except ValidationError as exc:
            reason = "; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())
            return 400, f"target {target[:200]!r} does not fit module {name}: {reason[:300]}\n".encode(), TEXT
        started = time.perf_counter()
        result = self.run(checked, reach=config.allows, admit=functools.partial(config.reaches, checked.kind))
        body = probe_exposition(result, time.perf_counter() - started)
        if asked.get("debug") == "true":  # as blackbox_exporter's: what the probe found, then its series, as text
            found = f"{result.severity}: {result.error or 'no error'}: {result.detail}\n{result.excerpt or ''}\n\n"
            return 200, found.encode() + body, TEXT
        return 200, body, CONTENT_TYPE_LATEST

    def run(self, target: Target, *, reach: Callable[[str], bool], admit: Callable[[str, int | None], bool] | None = None) -> Result:
        """One check, in this thread's own event loop, at most ``concurrency`` at once: its redirects within
        ``reach``, its connections to addresses ``admit`` allows."""
        dialer = network.Dialer(self.resolve, admit)
        with self._running:
            return asyncio.run(self._check(target, registry.Context(clock=self.clock, reach=reach, dialer=dialer)))

    async def _check(self, target: Target, context: registry.Context) -> Result:
        check = registry.factory(target.kind)(context)
        try:
            return await check.check(target, worker=0)
        finally:
            await check.aclose()


def _timeout(module: float, scrape: str | None) -> float:
    try:
        limit = float(scrape) - SCRAPE_OFFSET if scrape else module
    except ValueError:
        limit = module
    return max(MIN_TIMEOUT, min(module, limit))
