"""Tools that look at a target: check it now, read its recent results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.agent.tools.base import MonitorTool, Narrowing, TargetTool, ToolFailure, fence, format_phases, format_result, one_line
from monitor.checks.engine import Checker
from monitor.config import Target
from monitor.core import urls
from monitor.memory.recall import evidence_of

if TYPE_CHECKING:
    from monitor.checks.heartbeat import Heartbeats


class CheckTarget(TargetTool):
    name = "check_target"
    description = (
        "Re-check a monitored target right now (HTTP, TCP, TLS certificate, DNS or heartbeat) and return its "
        "state, HTTP status, latency and error. Use it first, to see whether the problem is still there."
    )

    def about(self, name: str) -> str:
        target = self._resolve(name)
        configured = any(t is target for t in self.box.config.targets)
        allowed = self.box.config.agent.allow_urls
        # A configured target follows its redirects as the daemon's checks do; an ad-hoc URL stays inside allow_urls.
        reach = None if configured else (lambda url: urls.admitted(url, allowed))
        [result] = Checker(concurrency=1, reach=reach, heartbeats=self._heartbeats(target)).run([target])
        if configured:  # an ad-hoc URL is no target: its result would show in status
            self.box.results.record([result])  # as the daemon's checks: stored, counted, detected
        kind = "" if target.kind == "http" else f" [{target.kind}]"  # the evidence says what was checked
        line = f"{target.name}{kind}: {format_result(result)}"
        quoted = f"\n{fence(result.excerpt)}" if result.excerpt else ""
        text = f"{line}{format_phases(result.phases)}{quoted}"
        if target.name == self.box.focus:
            if not result.ok:  # what recall compares past incidents with: values, never this tool's captions
                self.box.evidence = evidence_of(
                    target.name, result.status_code, result.error, result.detail, result.excerpt, rechecked=True
                )
            text += f"\nThe check history reads as root cause: {self.box.reading()} (weigh it with the history)"
        return text

    def _heartbeats(self, target: Target) -> Heartbeats | None:
        """A heartbeat is judged on the pings the daemon stored; other kinds need none."""
        if target.kind != "heartbeat":
            return None
        from monitor.checks.heartbeat import Heartbeats

        return Heartbeats(self.box.store, [target])

    def _resolve(self, name: str) -> Target:
        reach = self.box.reach()
        by_url = sorted((t for t in self.box.config.targets if t.url == name), key=lambda t: t.name not in reach)
        if by_url:  # models often pass the target's URL instead of its name
            return self.target(by_url[0].name)
        if name.startswith(("http://", "https://")):
            if urls.admitted(name, self.box.config.agent.allow_urls):
                return Target(name="adhoc", url=name, timeout=self.box.config.defaults.timeout)
            raise ToolFailure(
                f"URL {one_line(urls.redact(name), 200)!r} is not a configured target and matches "
                "no agent.allow_urls prefix (same scheme, host and port, a path under it, no userinfo)"
            )
        return self.target(name)


class RecentResults(MonitorTool):
    name = "recent_results"
    description = "Return the last n check results of a target, newest first, one per line."
    inputs = {
        "name": {"type": "string", "description": "The configured target name."},
        "n": {"type": "integer", "description": "How many results (1 to 50).", "nullable": True},
    }

    def forward(self, name: str, n: int | None = 10) -> str:
        return self.guarded(lambda: self._recent(name, n or 10))

    def narrowed(self) -> Narrowing:
        return {"name": {"enum": self.target_names()}, "n": None}  # the grammar leaves n to its default

    def _recent(self, name: str, n: int) -> str:
        self.target(name)
        rows = self.box.store.results.recent_results(name, max(1, min(int(n), 50)))
        if not rows:
            return f"{name}: no results recorded yet"
        failures = sum(1 for r in rows if not r.ok)
        lines = [f"{name}: {failures} of the last {len(rows)} checks failed"]
        return "\n".join(lines + [format_result(r) for r in rows])
