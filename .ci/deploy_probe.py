"""CI's probe of the compose stack (.ci/deploy): Prometheus scrapes monitor, every dashboard query has
data, and the failing target's incident reaches Alertmanager and the webhook receiver behind it."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from dashboard import api, instant, queries  # noqa: E402


def wait(what: str, condition: Any, deadline: float) -> Any:
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = condition()
        except (OSError, subprocess.CalledProcessError) as exc:
            last = exc
        if last and not isinstance(last, Exception):
            print(f"  ok: {what}", flush=True)
            return last
        time.sleep(2)
    raise SystemExit(f"timed out: {what} (last: {last!r})")


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("prometheus", "alertmanager", "webhook", "dashboard", "target"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--deadline", type=float, default=240)
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline
    prom, target = args.prometheus, args.target

    wait("Prometheus reports up == 1 for monitor", lambda: instant(prom, 'up{job="monitor"} == 1'), deadline)
    wait(f"monitor reports {target} down", lambda: instant(prom, f'monitor_check_up{{target="{target}"}} == 0'), deadline)
    for title, expr in queries(Path(args.dashboard)):
        wait(f"dashboard {title!r}: {expr}", lambda expr=expr: instant(prom, expr), deadline)

    def alert_in_alertmanager() -> list[Any]:
        return [
            a
            for a in api(args.alertmanager, "/api/v2/alerts")
            if a["labels"].get("alertname") == "MonitorIncident" and a["labels"].get("target") == target
        ]

    wait(f"Alertmanager holds MonitorIncident for {target}", alert_in_alertmanager, deadline)

    def alert_at_webhook() -> list[Any]:
        return [
            r
            for r in api(args.webhook, "/received")
            if r["path"] == "/alerts" and any(a["labels"].get("target") == target for a in r["body"].get("alerts", []))
        ]

    wait("Alertmanager delivered it to the webhook receiver", alert_at_webhook, deadline)
    wait(
        "monitor's own webhook delivered the incident",
        lambda: [r for r in api(args.webhook, "/received") if r["path"] == "/monitor"],
        deadline,
    )


if __name__ == "__main__":
    main()
