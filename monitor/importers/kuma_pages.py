"""Uptime Kuma's notifications, status pages and maintenance windows, as this project has them.

A notification Apprise can carry (Discord, Slack, Teams, Google Chat, Telegram, ntfy, Gotify, Pushover,
Mattermost, Matrix, SMTP, and Kuma's own Apprise URLs) becomes an ``alerts.notify`` URL; a webhook a
webhook. A status page keeps its slug, title, description and groups, and its pinned incident (Kuma's
public note) joins its description. A maintenance window keeps its schedule as a one-off or RRULE window.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

from monitor.importers.kuma_db import Database, parsed
from monitor.importers.report import Import, admit_webhook, http_url, seconds, target_name

Row = dict[str, Any]
NATIVE = {"discord": "discordWebhookUrl", "slack": "slackwebhookURL", "teams": "webhookUrl", "GoogleChat": "googleChatWebhookURL"}
WEEKDAYS = {0: "SU", 1: "MO", 2: "TU", 3: "WE", 4: "TH", 5: "FR", 6: "SA", 7: "SU"}
PAGE_SKIPPED = {
    "footer_text": "a status page here has no footer text",
    "custom_css": "a status page here has its own style",
    "google_analytics_tag_id": "status pages here load no analytics",
    "analytics_id": "status pages here load no analytics",
    "password": "status pages here are public",
}


def _get(config: dict[str, Any], key: str) -> str:
    return quote(str(config.get(key) or ""), safe="")


def apprise_url(config: dict[str, Any]) -> str | None:
    """The Apprise URL of a Kuma notification's settings, or None where Apprise has no service for it."""
    kind = str(config.get("type"))
    if kind in NATIVE:
        return str(config.get(NATIVE[kind]) or "") or None
    if kind == "apprise":
        return str(config.get("appriseNotificationUrl") or "") or None
    if kind == "telegram":
        return f"tgram://{_get(config, 'telegramBotToken')}/{_get(config, 'telegramChatID')}"
    if kind == "pushover":
        return f"pover://{_get(config, 'pushoveruserkey')}@{_get(config, 'pushoverapptoken')}"
    if kind == "smtp":
        secure = "s" if config.get("smtpSecure") else ""
        login = f"{_get(config, 'smtpUsername')}:{_get(config, 'smtpPassword')}@" if config.get("smtpUsername") else ""
        where = f"{config.get('smtpHost')}:{config.get('smtpPort') or 25}"
        return f"mailto{secure}://{login}{where}?from={_get(config, 'smtpFrom')}&to={_get(config, 'smtpTo')}"
    server_key = {"ntfy": "ntfyserverurl", "gotify": "gotifyserverurl", "mattermost": "mattermostWebhookUrl", "matrix": "homeserverUrl"}
    if kind not in server_key:
        return None
    parts = urlsplit(str(config.get(server_key[kind]) or ""))
    secure = "s" if parts.scheme == "https" else ""
    if kind == "ntfy":
        login = f"{_get(config, 'ntfyusername')}:{_get(config, 'ntfypassword')}@" if config.get("ntfyusername") else ""
        return f"ntfy{secure}://{login}{parts.netloc}/{_get(config, 'ntfytopic')}"
    if kind == "gotify":
        return f"gotify{secure}://{parts.netloc}/{_get(config, 'gotifyapplicationToken')}"
    if kind == "mattermost":
        return f"mmost{secure}://{parts.netloc}/{parts.path.rpartition('/')[2]}"
    return f"matrix{secure}://{_get(config, 'accessToken')}@{parts.netloc}/{_get(config, 'internalRoomId')}"


