"""Gatus' ``alerting:`` providers and per-endpoint ``alerts``, ``maintenance`` and ``ui``, as this project has them.

A provider Apprise can carry (Slack, Discord, Teams, Google Chat, Mattermost, Telegram, ntfy, Pushover, Gotify,
Opsgenie, e-mail) becomes an ``alerts.notify`` URL, and alerts of its type go to the ``apprise`` receiver;
``custom`` becomes a webhook named ``custom``, its ``body`` a template (Gatus' placeholders written as the
template's values: :data:`PLACEHOLDERS`) sent with its ``method``. Each enabled alert keeps its thresholds: the
target's incident opens at the smallest ``failure-threshold`` (``detectors.consecutive``) and resolves at the
largest ``success-threshold`` (``detectors.recover_after``), and a receiver whose alert says otherwise gets
``alerts.per_receiver`` (it hears at its own checks, :mod:`monitor.incidents.paging`); the window and flapping
detectors, which Gatus has not, are off. An endpoint without alerts pages nobody, as in Gatus.
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
# Gatus' custom alert placeholders, as a webhook body template's values (monitor/alerts/webhook.py)
PLACEHOLDERS = {
    "ALERT_DESCRIPTION": "description",
    "ENDPOINT_NAME": "target",
    "ENDPOINT_GROUP": "group",
    "ENDPOINT_URL": "url",
    "RESULT_ERRORS": "errors",
}
PLACEHOLDER = re.compile(r"\[(ALERT_TRIGGERED_OR_RESOLVED|" + "|".join(PLACEHOLDERS) + r")\]")


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
            _custom(self.imported, settings, webhook)
            self.webhooks.append(webhook)
            self.receivers[kind] = "custom"
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
        self._policy(where, enabled, target)

    def _policy(self, where: str, enabled: list[tuple[int, dict[str, Any]]], target: dict[str, Any]) -> None:
        own: dict[str, tuple[int, int, bool]] = {}  # receiver -> its alert's failures, successes, send-on-resolved
        for index, alert in enabled:
            receiver, said = self.receivers[alert["type"]], _thresholds(alert)
            if own.setdefault(receiver, said) != said:
                kept = "{}/{}".format(*own[receiver][:2])
                why = f"a second alert to the {receiver} receiver: its first alert's thresholds ({kept}) are kept"
                self.imported.skip(f"{where}[{index}]", why)
            if alert.get("description"):
                why = "a message here says the incident (a body template's description is its summary)"
                self.imported.skip(f"{where}[{index}].description", why)
            if alert.get("provider-override"):
                self.imported.skip(f"{where}[{index}].provider-override", "a receiver here has one destination for every target")
        failures, successes = min(f for f, _, _ in own.values()), max(s for _, s, _ in own.values())
        # Gatus pages on failures in a row only: no window of failures, no flapping
        target["detectors"] = {"consecutive": failures, "recover_after": successes, "window": False, "flapping": False}
        resolved = next(iter(own.values()))[2]
        policy: dict[str, Any] = {"receivers": list(own), "send_resolved": resolved}
        per_receiver = {
            name: {"failures": f, "successes": s, **({"send_resolved": r} if r != resolved else {})}
            for name, (f, s, r) in own.items()
            if (f, s, r) != (failures, successes, resolved)
        }
        if per_receiver:
            policy["per_receiver"] = per_receiver
        first = enabled[0][1]
        reminder = go_duration(first.get("minimum-reminder-interval") or 0)
        if reminder:
            policy["repeat_every"] = seconds(max(60.0, reminder))
            if len(enabled) > 1:
                self.imported.skip(f"{where}[0].minimum-reminder-interval", "one reminder period per target here: the first alert's")
        target["alerts"] = policy

    def finish(self) -> None:
        """The ``alerts:`` section; endpoints without alerts page nobody, as in Gatus."""
        section: dict[str, Any] = {}
        if self.notify:
            section["notify"] = self.notify
        if self.webhooks:
            section["webhooks"] = self.webhooks
        if not section:
            return
        self.imported.note(
            "thresholds kept per alert: a target's incident opens at its smallest failure-threshold and resolves at its largest "
            "success-threshold, each receiver hears at its own (alerts.per_receiver); the window and flapping detectors, which Gatus "
            "has not, are off (detectors.window, detectors.flapping: false)"
        )
        self.imported.config["alerts"] = section
        for target in self.silent:
            target["alerts"] = {"receivers": []}


def _thresholds(alert: dict[str, Any]) -> tuple[int, int, bool]:
    """An alert's failure-threshold, success-threshold and send-on-resolved, with Gatus' defaults (3, 2, false)."""
    return int(alert.get("failure-threshold", 3)), int(alert.get("success-threshold", 2)), bool(alert.get("send-on-resolved", False))


def _custom(imported: Import, settings: dict[str, Any], webhook: dict[str, Any]) -> None:
    """The custom provider's method (Gatus' default: GET) and body, a template of Gatus' placeholders."""
    method = str(settings.get("method") or "GET").upper()
    if method in ("POST", "PUT", "PATCH", "GET", "DELETE"):
        webhook["method"] = method
    else:
        imported.skip("alerting.custom.method", f"{method}: a webhook here sends POST, PUT, PATCH, GET or DELETE; POST is sent")
    states = (settings.get("placeholders") or {}).get("ALERT_TRIGGERED_OR_RESOLVED") or {}
    states = states if isinstance(states, dict) else {}
    for key in sorted(set(settings.get("placeholders") or {}) - {"ALERT_TRIGGERED_OR_RESOLVED"}):
        imported.skip(f"alerting.custom.placeholders.{key}", "Gatus replaces only ALERT_TRIGGERED_OR_RESOLVED's values")
    if settings.get("body"):
        triggered, resolved = str(states.get("TRIGGERED", "TRIGGERED")), str(states.get("RESOLVED", "RESOLVED"))
        webhook["body"] = template(str(settings["body"]), triggered, resolved)
    for where, text in [("url", str(settings.get("url"))), *((f"headers.{k}", str(v)) for k, v in (settings.get("headers") or {}).items())]:
        if PLACEHOLDER.search(text):
            imported.skip(f"alerting.custom.{where}", "placeholders here are sent as written: only the body is a template")


def template(body: str, triggered: str, resolved: str) -> str:
    """A Gatus custom alert body as a Jinja2 template: each placeholder a value, the rest as written (raw where it
    has Jinja2's own brackets)."""
    import json

    parts, place = [], 0
    for match in PLACEHOLDER.finditer(body):
        parts.append(_literal(body[place : match.start()]))
        name = match.group(1)
        words = [json.dumps(word, ensure_ascii=False) for word in (resolved, triggered)]
        said = PLACEHOLDERS.get(name) or f"{words[0]} if resolved else {words[1]}"
        parts.append("{{ " + said + " }}")
        place = match.end()
    return "".join([*parts, _literal(body[place:])])


def _literal(text: str) -> str:
    return "{% raw %}" + text + "{% endraw %}" if any(mark in text for mark in ("{{", "{%", "{#")) else text


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
