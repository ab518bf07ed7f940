"""Server-side SVG: latency charts, memory size over time, and status badges.

Every chart is a string of SVG built here and placed inline in a page (or served
as a badge), so the browser runs no chart code. Text that came from a target or
a model never reaches these functions unescaped: each label goes through
:func:`markupsafe.escape`. Colours are presentation attributes and classes from
``static/app.css``, never ``style=`` attributes, which the page's CSP forbids.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from markupsafe import Markup, escape

from monitor.core.incidents import Incident
from monitor.core.memory import MemorySample
from monitor.core.results import WARNING, Slice, StoredResult
from monitor.core.state import is_up

PHASE_COLOURS = {"dns": "#8e6cc0", "connect": "#3b82c4", "tls": "#2a9d8f", "first_byte": "#e9a23b", "body": "#7a8a99"}
STATE_COLOURS = {
    "up": "#2e9e44",
    "warning": "#d99a00",
    "down": "#d0312d",
    "maintenance": "#5b7bb4",
    "unknown": "#8a8a8a",
    "stale": "#8a6d3b",
    "waiting": "#6b8fa3",
}


def _clock(epoch: float) -> str:
    return time.strftime("%m-%d %H:%M", time.gmtime(epoch))


def _ms(value: float) -> str:
    return f"{value / 1000:.1f} s" if value >= 10_000 else f"{value:.0f} ms"


def phase_bars(results: list[StoredResult], *, width: int = 360, height: int = 64) -> Markup:
    """Recent checks, oldest left, as bars stacked by phase; checks that found the target down are red bars to
    the top, those that found it degraded (a warning, up) have an amber cap."""
    rows = list(reversed(results))  # results come newest first
    peak = max((r.latency_ms or 0.0 for r in rows), default=0.0) or 1.0
    slot = width / max(len(rows), 1)
    parts = [
        f'<svg class="chart phases" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="latency of the last {len(rows)} checks by phase">',
        f"<title>latency of the last {len(rows)} checks, by phase; the tallest is {_ms(peak)}</title>",
    ]
    for i, row in enumerate(rows):
        x = i * slot + 0.5
        label = escape(f"{time.strftime('%H:%M:%S', time.gmtime(row.checked_at))} {_ms(row.latency_ms or 0)} {row.error or row.severity}")
        if not is_up(row.severity):
            parts.append(
                f'<rect class="fail" x="{x:.1f}" y="0" width="{max(slot - 1, 1):.1f}" height="{height}" '
                f'fill="#d0312d" opacity="0.8"><title>{label}</title></rect>'
            )
            continue
        phases = row.phase_times() or {"body": row.latency_ms or 0.0}
        y = float(height)
        parts.append("<g>")
        parts.append(f"<title>{label}: " + escape(", ".join(f"{p} {v:.0f} ms" for p, v in phases.items())) + "</title>")
        for phase, value in phases.items():
            h = value / peak * (height - 2)
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(slot - 1, 1):.1f}" height="{max(h, 0.5):.1f}" fill="{PHASE_COLOURS[phase]}"/>'
            )
        if row.severity == WARNING:
            parts.append(
                f'<rect class="warn" x="{x:.1f}" y="0" width="{max(slot - 1, 1):.1f}" height="3" fill="{STATE_COLOURS[WARNING]}"/>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class _Frame:
    """A history chart's plot area over [since, until], and where an epoch and a latency fall in it."""

    width: int
    height: int
    since: float
    until: float
    peak: float
    top: int = 12
    bottom: int = 28
    left: int = 56
    right: int = 8

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height - self.top - self.bottom

    def x_at(self, epoch: float) -> float:
        return self.left + (min(max(epoch, self.since), self.until) - self.since) / max(self.until - self.since, 1e-9) * self.plot_w

    def y_at(self, ms: float) -> float:
        return self.top + self.plot_h - (ms / self.peak) * (self.plot_h - 10)


def history_chart(
    buckets: list[Slice], since: float, until: float, count: int, incidents: Iterable[Incident] = (), *, width: int = 900, height: int = 220
) -> Markup:
    """Mean latency per slice as a line, the slowest check per slice as a band, failures as red ticks below,
    and incidents as shaded spans, over [since, until]."""
    peak = max((b.max_ms or 0.0 for b in buckets), default=0.0) or 1.0
    f = _Frame(width, height, since, until, peak)
    parts = [
        f'<svg class="chart history" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="latency and failures from {_clock(since)} to {_clock(until)} UTC">',
        f'<rect x="{f.left}" y="{f.top}" width="{f.plot_w}" height="{f.plot_h}" class="plot"/>',
    ]
    parts += [_incident_span(f, incident) for incident in incidents]
    parts += _latency(f, buckets, f.plot_w / max(count, 1))
    parts += [
        f'<text x="{f.left - 4}" y="{f.y_at(peak) + 4:.1f}" text-anchor="end" class="axis">{_ms(peak)}</text>',
        f'<text x="{f.left - 4}" y="{f.top + f.plot_h}" text-anchor="end" class="axis">0</text>',
        f'<text x="{f.left}" y="{height - 4}" class="axis">{_clock(since)}</text>',
        f'<text x="{width - f.right}" y="{height - 4}" text-anchor="end" class="axis">{_clock(until)} UTC</text>',
        "</svg>",
    ]
    return Markup("".join(parts))


