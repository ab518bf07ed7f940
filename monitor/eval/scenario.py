"""Diagnosis eval scenarios: the file format and its loader (the servers a target is served by: ``servers.py``).

A scenario is one folder, ``bench/scenarios/<name>/scenario.yaml``::

    name: http-500-known-fix            # the folder's name
    description: what happens, in a sentence
    tags: [http, 5xx, memory]
    target: {name: api, path: /health, timeout: 1s, expect: {status: [200]}}   # a Target; the runner sets url
    serve:                              # what the target does, on 127.0.0.1
      kind: http                        # http | refused | dns | tls | redirect_loop | tcp | dns_server | heartbeat
      script:                           # one entry per request, in order; the last one repeats forever
        - {status: 500, body: "database connection pool exhausted", times: 3}
        - {status: 200, body: '{"status":"ok"}'}   # also: headers, delay: 2s, hang: true, reset: true
      # tcp: the script's body is sent to each connection (hang, reset apply); tls: also serves tcp:// and tls://
      # dns_server: records: {"api.test/A": [192.0.2.1]}, servfail: [name], any other name NXDOMAIN
      # heartbeat: last_ping: 2d (ago; none: never pinged), failed: true (a /fail after it), message: its output
    history:                            # results seeded before the live check, oldest first
      every: 30s
      results: [{ok: true, latency_ms: 40, times: 20}, {ok: false, status_code: 500, error: unexpected_status}]
    past_incidents:                     # long-term memory; ids are 1, 2, ... in this order
      - {target: api, summary: ..., root_cause: server_error, resolution: ...}
    config: {agent: {remediation: dry_run}}        # optional Config sections (detectors, agent, memory)
    expect: {root_cause: server_error, related_incident: 1, actionable: true,
             tools_required: [check_target], tools_forbidden: [remediate]}

``load(path)`` returns a :class:`Scenario` or raises :class:`ScenarioError` whose
message names the file and the field, as config errors do. ``servers.Behaviour`` serves
``serve`` in a thread, for one scenario run.

The target is HTTP unless ``target.kind`` says ``tcp`` or ``tls`` (its address is the server's),
``dns`` (``target.address: dns:NAME/TYPE``, asked of the ``dns_server``) or ``heartbeat``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from monitor.config import Config, Duration, Kind, Strict, Target, TargetSettings
from monitor.config import describe as describe_config
from monitor.config import errors as config_errors
from monitor.core import errors

FILE = "scenario.yaml"
ERROR_KINDS = (
    errors.TIMEOUT,
    errors.REFUSED,
    errors.RESET,
    errors.DNS,
    errors.TLS,
    errors.PROTOCOL,
    errors.REDIRECTS,
    errors.BODY_TOO_LARGE,
    errors.STATUS,
    errors.CONDITION,
    errors.CONNECTION,
    errors.TCP_REFUSED,
    errors.TCP_TIMEOUT,
    errors.TCP_UNEXPECTED_REPLY,
    errors.CERT_EXPIRED,
    errors.CERT_EXPIRING,
    errors.CERT_UNTRUSTED,
    errors.CERT_MISMATCH,
    errors.DNS_NXDOMAIN,
    errors.DNS_SERVFAIL,
    errors.DNS_TIMEOUT,
    errors.DNS_UNEXPECTED,
    errors.DNS_ERROR,
    errors.HEARTBEAT_MISSED,
    errors.HEARTBEAT_FAILED,
)
RUNNER_OWNS = ("targets", "model", "database", "defaults")


class ScenarioError(Exception):
    """A bad scenario file: the message is meant for the user, as it is."""


def root_causes() -> dict[str, str]:
    from monitor.incidents.patterns import ROOT_CAUSES

    return ROOT_CAUSES


def tool_names() -> set[str]:
    """Every tool an agent may be given, and final_answer."""
    from monitor.agent.tools import MonitorTool

    every: list[type[MonitorTool]] = []
    below = [MonitorTool]
    while below:  # a tool may stand on a base of its own (TargetTool), which is no tool: it has no name
        under = below.pop().__subclasses__()
        below.extend(under)
        every.extend(under)
    return {tool.name for tool in every if isinstance(getattr(tool, "name", None), str)} | {"final_answer"}


class Reply(Strict):
    """One entry of a serve script: how the target answers the next ``times`` requests."""

    status: int = Field(default=200, ge=100, le=599)
    body: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    delay: Duration | None = None
    hang: bool = False
    reset: bool = False
    times: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _one_failure(self) -> Reply:
        if self.hang and self.reset:
            raise ValueError("hang and reset exclude each other: a connection either hangs or is reset")
        return self


class Serve(Strict):
    kind: Literal["http", "refused", "dns", "tls", "redirect_loop", "tcp", "dns_server", "heartbeat"] = "http"
    script: list[Reply] = Field(default_factory=lambda: [Reply()], min_length=1)
    cert: Literal["untrusted", "expired", "wrong_name", "expiring"] = "untrusted"
    host: str | None = Field(default=None, pattern=r"^[A-Za-z0-9.-]+\.invalid$")
    records: dict[str, list[str]] = Field(default_factory=dict)  # "name/TYPE": answers
    servfail: list[str] = Field(default_factory=list)
    last_ping: Duration | None = None  # how long ago the job last pinged (None: never)
    failed: bool = False  # and it reported a failure after that
    message: str | None = Field(default=None, min_length=1, max_length=1000)  # what the job said when it failed

    @model_validator(mode="after")
    def _fits_kind(self) -> Serve:
        wrong = [
            name
            for name, kinds in (
                ("script", ("http", "tls", "redirect_loop", "tcp")),
                ("cert", ("tls",)),
                ("host", ("dns",)),
                ("records", ("dns_server",)),
                ("servfail", ("dns_server",)),
                ("last_ping", ("heartbeat",)),
                ("failed", ("heartbeat",)),
                ("message", ("heartbeat",)),
            )
            if name in self.model_fields_set and self.kind not in kinds
        ]
        if wrong:
            raise ValueError(f"{', '.join(wrong)} does not apply to kind {self.kind}")
        if self.message is not None and not self.failed:
            raise ValueError("message is what a job said with its failure: it needs failed: true")
        if self.failed and self.last_ping is None:
            raise ValueError("failed: true needs last_ping: a job that reported its failure pinged (how long ago?)")
        return self


class Seeded(Strict):
    """A past check result (``times`` copies), as the store keeps it."""

    ok: bool
    status_code: int | None = Field(default=None, ge=100, le=599)
    latency_ms: float = Field(default=50.0, ge=0)
    error: str | None = None
    detail: str = ""
    severity: Literal["ok", "warning", "critical"] | None = None
    times: int = Field(default=1, ge=1)

    @field_validator("error")
    @classmethod
    def _known_kind(cls, value: str | None) -> str | None:
        if value is not None and value not in ERROR_KINDS:
            raise ValueError(f"{value!r} is not an error kind (one of: {', '.join(ERROR_KINDS)})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Seeded:
        if not self.ok and self.error is None:
            raise ValueError("a failed result needs an error kind")
        return self


class History(Strict):
    every: Duration = 30.0
    results: list[Seeded] = Field(default_factory=list)


class PastIncident(Strict):
    target: str
    pattern: str = "consecutive"
    summary: str
    diagnosis: str | None = None
    root_cause: str | None = None
    suspected_cause: str | None = None
    resolution: str | None = None
    status: Literal["resolved", "open"] = "resolved"
    age: Duration | None = None

    @field_validator("root_cause")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        return None if value is None else _root_cause(value)


class Expect(Strict):
    root_cause: list[str]
    related_incident: int | list[int] | None = None  # a list: any of these is right (members of one family)
    actionable: bool = True
    tools_required: list[str] = Field(default_factory=list)
    tools_forbidden: list[str] = Field(default_factory=list)

    @field_validator("root_cause", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        if not values:
            raise ValueError("name at least one root cause")
        return [_root_cause(v) for v in values]

    @field_validator("related_incident")
    @classmethod
    def _related(cls, value: int | list[int] | None) -> int | list[int] | None:
        if isinstance(value, list) and not value:
            raise ValueError("name at least one past incident, or null for none")
        return value

    @property
    def related(self) -> tuple[int, ...]:
        """The past incidents any of which is right; empty for none."""
        value = self.related_incident
        return () if value is None else tuple(value) if isinstance(value, list) else (value,)

    @field_validator("tools_required", "tools_forbidden")
    @classmethod
    def _tools(cls, value: list[str]) -> list[str]:
        known = tool_names()
        for name in value:
            if name not in known:
                raise ValueError(f"{name!r} is not a tool (one of: {', '.join(sorted(known))})")
        return value


class TargetSpec(TargetSettings):
    """A Target without its URL, which the runner makes from ``serve`` and ``path`` (or ``address``, for dns)."""

    kind: Kind = "http"
    path: str = Field(default="/", pattern=r"^/")
    address: str | None = Field(default=None, pattern=r"^dns:")


class Scenario(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str
    tags: list[str] = Field(default_factory=list)
    target: TargetSpec
    serve: Serve = Field(default_factory=Serve)
    history: History = Field(default_factory=History)
    past_incidents: list[PastIncident] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    expect: Expect
    source: str = Field(default="", exclude=True)

    @model_validator(mode="after")
    def _related_exists(self) -> Scenario:
        for related in self.expect.related:
            if not 1 <= related <= len(self.past_incidents):
                raise ValueError(
                    f"expect.related_incident: #{related} is not a past incident (past_incidents holds #1 to #{len(self.past_incidents)})"
                )
        for number, past in enumerate(self.past_incidents, 1):
            if past.status == "open" and past.target == self.target.name:
                raise ValueError(
                    f"past_incidents[{number - 1}]: an open incident on {past.target!r} would be the "
                    "current incident; resolve it, or put it on another target"
                )
        return self

    @model_validator(mode="after")
    def _target_runs(self) -> Scenario:
        """The target as the runner makes it is valid too (a heartbeat needs its token and period, ...)."""
        url = {
            "tcp": "tcp://127.0.0.1:1",
            "tls": "tls://127.0.0.1:1",
            "dns": self.target.address or "dns:service.test",
            "heartbeat": None,
        }.get(self.target.kind, "http://127.0.0.1:1" + self.target.path)
        try:
            self.target_for(url)
        except ValidationError as exc:
            problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            raise ValueError(f"target: {problems}") from None
        return self

    def target_for(self, url: str | None, ca_file: str | None = None, dns_server: str | None = None) -> Target:
        """The monitored Target, at ``url`` (a heartbeat has none; a dns target asks ``dns_server``)."""
        spec = self.target.model_dump(by_alias=True, exclude_unset=True, exclude={"path", "address"})
        if dns_server is not None:
            spec["dns"] = {**spec.get("dns", {}), "server": dns_server}
        address = {} if url is None else {"url": url}
        return Target.model_validate({**spec, **address, **({"ca_file": ca_file} if ca_file else {})})


def _root_cause(value: Any) -> str:
    labels = root_causes()
    if value not in labels:
        raise ValueError(f"{value!r} is not a root cause (one of: {', '.join(labels)})")
    return str(value)


# -- loading ------------------------------------------------------------------------------------


def describe(error: ValidationError, source: str) -> str:
    """One line per problem: ``file: field.path: what is wrong``, rendered as a config's are."""
    lines = []
    for where, message in config_errors.problems(error, Scenario, hidden=("source",)):
        if message.startswith(("expect.", "past_incidents[", "target: ")):  # a whole-scenario check names its own field
            where, message = message.split(": ", 1)
        lines.append(f"{source}: {where}: {message}")
    return "\n".join(lines)


