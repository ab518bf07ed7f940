"""Every Prometheus series of monitor (:mod:`.series`, the one place they are defined), the figures read off
the scrape path (:mod:`.collectors`), and the listener for /metrics, /healthz and heartbeat pings
(:mod:`.listener`: it reads requests whole on one thread (:mod:`.requests`), answers them on workers
(:mod:`.handler`) and records pings within seconds (:mod:`.pings`)).
"""

from monitor.metrics.listener import MetricsServer
from monitor.metrics.requests import MAX_HEAD, MAX_PING_BODY
from monitor.metrics.series import Metrics

__all__ = ["MAX_HEAD", "MAX_PING_BODY", "Metrics", "MetricsServer"]
