"""Importers: another tool's setup as a monitor config, with a report of every field not carried and why.

    gatus.py            a Gatus config.yaml (gatus_alerting.py: its alerting, maintenance and ui)
    uptime_kuma.py      an Uptime Kuma database, 1.23 or 2.x, read-only (kuma_pages.py: pages, maintenance,
                        notifications)
    blackbox.py         a blackbox_exporter config and the Prometheus config whose scrape jobs use it
    report.py           Import (the config and what was skipped), Unreadable, and what they share

Each ``read(...)`` returns an :class:`Import`; only unreadable input raises (:class:`Unreadable`). The config
it builds validates: a converted target that would not is left out and reported.
"""

from monitor.importers.report import Import, Skipped, Unreadable

__all__ = ["Import", "Skipped", "Unreadable"]
