"""A plugin of monitor's four extension points, as a package from outside writes one (its pyproject.toml names each).

- a check kind: ``flag:/path`` is up while the file exists;
- an agent tool: ``flag_file(name)`` says whether a flag target's file is there now;
- an alert receiver: ``alerts.jsonfile: {path: /abs/file}`` appends each message to the file as a JSON line;
- a web page: ``/flags`` lists the configured flag targets, with its link in the navigation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.agent.tools import MonitorTool, ToolFailure
from monitor.alerts.receivers import Context
from monitor.config import Strict, Target
from monitor.config.alerts import ReceiverKind
from monitor.core import kinds
from monitor.core.incidents import Incident
from monitor.core.results import CRITICAL, OK, Result
from monitor.web.site import Page, Site

# A check kind


class Flag:
    def __init__(self, context: Any) -> None:
        self.clock = context.clock

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        up = Path(target.url.removeprefix("flag:")).exists()
        return Result(
            name=target.name,
            url=target.url,
            ok=up,
            severity=OK if up else CRITICAL,
            status_code=None,
            latency_ms=0.0,
            error=None if up else "flag_down",
            detail=f"the flag is {'up' if up else 'down'}",
            checked_at=self.clock(),
            kind="flag",
        )

    async def aclose(self) -> None:
        pass


KIND = kinds.Kind("flag", schemes=("flag",), errors={"flag_down": "no flag file"}, check=Flag)


# An agent tool


class FlagFile(MonitorTool):
    name = "flag_file"
    description = "Whether a flag target's file exists now."
    inputs = {"name": {"type": "string", "description": "The configured target name, e.g. 'up'."}}

    def forward(self, name: str) -> str:
        return self.guarded(lambda: self._look(name))

    def _look(self, name: str) -> str:
        target = self.target(name)
        if target.kind != "flag":
            raise ToolFailure(f"{target.name} is no flag target")
        there = Path(target.url.removeprefix("flag:")).exists()
        return f"{target.name}: the flag file is {'there' if there else 'missing'}"


# An alert receiver


class JsonFileSettings(Strict):
    """``alerts.jsonfile:``: the file messages are appended to."""

    path: str = Field(pattern=r"^/", description="An absolute path.")


class JsonFile:
    refreshes = False

    def __init__(self, settings: JsonFileSettings) -> None:
        self.path = settings.path
        self.kinds = frozenset({"opened", "resolved"})
        self.name = f"jsonfile:{settings.path}"

    def message(self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: Any) -> dict[str, Any]:
        return {"event": kind, "key": context.key, "target": incident.target, "status": incident.status}

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        try:
            with open(self.path, "a") as log:
                log.write(json.dumps(payload) + "\n")
        except OSError as exc:
            return f"cannot write {self.path}: {exc.strerror}"
        return None


RECEIVER = ReceiverKind("jsonfile", JsonFileSettings, JsonFile)


# A web page

TEMPLATE = """{% extends "base.html" %}
{% block main %}<h1>Flags</h1><ul>{% for name in names %}<li>{{ name }}</li>{% endfor %}</ul>{% endblock %}
"""


def routes(site: Site) -> list[BaseRoute]:
    template = site.env.from_string(TEMPLATE)

    def page(request: Request) -> Response:
        names = [t.name for t in site.pages.config.targets if t.kind == "flag"]
        return site.render(template, title="Flags", names=names)

    return [Route("/flags", page)]


PAGE = Page("flags", routes, link=("/flags", "Flags"))