def _incident_span(f: _Frame, incident: Incident) -> str:
    x0, x1 = f.x_at(incident.opened_at), f.x_at(incident.closed_at or f.until)
    label = escape(f"incident #{incident.id} {incident.pattern}: {incident.summary or ''}")
    return (
        f'<rect class="incident" x="{x0:.1f}" y="{f.top}" width="{max(x1 - x0, 2):.1f}" '
        f'height="{f.plot_h}" fill="#d0312d" opacity="0.12"><title>{label}</title></rect>'
    )


def _latency(f: _Frame, buckets: list[Slice], step: float) -> list[str]:
    """Failure ticks, the band of the slowest checks and the line of the mean, one point per slice."""
    parts, band, line = [], [], []
    for b in buckets:
        x = f.left + (b.bucket + 0.5) * step
        band.append((x, f.y_at(b.max_ms or 0.0)))
        line.append(f"{x:.1f},{f.y_at(b.mean_ms or 0.0):.1f}")
        if b.failures:
            share = b.failures / b.checks
            parts.append(
                f'<rect class="fail" x="{x - max(step / 2, 1):.1f}" y="{f.top + f.plot_h + 2}" '
                f'width="{max(step, 2):.1f}" height="{4 + 8 * share:.1f}" fill="#d0312d">'
                f"<title>{b.failures} of {b.checks} checks found it down</title></rect>"
            )
    if not band:
        return [
            *parts,
            f'<text x="{f.left + f.plot_w / 2}" y="{f.top + f.plot_h / 2}" text-anchor="middle" '
            'class="muted">no checks in this window</text>',
        ]
    floor = f.top + f.plot_h
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
    return [
        *parts,
        f'<polygon points="{band[0][0]:.1f},{floor} {points} {band[-1][0]:.1f},{floor}" '
        f'fill="#3b82c4" opacity="0.15"><title>slowest check per slice</title></polygon>',
        f'<polyline points="{" ".join(line)}" fill="none" stroke="#3b82c4" stroke-width="1.5">'
        f"<title>mean latency per slice</title></polyline>",
    ]


def size_chart(samples: list[MemorySample], field: str, label: str, *, width: int = 900, height: int = 160) -> Markup:
    """One field of the memory samples over time, as a line."""
    top, bottom, left, right = 10, 24, 72, 8
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [(s.at, float(getattr(s, field) or 0)) for s in samples]
    parts = [
        f'<svg class="chart size" viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{escape(label)} over time">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    if len(values) < 2:
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" text-anchor="middle" class="muted">'
            "fewer than two samples yet (the daemon takes one a minute)</text></svg>"
        )
        return Markup("".join(parts))
    first, last = values[0][0], values[-1][0]
    peak = max(v for _, v in values) or 1.0
    points = " ".join(
        f"{left + (at - first) / max(last - first, 1e-9) * plot_w:.1f},{top + plot_h - v / peak * (plot_h - 6):.1f}" for at, v in values
    )
    parts += [
        f'<polyline points="{points}" fill="none" stroke="#8e6cc0" stroke-width="1.5"><title>{escape(label)}</title></polyline>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end" class="axis">{_size(peak)}</text>',
        f'<text x="{left - 4}" y="{top + plot_h}" text-anchor="end" class="axis">0</text>',
        f'<text x="{left}" y="{height - 4}" class="axis">{_clock(first)}</text>',
        f'<text x="{width - right}" y="{height - 4}" text-anchor="end" class="axis">{_clock(last)} UTC</text>',
        "</svg>",
    ]
    return Markup("".join(parts))


def _size(value: float) -> str:
    for unit in ("", "K", "M", "G"):
        if value < 1000:
            return f"{value:.0f}{unit}"
        value /= 1000
    return f"{value:.0f}T"


def badge(label: str, value: str, colour: str) -> str:
    """A flat two-part badge, as shields.io and Gatus draw them (width from a per-character estimate)."""
    lw, vw = 6 * len(label) + 12, 6 * len(value) + 12
    label_text, value_text = escape(label), escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{lw + vw}" height="20" role="img" '
        f'aria-label="{label_text}: {value_text}"><title>{label_text}: {value_text}</title>'
        f'<rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{vw}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" text-anchor="middle" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{lw / 2}" y="14">{label_text}</text><text x="{lw + vw / 2}" y="14">{value_text}</text></g></svg>'
    )
