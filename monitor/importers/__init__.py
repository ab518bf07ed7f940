"""Importers: another tool's setup as a monitor config, with a report of every field not carried and why.

    gatus.py            a Gatus config.yaml (gatus_alerting.py: its alerting, maintenance and ui)
    uptime_kuma.py      an Uptime Kuma database, 1.23 or 2.x, read-only (kuma_pages.py: pages, maintenance,
                        notifications)
    blackbox.py         a blackbox_exporter config and the Prometheus config whose scrape jobs use it
    report.py           Import (the config and what was skipped, refused as unsafe, noted), and what they share
    files.py            source files read as hostile input (regular, bounded, never quoted; Unreadable, Refused),
                        and written never through a link
    kuma_db.py          a Kuma database read-only, immutable and bounded in values, rows, bytes and time
    file_sd.py          Prometheus' file_sd files, only under the scrape config's folder unless asked

Each ``read(...)`` returns an :class:`Import`; only unreadable or refused input raises (:class:`Unreadable`). The
config it builds validates: a converted target that would not is left out and reported.
"""

from monitor.importers.report import Import, Skipped, Unreadable

__all__ = ["Import", "Skipped", "Unreadable"]
