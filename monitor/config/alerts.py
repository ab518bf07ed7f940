"""``alerts:``, where incidents are sent: webhooks, Alertmanager, Apprise, and how hard delivery tries.

Every receiver kind is a :class:`ReceiverKind`, declared here, the one registry of them, and named in the
``monitor.receivers`` entry point group of its distribution (``name = "module:RECEIVER"``; monitor's own three in
``pyproject.toml``, their sections the config's own fields). A kind of a package of its own adds a section,
``alerts.<name>``, validated by the kind's model as any part of the config (its errors under ``alerts.<name>``)
and read back with :meth:`AlertsConfig.receiver_settings`; a config that names it loads it, as a target of a
plugin's check kind loads that kind. Rules call its receivers ``<name>``. Nothing here names such a kind, and
nothing above the config is imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from monitor.config.sections import validated
from monitor.config.values import Duration, Headers, HttpUrl, Strict, Wait, http_url
from monitor.core import plugins, urls

BUILTIN_RECEIVERS = ("webhook", "apprise", "alertmanager")  # the outbox prefixes and rule names of the built-in ones


@dataclass(frozen=True)
class ReceiverKind:
    """A receiver kind: its ``name`` (``alerts.<name>``, what rules call its receivers, the prefix of their outbox
    names), the pydantic model of its ``settings``, and ``make(section)``, its receiver (or receivers) from its
    validated section (a :data:`monitor.alerts.receivers.Receiver`; typed Any here, below the alerts). A built-in
    kind's section is the config's own ``field`` (``webhooks``, ``notify``, ``alertmanager``), not a declared one."""

    name: str
    settings: type[BaseModel] | None = None
    make: Callable[[Any], Any] | None = None
    field: str | None = None


_DECLARED: dict[str, ReceiverKind] = {}


def declare_receiver(kind: ReceiverKind) -> ReceiverKind:
    """Make ``kind`` known (a kind of a package of its own: ``alerts.<kind.name>`` a section of the config);
    declaring the same kind again is fine, another is refused."""
    builtin = kind.name in BUILTIN_RECEIVERS and kind.field in AlertsConfig.model_fields
    taken = (*BUILTIN_RECEIVERS, *AlertsConfig.model_fields)
    if not builtin and (not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", kind.name) or kind.name in taken):
        raise ValueError(f"{kind.name!r} cannot name a receiver kind: it is taken, or not a lower-case word")
    if not builtin and kind.settings is None:
        raise ValueError(f"receiver kind {kind.name!r} declares no settings")
    known = _DECLARED.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"receiver kind {kind.name!r} is already declared")
    _DECLARED[kind.name] = kind
    return kind


def forget_receiver(name: str) -> None:
    """Undeclare a receiver kind (a test's); an installed one is loaded again when a config names it."""
    _DECLARED.pop(name, None)


def receiver_kind(name: str) -> ReceiverKind | None:
    """Receiver kind ``name``: declared, or an installed package's (its ``monitor.receivers`` entry point, loaded on
    first ask, a built-in one's as a plugin's); None if there is none."""
    point = plugins.table(plugins.RECEIVERS, BUILTIN_RECEIVERS).get(name)
    if name not in _DECLARED and point is not None:
        loaded = point.load()  # ``module:RECEIVER``, its declaration; or a module that declares itself
        if isinstance(loaded, ReceiverKind) and loaded.name == name:
            declare_receiver(loaded)
        if name not in _DECLARED:
            raise ValueError(f"entry point {point.value!r} of {plugins.RECEIVERS} declares no receiver kind {name!r}")
    if name not in _DECLARED and name in BUILTIN_RECEIVERS:
        raise plugins.missing(plugins.RECEIVERS, name)
    return _DECLARED.get(name)


def section_of(name: str) -> type[BaseModel] | None:
    """The model of ``alerts.<name>``, the section of a receiver kind that is not built in; None if there is none."""
    kind = receiver_kind(name) if name not in BUILTIN_RECEIVERS else None
    return kind.settings if kind is not None else None


def receiver_kinds() -> list[str]:
    """The names of the receiver kinds that add a section of their own: declared, or installed (not loaded)."""
    installed = plugins.table(plugins.RECEIVERS, BUILTIN_RECEIVERS)
    return [name for name in dict.fromkeys([*_DECLARED, *installed]) if name not in BUILTIN_RECEIVERS]


class Webhook(Strict):
    url: HttpUrl
    headers: Headers = Field(default_factory=dict)
    # what alert rules call it (targets[].alerts.receivers, alert_rules[].receivers)
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    # the request's method, and its body as a Jinja2 template (sandboxed: monitor/config/templates.py; docs/alerting.md
    # names its values); without a body, this project's JSON alert is POSTed
    method: Literal["POST", "PUT", "PATCH", "GET", "DELETE"] = "POST"
    body: str | None = Field(default=None, min_length=1, max_length=65536)

    @field_validator("body")
    @classmethod
    def _a_template(cls, value: str | None) -> str | None:
        from monitor.config import templates

        if value is not None:
            try:
                templates.check(value)
            except templates.TemplateError as exc:
                raise ValueError(f"not a template: {exc}") from None
        return value


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
    _declared: dict[str, BaseModel] = PrivateAttr(default_factory=dict)  # the sections of declared receiver kinds

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

    @model_validator(mode="wrap")
    @classmethod
    def _declared_sections(cls, data: Any, handler: ModelWrapValidatorHandler[AlertsConfig]) -> AlertsConfig:
        """Each section of a declared receiver kind, validated by the kind's model; the rest as the fields say."""
        if not isinstance(data, dict):
            return handler(data)
        models = {key: model for key in data if isinstance(key, str) and key not in cls.model_fields and (model := section_of(key))}
        sections = {name: validated(name, model, data[name]) for name, model in models.items() if data[name] is not None}
        made = handler({key: value for key, value in data.items() if key not in models})
        made._declared = sections
        return made

    @model_serializer(mode="wrap")
    def _dump_declared(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            data.update({name: settings.model_dump(mode=info.mode) for name, settings in self._declared.items()})
        return data

    def receiver_settings(self) -> dict[str, BaseModel]:
        """The sections of declared receiver kinds this config has, by kind."""
        return dict(self._declared)

    @classmethod
    def section_model(cls, name: str) -> type[BaseModel] | None:
        """The model of a declared receiver kind's section (for the fields an error lists)."""
        return section_of(name)

    @classmethod
    def sections(cls) -> list[str]:
        """The sections declared receiver kinds add (for the fields an error lists)."""
        return receiver_kinds()
