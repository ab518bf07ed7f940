"""A ``/probe`` answer in blackbox_exporter's series, in a registry of its own per probe, as it does::

    probe_success, probe_duration_seconds, probe_dns_lookup_time_seconds
    probe_ip_protocol                                4 or 6: the address connected (or tried) to; 0 if none resolved
    probe_ssl_earliest_cert_expiry                   when a certificate was seen (https, tls)

and the series the probed kind declares (:class:`monitor.core.kinds.Series`): http's ``probe_http_status_code``,
``probe_http_content_length`` (-1 for an answer that gave none), ``probe_http_version``, ``probe_http_ssl``,
``probe_http_duration_seconds{phase}``, ``probe_failed_due_to_regex``; icmp's
``probe_icmp_duration_seconds{phase="rtt"}``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from monitor.core import kinds
from monitor.core.results import Result


def probe_exposition(result: Result, duration: float) -> bytes:
    """One probe's answer: the series every probe has, then its kind's."""
    registry = CollectorRegistry(auto_describe=True)

    def gauge(name: str, help_text: str, value: float) -> None:
        Gauge(name, help_text, registry=registry).set(value)

    gauge("probe_success", "Displays whether or not the probe was a success", 1 if result.ok else 0)
    gauge("probe_duration_seconds", "Returns how long the probe took to complete in seconds", duration)
    dns = (result.phases or {}).get("dns", 0.0) / 1000
    gauge("probe_dns_lookup_time_seconds", "Returns the time taken for probe dns lookup in seconds", dns)
    gauge("probe_ip_protocol", "Specifies whether probe ip protocol is IP4 or IP6", result.ip_version or 0)
    if result.cert_expires_at is not None:
        gauge("probe_ssl_earliest_cert_expiry", "Returns last SSL chain expiry in unixtime", result.cert_expires_at)
    for series in declared(result.kind):
        value = series.value(result)
        if value is None:
            continue
        if isinstance(value, int | float):
            gauge(series.name, series.help, value)
            continue
        family = Gauge(series.name, series.help, [series.label or "label"], registry=registry)
        for label, each in value.items():
            family.labels(label).set(each)
    return generate_latest(registry)


def declared(kind: str) -> tuple[kinds.Series, ...]:
    """The series kind ``kind`` adds to a probe's answer."""
    probe = kinds.get(kind).probe if kinds.known(kind) else None
    return probe.series if probe is not None else ()
