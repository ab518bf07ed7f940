"""The Grafana dashboard's queries, and a small Prometheus HTTP API client: for tests and .ci/deploy.

for title, expr in queries(DASHBOARD):
    samples = instant(prometheus_url, expr)
"""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).parent.parent / "deploy" / "grafana" / "dashboards" / "monitor.json"
# What Grafana puts in place of its variables: every target, and a rate window that holds scrapes.
VARIABLES = {"$__rate_interval": "1m", "$target": ".*"}


def queries(path: Path = DASHBOARD) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every query of every panel, Grafana's variables filled in."""
    found = []
    for panel in json.loads(path.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            found.append((panel["title"], expr))
    return found


def api(base: str, path: str, **params: str) -> Any:
    """``data`` of a Prometheus or Alertmanager API answer."""
    url = f"{base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    return body["data"] if isinstance(body, dict) and "data" in body else body


def instant(base: str, expr: str) -> list[dict[str, Any]]:
    """The samples of an instant query that have a number (not NaN): what a panel would draw."""
    data = api(base, "/api/v1/query", query=expr)
    result = data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]
    return [s for s in result if not math.isnan(float(s["value"][1]))]
