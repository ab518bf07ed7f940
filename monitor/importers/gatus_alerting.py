"""Gatus' ``alerting:`` providers and per-endpoint ``alerts``, ``maintenance`` and ``ui``, as this project has them.

A provider Apprise can carry (Slack, Discord, Teams, Google Chat, Mattermost, Telegram, ntfy, Pushover, Gotify,
Opsgenie, e-mail) becomes an ``alerts.notify`` URL, and alerts of its type go to the ``apprise`` receiver;
``custom`` becomes a webhook named ``custom``. An endpoint's first enabled alert sets its thresholds
(``failure-threshold`` -> ``detectors.consecutive``, ``success-threshold`` -> ``detectors.recover_after``),
``send-on-resolved`` and ``minimum-reminder-interval``; an endpoint without alerts pages nobody, as in Gatus.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

from monitor.importers.report import Import, admit_webhook, go_duration, http_url, seconds

DAYS = {"monday": "MO", "tuesday": "TU", "wednesday": "WE", "thursday": "TH", "friday": "FR", "saturday": "SA", "sunday": "SU"}
NATIVE = ("slack", "discord", "googlechat", "teams", "teams-workflows")  # Apprise reads their webhook URLs as they are
PROVIDER_SKIPPED = {
    "overrides": "per-group destinations: a receiver here has one destination for every target",
    "title": "an alert's title here is the incident's",
    "insecure": "Apprise verifies the service's certificate",
}
UI_CARRIED = {"title", "header", "description", "dashboard-subheading", "logo"}


class Alerting:
    """The receivers of a Gatus ``alerting:`` section, and the alert policy of each endpoint."""

    def __init__(self, providers: dict[str, Any], imported: Import) -> None:
        self.imported = imported
        self.receivers: dict[str, str] = {}  # Gatus alert type -> receiver name here
        self.defaults: dict[str, dict[str, Any]] = {}
        self.notify: list[str] = []
        self.webhooks: list[dict[str, Any]] = []
        self.silent: list[dict[str, Any]] = []
        for kind, settings in providers.items() if isinstance(providers, dict) else []:
            self._provider(str(kind), settings if isinstance(settings, dict) else {})

    def _provider(self, kind: str, settings: dict[str, Any]) -> None:
        self.defaults[kind] = settings.get("default-alert") or {}
        for key, why in PROVIDER_SKIPPED.items():
            if key in settings:
                self.imported.skip(f"alerting.{kind}.{key}", why)
        if kind == "custom" and settings.get("url"):
            webhook = {"name": "custom", "url": str(settings["url"]), **_headers(settings)}
            if not admit_webhook(self.imported, "alerting.custom", webhook):
                return
            self.webhooks.append(webhook)
            self.receivers[kind] = "custom"
            for key in ("method", "body", "placeholders"):
                if key in settings:
                    self.imported.skip(f"alerting.custom.{key}", "a webhook here POSTs this project's JSON alert, not a template")
            return
        url = apprise_url(kind, settings)
        if url is None or not _apprise_understands(url):
            self.imported.skip(f"alerting.{kind}", f"no Apprise service or webhook here carries Gatus' {kind} provider as configured")
            return
        self.notify.append(url)
        self.receivers[kind] = "apprise"

    def apply(self, where: str, alerts: Any, target: dict[str, Any]) -> None:
        """The target's ``alerts`` and ``detectors`` from its Gatus alerts (none: it pages nobody)."""
        enabled = []
        for index, alert in enumerate(alerts if isinstance(alerts, list) else []):
            alert = {**self.defaults.get(str(alert.get("type")), {}), **alert} if isinstance(alert, dict) else {}
            if alert.get("enabled") is False:
                self.imported.skip(f"{where}[{index}]", "disabled in Gatus")
            elif alert.get("type") not in self.receivers:
                self.imported.skip(f"{where}[{index}]", f"type {alert.get('type')}: its provider was not carried (see alerting)")
            else:
                enabled.append((index, alert))
        if not enabled:
            self.silent.append(target)
            return
        receivers = list(dict.fromkeys(self.receivers[alert["type"]] for _, alert in enabled))
        self._policy(where, enabled, target, receivers)

    def _policy(self, where: str, enabled: list[tuple[int, dict[str, Any]]], target: dict[str, Any], receivers: list[str]) -> None:
        first = enabled[0][1]
        failures, successes = int(first.get("failure-threshold", 3)), int(first.get("success-threshold", 2))
        if (failures, successes) != (3, 2):  # this project's defaults are Gatus' (consecutive: 3, recover_after: 2)
            target["detectors"] = {"consecutive": failures, "window_failures": failures, "window_size": max(10, failures)}
            target["detectors"]["recover_after"] = successes
        policy: dict[str, Any] = {"receivers": receivers, "send_resolved": bool(first.get("send-on-resolved", False))}
        reminder = go_duration(first.get("minimum-reminder-interval") or 0)
        if reminder:
            policy["repeat_every"] = seconds(max(60.0, reminder))
        target["alerts"] = policy
        for index, alert in enabled:
            if alert.get("description"):
                self.imported.skip(f"{where}[{index}].description", "an alert here says the incident and its diagnosis, not a fixed text")
            if alert.get("provider-override"):
                self.imported.skip(f"{where}[{index}].provider-override", "a receiver here has one destination for every target")
            thresholds = (alert.get("failure-threshold", 3), alert.get("success-threshold", 2))
            if index != enabled[0][0] and thresholds != (failures, successes):
                kept = f"the first alert's ({failures}/{successes}) is kept"
                self.imported.skip(f"{where}[{index}]", f"one threshold per target here: {kept}")

    def finish(self) -> None:
        """The ``alerts:`` section; endpoints without alerts page nobody, as in Gatus."""
        section: dict[str, Any] = {}
        if self.notify:
            section["notify"] = self.notify
        if self.webhooks:
            section["webhooks"] = self.webhooks
        if not section:
            return
        self.imported.config["alerts"] = section
        for target in self.silent:
            target["alerts"] = {"receivers": []}


