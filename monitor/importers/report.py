"""What an importer hands back: the config it built, and every field of the source it did not carry, with why.

An :class:`Import` is a value: ``config`` is the document of a ``monitor.yaml`` (plain dicts and lists, in the
order a person would read it), ``skipped`` the fields left behind. :meth:`Import.yaml` writes the config,
:meth:`Import.report` the account of what was not carried, one line each::

    endpoints[3] (check-domain-expiration).conditions[0]: [DOMAIN_EXPIRATION] > 720h: no domain expiry check
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.importers import files
from monitor.importers.files import Unreadable as Unreadable  # where it is raised; importers name it here

NAME = re.compile(r"[^A-Za-z0-9_.:/-]+")


@dataclass(frozen=True)
class Skipped:
    """One field of the source not carried into the config: where it was, and why."""

    where: str
    why: str
    unsafe: bool = False  # refused for what it would do here (read a file, reach a socket), not for a missing feature

    def __str__(self) -> str:
        return f"{self.where}: {self.why}"


@dataclass
class Import:
    """A converted config and what it left behind."""

    source: str
    config: dict[str, Any] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    in_files: int = 0  # targets moved into target files (:meth:`split`)

    def __post_init__(self) -> None:
        # results and incidents beside the config, wherever the daemon or `monitor mcp` runs from (a relative
        # database is read relative to the config file's folder)
        self.config = {"database": "monitor.db", **self.config}

    def skip(self, where: str, why: str) -> None:
        self.skipped.append(Skipped(where, why))

    def refuse(self, where: str, why: str) -> None:
        """A field left out as unsafe: named apart in the report, so nobody takes it for a missing feature."""
        self.skipped.append(Skipped(where, why, unsafe=True))

    def note(self, text: str) -> None:
        """Something carried but changed on the way, that the user must act on (a new heartbeat token)."""
        self.notes.append(text)

    def serve_pages(self, pages: list[dict[str, Any]], listen: str = "127.0.0.1:8080") -> None:
        """``status_pages``, and the listener that serves them (on loopback: publishing them is the user's choice)."""
        self.config["web"] = {"status_listen": listen}
        self.config["status_pages"] = pages
        slugs = ", ".join(f"http://{listen}/status/{page['slug']}" for page in pages[:5])
        self.note(
            f"the status pages are served on {listen} (web.status_listen), on loopback only: {slugs}; change the "
            "address, or put a proxy in front, to publish them"
        )

    @property
    def targets(self) -> list[dict[str, Any]]:
        targets: list[dict[str, Any]] = self.config.setdefault("targets", [])
        return targets

    def yaml(self) -> str:
        """The config as YAML, with a header saying where it came from."""
        import yaml

        class Plain(yaml.SafeDumper):
            def ignore_aliases(self, data: Any) -> bool:
                return True  # each target written out whole, as a person would write it

        body = yaml.dump(self.config, Dumper=Plain, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)
        return f"# converted by `monitor import` from {self.source}; see the report for what was not carried\n{body}"

    def split(self, output: Path, per_file: int = 5000) -> list[Path]:
        """Move the targets into JSON target files beside ``output`` (``<stem>-targets/0000.json``, ...), which the
        config then names in ``target_files``: a large fleet, as a config file holds at most 1 MiB."""
        folder = files.folder(output.parent / f"{output.stem}-targets")
        targets = self.config.pop("targets", [])
        written = []
        for start in range(0, len(targets), per_file):
            path = folder / f"{start // per_file:04d}.json"
            files.write_text(path, json.dumps(targets[start : start + per_file], indent=1, ensure_ascii=False))
            written.append(path)
        first = {key: self.config.pop(key) for key in ("database",) if key in self.config}
        self.config = {**first, "target_files": [f"{folder.name}/*.json"], **self.config}
        self.in_files = len(targets)
        self.note(f"the {len(targets)} targets are in {len(written)} target files under {folder}")
        return written

    def report(self) -> str:
        """Every field not carried, and every change to act on, one per line."""
        count = len(self.config.get("targets") or []) + self.in_files
        lines = [f"{self.source}: {count} targets converted, {len(self.skipped)} fields not carried"]
        lines += [f"  not carried: {item}" for item in self.skipped if not item.unsafe]
        lines += [f"  refused as unsafe: {item}" for item in self.skipped if item.unsafe]
        lines += [f"  note: {text}" for text in self.notes]
        return "\n".join(lines) + "\n"


def target_name(text: str, taken: set[str]) -> str:
    """A target name from anything a tool calls a check ("Front End (EU)" -> ``Front-End-EU``), unique in ``taken``."""
    base = NAME.sub("-", str(text)).strip("-")[:120] or "target"
    name, counter = base, 2
    while name in taken:
        name, counter = f"{base}-{counter}", counter + 1
    taken.add(name)
    return name


def seconds(value: float) -> str:
    """A duration as a config writes it: ``30s``, ``5m``, ``1h``, ``1.5s``."""
    for unit, size in (("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def go_duration(value: Any) -> float | None:
    """Seconds of a Go duration (``1h45m30s``, ``500ms``) or a bare number of seconds; None if it is neither."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if not text or _GO_DURATION.sub("", text):
        return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in _GO_DURATION.findall(text))


def admit(imported: Import, where: str, target: dict[str, Any]) -> bool:
    """Add ``target`` to the config if it validates as a target; else record why it was not carried."""
    from pydantic import ValidationError

    from monitor.config import Target
    from monitor.config.errors import problems
    from monitor.config.targets import fields_of_another_kind

    wrong = fields_of_another_kind(0, target)
    try:
        Target.model_validate(target)
    except ValidationError as exc:
        wrong += [(path, message) for path, message in problems(exc, Target)]
    if wrong:
        imported.skip(where, "does not validate as a target: " + "; ".join(f"{path or 'target'}: {message}" for path, message in wrong))
        return False
    fields = list(target.items())
    target.clear()
    target.update(sorted(fields, key=lambda item: item[0] != "name"))  # the name first, as people write targets
    imported.targets.append(target)
    return True


def admit_webhook(imported: Import, where: str, webhook: dict[str, Any]) -> bool:
    """True if ``webhook`` validates as this config's webhook (http or https only, headers without line breaks);
    else it is refused as unsafe (``file:///etc/passwd``, ``gopher://``), named in the report and not written."""
    from pydantic import ValidationError

    from monitor.config.alerts import Webhook

    try:
        Webhook.model_validate(webhook)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'webhook'}: {_message(e['msg'])}" for e in exc.errors())
        imported.refuse(where, f"not a webhook this daemon may call: {problems}")
        return False
    return True


def http_url(imported: Import, where: str, value: Any) -> str | None:
    """``value`` if it is an http(s) URL this config accepts; else None, refused as unsafe and named."""
    from monitor.config.values import http_url as checked

    try:
        return checked(str(value))
    except ValueError as exc:
        imported.refuse(where, f"not an http(s) URL: {_message(str(exc))}")
        return None


def _message(text: str) -> str:
    return text.removeprefix("Value error, ")


TOKEN = re.compile(r"^[A-Za-z0-9_-]{32,128}$")


def ping_token(imported: Import, where: str, token: Any, name: str, instead_of: str) -> str:
    """The pusher's token if a heartbeat here accepts it, else a new one (noted: the pusher must change)."""
    imported.note(f"{name}: the job pings /ping/<token> (or /ping/<token>/fail) on the metrics listener, not {instead_of}")
    text = str(token or "")
    if TOKEN.match(text) and len(set(text)) >= 8:
        return text
    fresh = secrets.token_hex(32)
    imported.skip(f"{where}.token", "too short or guessable for a heartbeat token here (32+ random characters): a new one is set")
    imported.note(f"{name}: new heartbeat token {fresh}: give it to the job that pushes")
    return fresh
