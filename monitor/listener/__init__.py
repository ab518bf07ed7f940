"""The metrics listener: /metrics, /healthz, heartbeat pings (``/ping/<token>``) and ``/probe``, on one port.

It sits above the checks, the store and the metrics, which it serves: it reads requests whole on one thread
(:mod:`.requests`), answers them on workers (:mod:`.handler`), records pings within seconds (:mod:`.pings`),
runs a check on demand for /probe (:mod:`.probe`) and logs what it refused once a minute (:mod:`.refusals`).
"""

from monitor.listener.requests import MAX_HEAD, MAX_PING_BODY
from monitor.listener.server import MetricsServer

__all__ = ["MAX_HEAD", "MAX_PING_BODY", "MetricsServer"]