def _headers(settings: dict[str, Any]) -> dict[str, Any]:
    headers = settings.get("headers")
    return {"headers": {str(k): str(v) for k, v in headers.items()}} if isinstance(headers, dict) and headers else {}


def _apprise_understands(url: str) -> bool:
    import apprise

    return apprise.Apprise.instantiate(url, suppress_exceptions=True) is not None


def apprise_url(kind: str, settings: dict[str, Any]) -> str | None:
    """The Apprise URL of a Gatus provider's settings, or None where Apprise has no service for it."""

    def get(key: str) -> str:
        return quote(str(settings.get(key) or ""), safe="")

    hook = str(settings.get("webhook-url") or "")
    if kind in NATIVE and hook:
        return hook
    if kind in ("mattermost", "gotify", "ntfy"):
        parts = urlsplit(
            hook if kind == "mattermost" else str(settings.get("url" if kind == "ntfy" else "server-url") or "https://ntfy.sh")
        )
        secure = "s" if parts.scheme == "https" else ""
        if kind == "mattermost":
            return f"mmost{secure}://{parts.netloc}/{parts.path.rpartition('/')[2]}" if "/hooks/" in parts.path else None
        if kind == "gotify":
            return f"gotify{secure}://{parts.netloc}/{get('token')}"
        token = f"{get('token')}@" if settings.get("token") else ""
        return f"ntfy{secure}://{token}{parts.netloc}/{get('topic')}"
    forms = {
        "telegram": "tgram://{token}/{id}",
        "pushover": "pover://{user-key}@{application-token}",
        "opsgenie": "opsgenie://{api-key}",
        "email": "mailtos://{username}:{password}@{host}:{port}?from={from}&to={to}",
    }
    if kind not in forms:
        return None
    return re.sub(r"\{([a-z-]+)\}", lambda match: get(match.group(1)), forms[kind])


def rule(start: Any, every: Any) -> str | None:
    """The RRULE of a Gatus window: ``start`` (``23:00``; YAML 1.1 may have read it as minutes, 1380) on ``every`` day."""
    if isinstance(start, int) and not isinstance(start, bool):
        hour, minute = divmod(start, 60)
    else:
        match = re.fullmatch(r"(\d{1,2}):(\d{2})", str(start or "").strip())
        if match is None:
            return None
        hour, minute = int(match.group(1)), int(match.group(2))
    days = [DAYS.get(str(day).lower()) for day in (every or [])]
    if hour > 23 or minute > 59 or None in days:
        return None
    when = f"BYHOUR={hour};BYMINUTE={minute};BYSECOND=0"
    return f"FREQ=WEEKLY;BYDAY={','.join(str(day) for day in days)};{when}" if days else f"FREQ=DAILY;{when}"


def window(imported: Import, where: str, settings: Any, targets: list[str]) -> dict[str, Any] | None:
    """A recurring maintenance window from Gatus' ``start``, ``duration``, ``timezone`` and ``every``."""
    if not isinstance(settings, dict) or settings.get("enabled") is False:
        imported.skip(where, "disabled in Gatus" if isinstance(settings, dict) else "not a window")
        return None
    recurring, duration = rule(settings.get("start"), settings.get("every")), go_duration(settings.get("duration") or "")
    if recurring is None or not duration or not targets:
        imported.skip(where, "a window needs start (hh:mm), duration and days of the week, and targets")
        return None
    found: dict[str, Any] = {"targets": targets, "rrule": recurring, "duration": seconds(duration)}
    found["timezone"] = str(settings.get("timezone") or "UTC")
    return {**found, "reason": "maintenance (from Gatus)"}


def maintenance(imported: Import, settings: Any, targets: list[str]) -> None:
    """Gatus' global window, over every target."""
    if settings is not None and (found := window(imported, "maintenance", settings, targets)) is not None:
        imported.config.setdefault("maintenance", []).insert(0, found)


def windows(imported: Import, where: str, settings: Any, name: str) -> None:
    for index, each in enumerate(settings if isinstance(settings, list) else []):
        if (found := window(imported, f"{where}[{index}]", each, [name])) is not None:
            imported.config.setdefault("maintenance", []).append(found)


def status_page(imported: Import, ui: dict[str, Any], groups: dict[str, list[str]]) -> None:
    """Gatus' dashboard, public, shows every endpoint by group: a status page of them, titled as the ``ui`` says."""
    for key in sorted(set(ui) - UI_CARRIED) if isinstance(ui, dict) else []:
        imported.skip(f"ui.{key}", "how Gatus' dashboard looks; a status page here has a title, description and logo")
    if not groups:
        return
    page: dict[str, Any] = {"slug": "status", "title": str(ui.get("title") or ui.get("header") or "Health Dashboard")[:200]}
    description = ui.get("description") or ui.get("dashboard-subheading")
    if description:
        page["description"] = str(description)[:2000]
    if ui.get("logo") and (logo := http_url(imported, "ui.logo", ui["logo"])) is not None:
        page["logo"] = logo
    page["groups"] = [{"name": group or "Endpoints", "targets": names} for group, names in groups.items()]
    imported.serve_pages([page])
