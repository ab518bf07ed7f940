"""``alerts:``, where incidents are sent: webhooks, Alertmanager, Apprise, and how hard delivery tries."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from monitor.config.values import Duration, Headers, HttpUrl, Strict, Wait, http_url
from monitor.core import urls


class Webhook(Strict):
    url: HttpUrl
    headers: Headers = Field(default_factory=dict)
    # what alert rules call it (targets[].alerts.receivers, alert_rules[].receivers)
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")


class AlertsConfig(Strict):
    webhooks: list[Webhook] = Field(default_factory=list)
    # one Alertmanager, or the members of an HA cluster: each gets every alert, as Prometheus sends them
    alertmanager: list[HttpUrl] = Field(default_factory=list)
    retry_max: Duration = 300.0
    max_age: Duration = 86400.0  # an undelivered notification older than this is dropped, not sent late
    max_attempts: int = Field(default=100, ge=1)  # and one tried this often
    # the ``instance`` label of every alert (default: the host name), so installs never merge alerts
    instance: str | None = Field(default=None, min_length=1, max_length=128)
    # Apprise URLs (https://github.com/caronc/apprise/wiki): Slack, Teams, Telegram, e-mail, ntfy, ...
    notify: list[str] = Field(default_factory=list)
    # the receivers of a target no rule names receivers for (see monitor/config/rules.py); None: all of them
    default_receivers: list[str] | None = None
    # incidents opening within this long of each other (or sharing a component) are one message; with the
    # agent off, first messages wait this long for the rest of their outage (0: sent at once, not grouped)
    group_window: Wait = 0.0
    # the first message of an incident the agent investigates waits this long for its diagnosis
    wait_for_diagnosis: Wait = 30.0  # 0s: sent at once, a diagnosis follows as an update

    @field_validator("alertmanager", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [] if value is None else [http_url(value)] if isinstance(value, str) else value

    @field_validator("notify")
    @classmethod
    def _apprise_urls(cls, value: list[str]) -> list[str]:
        if value:
            import apprise  # only for configs that use it: it loads its ~100 service plugins

            for url in value:
                if apprise.Apprise.instantiate(url, suppress_exceptions=True) is None:
                    raise ValueError(f"{urls.redact(url)!r}: no Apprise service understands this URL")
        return value
