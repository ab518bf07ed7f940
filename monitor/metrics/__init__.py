"""Every Prometheus series of monitor (:mod:`.series`, the one place they are defined) and the figures read off
the scrape path (:mod:`.collectors`, :mod:`.targets`). The listener that serves them is :mod:`monitor.listener`.
"""

from monitor.metrics.series import Metrics

__all__ = ["Metrics"]
