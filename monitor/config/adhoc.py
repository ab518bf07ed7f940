"""The targets of ad-hoc checks of URLs (``monitor check URL``): validated as a config's targets are, without the
rest of a config.

A one-shot check's time is mostly its start-up, and the models of a whole config (agent, alerts, memory, status
pages, probe) cost more to build than checking a URL does: :func:`targets` loads the target models alone.
:func:`monitor.config.loader.for_urls` puts the same targets in a whole :class:`~monitor.config.schema.Config`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, ValidationError, model_validator

from monitor.config import errors
from monitor.config.addresses import kind_of
from monitor.config.defaults import with_defaults
from monitor.config.errors import ConfigError
from monitor.config.targets import Target, TargetDefaults
from monitor.config.values import Strict


class Adhoc(Strict):
    """Targets and the defaults they start from: the part of a config that the command line writes."""

    defaults: TargetDefaults = Field(default_factory=TargetDefaults)
    targets: list[Target] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        """Each target starts from ``defaults``, as a config's do."""
        if not isinstance(data, dict) or not isinstance(data.get("targets"), list) or not isinstance(data.get("defaults", {}), dict):
            return data
        return {**data, "targets": with_defaults(data.get("defaults") or {}, data["targets"])}


def written(urls: list[str], dns: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """The config that the URLs stand for, as data: each a target named by its host and path, ``overrides`` their
    defaults; ``dns`` holds the settings of ``dns:`` addresses."""
    targets, seen = [], set()
    for url in urls:
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", re.sub(r"^https?://", "", url)).rstrip("/")[:120] or "target"
        name, count = base, 1
        while name in seen:
            count += 1
            name = f"{base}-{count}"
        seen.add(name)
        targets.append({"name": name, "url": url, **({"dns": dns} if dns and kind_of(url) == "dns" else {})})
    data: dict[str, Any] = {"targets": targets}
    if "timeout" in overrides:  # checked once: no interval for the timeout to fit in
        overrides.setdefault("interval", overrides["timeout"])
    if overrides:
        data["defaults"] = overrides
    return data


def targets(urls: list[str], dns: dict[str, Any] | None = None, **overrides: Any) -> list[Target]:
    """The URLs' targets (see :func:`written`); a bad URL or option is a :class:`ConfigError` that names it as a
    config's error would (``command line: defaults.timeout: ...``)."""
    try:
        return Adhoc.model_validate(written(urls, dns, **overrides)).targets
    except ValidationError as exc:
        raise ConfigError(errors.describe(exc, "command line", Adhoc)) from None