class Receivers:
    """Kuma's notifications as receivers, and which of them each monitor sends to."""

    def __init__(self, imported: Import, notifications: list[Row], links: list[Row]) -> None:
        self.imported = imported
        self.names: dict[int, str] = {}  # notification id -> receiver name
        self.notify: list[str] = []
        self.webhooks: list[dict[str, Any]] = []
        self.silent: list[dict[str, Any]] = []
        self.links: dict[int, list[int]] = {}
        for link in links:
            self.links.setdefault(link["monitor_id"], []).append(link["notification_id"])
        taken: set[str] = {"apprise", "alertmanager"}
        for row in notifications:
            self._notification(row, taken)

    def _notification(self, row: Row, taken: set[str]) -> None:
        where = f"notification {row['id']} ({row.get('name')})"
        if not row.get("active", 1):
            self.imported.skip(where, "switched off in Kuma")
            return
        config = parsed(row.get("config") or "{}")
        if not isinstance(config, dict):
            self.imported.skip(where, "its settings are not a JSON object")
            return
        if config.get("type") == "webhook" and config.get("webhookURL"):
            name = target_name(str(row.get("name") or "webhook"), taken)[:64]
            webhook = {"name": name, "url": str(config["webhookURL"])}
            if not admit_webhook(self.imported, f"{where}.webhookURL", webhook):
                return
            self.webhooks.append(webhook)
            self.names[row["id"]] = name
            if config.get("webhookContentType") == "custom":
                _custom_body(self.imported, where, config, webhook)
            elif config.get("webhookContentType") == "form-data":
                self.imported.skip(f"{where}.webhookContentType", "form-data: a webhook here sends JSON (or its body template)")
            return
        url = apprise_url(config)
        if url is None or not _apprise_understands(url):
            self.imported.skip(where, f"no Apprise service or webhook here carries a {config.get('type')} notification as configured")
            return
        self.notify.append(url)
        self.names[row["id"]] = "apprise"

    def apply(self, monitor: Row, target: dict[str, Any]) -> None:
        receivers = list(dict.fromkeys(self.names[n] for n in self.links.get(monitor["id"], []) if n in self.names))
        if not receivers:
            self.silent.append(target)
            return
        policy: dict[str, Any] = {"receivers": receivers}
        resend = int(monitor.get("resend_interval") or 0)  # in checks: every resend_interval-th check while down
        if resend:
            policy["repeat_every"] = seconds(max(60.0, resend * float(monitor.get("interval") or 60)))
        target["alerts"] = policy

    def finish(self) -> None:
        section: dict[str, Any] = {}
        if self.notify:
            section["notify"] = self.notify
            self.imported.note("every Apprise channel hears every target that sends to any of them (one receiver: apprise)")
        if self.webhooks:
            section["webhooks"] = self.webhooks
        if section:
            self.imported.note("a monitor pages when its retries are used up and recovers at one pass, as in Kuma (no window nor flapping)")
            self.imported.config["alerts"] = section
            for target in self.silent:
                target["alerts"] = {"receivers": []}  # no notification in Kuma: pages nobody


def _apprise_understands(url: str) -> bool:
    import apprise

    return apprise.Apprise.instantiate(url, suppress_exceptions=True) is not None


def status_pages(imported: Import, db: Database, names: dict[int, str]) -> None:
    groups = db.rows("group", "weight, id")
    links = db.rows("monitor_group", "weight, id")
    incidents = [row for row in db.rows("incident") if row.get("pin") and row.get("active", 1)]
    pages = []
    for page in db.rows("status_page"):
        where = f"status page {page['slug']}"
        if not page.get("published", 1):
            imported.skip(where, "not published in Kuma")
            continue
        found = []
        for group in (g for g in groups if g.get("status_page_id") == page["id"]):
            targets = [names[link["monitor_id"]] for link in links if link["group_id"] == group["id"] and link["monitor_id"] in names]
            if targets:
                found.append({"name": str(group["name"])[:200] or "Services", "targets": targets})
            else:
                imported.skip(f"{where}: group {group['name']}", "none of its monitors was carried")
        if found:
            pages.append(_page(imported, where, page, found, [i for i in incidents if i.get("status_page_id") == page["id"]]))
        else:
            imported.skip(where, "none of its monitors was carried")
    if pages:
        imported.serve_pages(pages)


def _page(imported: Import, where: str, page: Row, groups: list[Row], notes: list[Row]) -> dict[str, Any]:
    found: dict[str, Any] = {"slug": str(page["slug"]), "title": str(page.get("title") or page["slug"])[:200]}
    parts = [str(page.get("description") or "")] + [f"{note['title']}: {note.get('content') or ''}" for note in notes]
    if any(parts):
        found["description"] = "\n\n".join(part for part in parts if part)[:2000]
    if notes:
        imported.skip(f"{where}: incident", "a pinned incident here is a dated public note of an incident; it joins the page's description")
    icon = str(page.get("icon") or "")
    if icon.startswith(("http://", "https://")):
        if (logo := http_url(imported, f"{where}.icon", icon)) is not None:
            found["logo"] = logo
    elif icon and icon != "/icon.svg":
        imported.skip(f"{where}.icon", f"{icon}: a logo here is an http(s) URL, not a file uploaded to Kuma")
    for column, why in PAGE_SKIPPED.items():
        if page.get(column):
            imported.skip(f"{where}.{column}", why)
    return {**found, "groups": groups}


def maintenance(imported: Import, db: Database, names: dict[int, str]) -> None:
    covered: dict[int, list[str]] = {}
    for link in db.rows("monitor_maintenance"):
        if link["monitor_id"] in names:
            covered.setdefault(link["maintenance_id"], []).append(names[link["monitor_id"]])
    windows = []
    for row in db.rows("maintenance"):
        where = f"maintenance {row['id']} ({row.get('title')})"
        if not row.get("active", 1):
            imported.skip(where, "switched off in Kuma")
        elif not covered.get(row["id"]):
            imported.skip(where, "none of its monitors was carried (a window on a status page only is not)")
        elif (window := _readable_window(imported, where, row)) is not None:
            windows.append({"targets": covered[row["id"]], **window, "reason": str(row.get("title") or "maintenance")[:200]})
    if windows:
        imported.config["maintenance"] = windows


