"""The image's HEALTHCHECK: GET /healthz where the daemon really listens, exit 0 when it answers 200.

The address is the one `monitor run` itself took: its --metrics-listen flag (read off the daemon's command
line, PID 1 in the container, or the PID given as the first argument), else $MONITOR_METRICS_LISTEN, else the
config's metrics section. Standard library and monitor's config only: a slim base has no curl.
"""

from __future__ import annotations

import os
import sys
import urllib.request


def flag(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            args = file.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    for i, arg in enumerate(args):
        if arg == "--metrics-listen" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--metrics-listen="):
            return arg.partition("=")[2]
    return None


def port(pid: str) -> str:
    listen = flag(pid) or os.environ.get("MONITOR_METRICS_LISTEN")
    if listen:
        return listen.rpartition(":")[2]
    from monitor import config

    return str(config.load(os.environ.get("MONITOR_CONFIG", "/etc/monitor/monitor.yaml")).metrics.port)


def main() -> None:
    url = f"http://127.0.0.1:{port(sys.argv[1] if len(sys.argv) > 1 else '1')}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=4) as answer:
            sys.exit(0 if answer.status == 200 else 1)
    except OSError as exc:
        sys.exit(f"{url}: {exc}")


if __name__ == "__main__":
    main()