def parse(text: str, source: str = "<scenario>", folder: str | None = None) -> Scenario:
    """Validate scenario text; every problem is a :class:`ScenarioError` naming ``source`` and the field."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ScenarioError(f"{source}: {where}invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: the top level must be a mapping (name, description, target, expect, ...)")
    try:
        scenario = Scenario.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise ScenarioError(describe(exc, source)) from None
    if folder is not None and scenario.name != folder:
        raise ScenarioError(f"{source}: name: {scenario.name!r} differs from its folder {folder!r}")
    _check_config(scenario, source)
    return scenario


def _check_config(scenario: Scenario, source: str) -> None:
    for key in RUNNER_OWNS:
        if key in scenario.config:
            raise ScenarioError(f"{source}: config.{key}: set by the runner, not by a scenario")
    try:
        Config.model_validate(scenario.config)
    except ValidationError as exc:
        lines = describe_config(exc, source).splitlines()
        raise ScenarioError("\n".join(ln.replace(f"{source}: ", f"{source}: config.", 1) for ln in lines)) from None


def load(path: str | Path) -> Scenario:
    """Read and validate one ``scenario.yaml`` (or the folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc.strerror or exc}") from None
    return parse(text, str(path), folder=path.parent.name)


def load_all(directory: str | Path, *, tags: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> list[Scenario]:
    """Every scenario under ``directory``, by name; ``tags`` keeps those with any of them, ``only`` those named."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ScenarioError(f"{directory}: not a directory of scenarios")
    scenarios = [load(p) for p in sorted(directory.glob(f"*/{FILE}"))]
    unknown = sorted(set(only) - {s.name for s in scenarios})
    if unknown:
        raise ScenarioError(f"{directory}: no scenario named {', '.join(unknown)} (have: {', '.join(s.name for s in scenarios) or 'none'})")
    chosen = [s for s in scenarios if (not only or s.name in only) and (not tags or set(tags) & set(s.tags))]
    if not chosen:
        raise ScenarioError(f"{directory}: no scenario matches" + (f" tags {', '.join(tags)}" if tags else ""))
    return chosen


# -- the target's behaviour on loopback ---------------------------------------------------------