def _readable_window(imported: Import, where: str, row: Row) -> dict[str, Any] | None:
    try:
        return _window(imported, where, row)
    except (ValueError, TypeError, KeyError, OverflowError):  # a schedule written by hand into the database
        imported.skip(where, "its schedule cannot be read (days, times or duration are not Kuma's)")
        return None


def _window(imported: Import, where: str, row: Row) -> dict[str, Any] | None:
    """A window's schedule: start and end, or an RRULE and a duration, in its time zone."""
    zone = str(row.get("timezone") or "UTC")
    if zone in ("SAME_AS_SERVER", ""):
        imported.skip(f"{where}.timezone", "the Kuma server's own zone is not known here: UTC is used")
        zone = "UTC"
    strategy = row.get("strategy")
    if strategy == "single" and row.get("start_date") and row.get("end_date"):
        start, end = (_moment(row[key]) for key in ("start_date", "end_date"))
        return {"start": start, "end": end, "timezone": zone} if start and end else None
    rule, length = _rule(row), _length(row)
    if rule is None or not length:
        imported.skip(where, f"a {strategy} window has no counterpart here (one-off and recurring windows do)")
        return None
    found: dict[str, Any] = {"rrule": rule, "duration": seconds(length), "timezone": zone}
    if row.get("start_date"):
        found["start"] = _moment(row["start_date"])
    return found


def _moment(text: Any) -> str | None:
    try:
        return datetime.fromisoformat(str(text).replace(" ", "T")).replace(tzinfo=None).isoformat()
    except ValueError:
        return None


def _clock(text: Any) -> tuple[int, int] | None:
    """Kuma's start_time: ``02:30`` or ``{"hours": 2, "minutes": 30}``."""
    value = parsed(text)
    if isinstance(value, dict):
        return int(value.get("hours", 0)), int(value.get("minutes", 0))
    hour, _, minute = str(text or "").partition(":")
    return (int(hour), int(minute[:2] or 0)) if hour.isdigit() else None


def _rule(row: Row) -> str | None:
    clock = _clock(row.get("start_time"))
    if clock is None:
        return None
    at = f"BYHOUR={clock[0]};BYMINUTE={clock[1]};BYSECOND=0"
    listed = parsed(row.get("weekdays")) or [], parsed(row.get("days_of_month")) or []
    if row.get("strategy") == "recurring-interval":
        return f"FREQ=DAILY;INTERVAL={max(1, int(row.get('interval_day') or 1))};{at}"
    if row.get("strategy") == "recurring-weekday" and listed[0]:
        return f"FREQ=WEEKLY;BYDAY={','.join(WEEKDAYS[int(day)] for day in listed[0])};{at}"
    if row.get("strategy") == "recurring-day-of-month" and listed[1]:
        days = [str(-int(str(day)[7:] or 1)) if str(day).startswith("lastDay") else str(day) for day in listed[1]]
        return f"FREQ=MONTHLY;BYMONTHDAY={','.join(days)};{at}"
    return None


def _length(row: Row) -> float | None:
    """How long each window lasts: Kuma 2's ``duration`` (minutes), else from start_time to end_time."""
    if row.get("duration"):
        return float(row["duration"]) * 60
    start, end = _clock(row.get("start_time")), _clock(row.get("end_time"))
    if start is None or end is None:
        return None
    minutes = (end[0] * 60 + end[1] - start[0] * 60 - start[1]) % (24 * 60)
    return minutes * 60.0 or None


def _custom_body(imported: Import, where: str, config: dict[str, Any], webhook: dict[str, Any]) -> None:
    """Kuma's custom body, a Liquid template of ``msg``, ``monitorJSON`` and ``heartbeatJSON``: the same words in a
    Jinja2 template (this project's webhook body, rendered in a sandbox); a Liquid filter Jinja2 lacks is reported."""
    from monitor.config import templates

    body = str(config.get("webhookCustomBody") or "")
    if not body.strip():
        return
    try:
        templates.check(body)
    except templates.TemplateError as exc:
        imported.skip(f"{where}.webhookCustomBody", f"not read as a Jinja2 template ({exc}); this project's JSON alert is sent")
        return
    webhook["body"] = body
    headers = parsed(config.get("webhookAdditionalHeaders") or "{}") if config.get("webhookAdditionalHeaders") else {}
    if isinstance(headers, dict) and headers:
        webhook["headers"] = {str(key): str(value) for key, value in headers.items()}
