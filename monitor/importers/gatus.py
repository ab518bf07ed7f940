"""A Gatus ``config.yaml`` as a monitor config: ``monitor import gatus config.yaml``.

Each endpoint becomes a target of its kind (http(s), ``tcp://``, ``tls://``, ``icmp://``, a ``dns:`` query), its
conditions carried as conditions (this project's are Gatus-like) or as the setting that judges the same thing
(``[DNS_RCODE] == NXDOMAIN`` is ``dns.nxdomain``); ``group`` and ``extra-labels`` carry over; an alert's
``failure-threshold`` and ``success-threshold`` become the target's detectors (``consecutive``,
``recover_after``) and its type a receiver (:mod:`monitor.importers.gatus_alerting`); ``external-endpoints``
become heartbeat targets; ``maintenance`` recurring windows; ``ui`` a status page with every endpoint, as
Gatus' dashboard shows them. What has no counterpart is reported, field by field. Gatus reads ``$VAR`` and
``${VAR}`` from its environment: each is written ``${VAR}``, read from this daemon's, and the report names them
(:mod:`monitor.importers.variables`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.importers import files, gatus_alerting, variables
from monitor.importers.report import Import, Unreadable, admit, go_duration, ping_token, seconds, target_name

CARRIED = {"endpoints", "external-endpoints", "alerting", "maintenance", "ui", "storage", "metrics", "concurrency"}
ENDPOINT_FIELDS = {"name", "group", "url", "method", "headers", "body", "graphql", "interval", "conditions", "dns"}
ENDPOINT_FIELDS |= {"alerts", "maintenance-windows", "client", "extra-labels", "enabled"}
ALL_STATUSES = ["1xx", "2xx", "3xx", "4xx", "5xx"]  # Gatus judges the status only by a [STATUS] condition
METHODS = {"GET", "HEAD", "POST", "PUT", "OPTIONS"}
NO_COUNTERPART = {
    "IP": "the address a name resolved to is not a condition here",
    "DOMAIN_EXPIRATION": "domain registration expiry is not checked here (certificate expiry is: [CERTIFICATE_EXPIRATION])",
}

# why a top-level key of Gatus' config is not taken (a key not named here: "no counterpart here")
TOP_LEVEL_WHY = {
    "security": "basic auth and OIDC guard Gatus' dashboard; here the admin UI has web.token and status pages are public",
    "web": "Gatus' listener; here web.listen (admin UI) and web.status_listen (status pages) are set apart",
    "announcements": "status pages here show incidents and their public notes, not announcements",
    "suites": "suites (steps sharing a context) have no counterpart: each target is checked alone",
    "connectivity": "a connectivity checker that holds checks back has no counterpart",
    "remote": "remote Gatus instances are not read",
    "skip-invalid-config-update": "a reload here keeps the config in force when the new one does not validate",
    "disable-monitoring-lock": "checks here run concurrently (concurrency:)",
}
# why a key of an endpoint is not taken
ENDPOINT_FIELD_WHY = {
    "ui": "how Gatus' dashboard shows the endpoint (hide-url, badges); pages here never show a target's URL",
    "always-run": "suites only",
    "store": "suites only",
    "ssh": "ssh checks have no counterpart",
}


def read(path: str | Path) -> Import:
    """The conversion of the Gatus config file at ``path``; :class:`Unreadable` if it is not one (or is refused:
    :mod:`monitor.importers.files`)."""
    document = files.load_yaml(path)
    if not isinstance(document, dict) or not isinstance(document.get("endpoints", document.get("external-endpoints")), list):
        raise Unreadable(f"{path}: not a Gatus config (no endpoints: list)")
    return convert(document, str(path))


def convert(document: dict[str, Any], source: str = "gatus config") -> Import:
    """The monitor config of a Gatus config document, and what it could not carry."""
    imported = Import(source)
    imported.config["targets"] = []
    document, read = variables.from_environment(document)
    for key in sorted(set(document) - CARRIED):
        imported.skip(key, TOP_LEVEL_WHY.get(key, "no counterpart here"))
    alerting = gatus_alerting.Alerting(document.get("alerting") or {}, imported)
    taken: set[str] = set()
    groups: dict[str, list[str]] = {}
    for index, endpoint in enumerate(document.get("endpoints") or []):
        _endpoint(imported, f"endpoints[{index}]", endpoint, taken, alerting, groups)
    for index, endpoint in enumerate(document.get("external-endpoints") or []):
        _external(imported, f"external-endpoints[{index}]", endpoint, taken, alerting, groups)
    alerting.finish()
    _storage(imported, document)
    gatus_alerting.maintenance(imported, document.get("maintenance"), [t["name"] for t in imported.targets])
    gatus_alerting.status_page(imported, document.get("ui") or {}, groups)
    variables.note_environment(imported, read)
    return imported


def _named(imported: Import, where: str, endpoint: Any, what: str, needs: tuple[str, ...]) -> str | None:
    """``where`` with the endpoint's name (``endpoints[0] (api)``); None, noted as skipped, when it lacks one of
    ``needs`` or Gatus disables it."""
    if not isinstance(endpoint, dict) or not all(endpoint.get(key) for key in needs):
        imported.skip(where, f"{what} needs " + " and ".join(f"a {key}" for key in needs))
        return None
    if endpoint.get("enabled") is False:
        imported.skip(where, f"{endpoint['name']}: disabled in Gatus, so not checked")
        return None
    return f"{where} ({endpoint['name']})"


def _endpoint(imported: Import, where: str, endpoint: Any, taken: set[str], alerting: Any, groups: dict[str, list[str]]) -> None:
    named = _named(imported, where, endpoint, "an endpoint", ("name", "url"))
    if named is None:
        return
    where = named
    for key in sorted(set(endpoint) - ENDPOINT_FIELDS):
        imported.skip(f"{where}.{key}", ENDPOINT_FIELD_WHY.get(key, "no counterpart here"))
    target = _address(imported, where, endpoint)
    if target is None:
        return
    target["name"] = _name(endpoint, taken)
    _common(imported, where, endpoint, target)
    _http(imported, where, endpoint, target)
    _client(imported, where, endpoint.get("client") or {}, target)
    _conditions(imported, where, endpoint.get("conditions") or [], target)
    alerting.apply(f"{where}.alerts", endpoint.get("alerts"), target)
    gatus_alerting.windows(imported, f"{where}.maintenance-windows", endpoint.get("maintenance-windows"), target["name"])
    if admit(imported, where, target):
        groups.setdefault(str(endpoint.get("group") or ""), []).append(target["name"])
    else:
        taken.discard(target["name"])


def _name(endpoint: dict[str, Any], taken: set[str]) -> str:
    """The endpoint's name; a name two groups share becomes ``group-name``, as Gatus' key tells them apart."""
    name = target_name(endpoint["name"], set(taken))
    if name != target_name(endpoint["name"], set()) and endpoint.get("group"):
        name = target_name(f"{endpoint['group']}-{endpoint['name']}", set(taken))
    taken.add(name)
    return name


def _address(imported: Import, where: str, endpoint: dict[str, Any]) -> dict[str, Any] | None:
    """The target's address (and kind settings) from the endpoint's url, or None (reported) if it has no kind here."""
    url = str(endpoint["url"]).strip()
    if isinstance(endpoint.get("dns"), dict):
        query = endpoint["dns"]
        question = f"{query.get('query-name', '')}/{str(query.get('query-type') or 'A').upper()}"
        return {"url": f"dns:{question}", "dns": {"server": url}}
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme in ("http", "https", "tcp", "tls", "icmp"):
        return {"url": url}
    kind = scheme or "an address without a scheme"
    imported.skip(f"{where}.url", f"{kind} checks have no counterpart here (http, https, tcp, tls, icmp and dns do)")
    return None


def _common(imported: Import, where: str, endpoint: dict[str, Any], target: dict[str, Any]) -> None:
    interval = go_duration(endpoint.get("interval", "60s"))
    if interval is None or interval <= 0:
        imported.skip(f"{where}.interval", f"{endpoint.get('interval')!r} is not a duration; the default 60s is used")
        interval = 60.0
    target["interval"] = seconds(interval)
    if endpoint.get("group"):
        target["group"] = str(endpoint["group"])[:128]
    labels = endpoint.get("extra-labels")
    if isinstance(labels, dict) and labels:
        target["labels"] = {str(key): str(value) for key, value in labels.items()}


def _http(imported: Import, where: str, endpoint: dict[str, Any], target: dict[str, Any]) -> None:
    """Method, headers and body, for http targets (Gatus ignores them on the others; so does the report)."""
    if not str(target["url"]).lower().startswith("http"):
        if endpoint.get("body") and target["url"].lower().startswith("tcp:"):
            target["tcp"] = {"send": str(endpoint["body"])}  # Gatus sends it; [BODY] is the reply (see _tcp_reply)
        for key in ("method", "headers", "body", "graphql"):
            if endpoint.get(key) and "tcp" not in target:
                imported.skip(f"{where}.{key}", "for http targets only: a tls, icmp or dns check here sends none")
        return
    method = str(endpoint.get("method") or "GET").upper()
    if method in METHODS:
        if method != "GET":
            target["method"] = method
    else:
        imported.skip(f"{where}.method", f"{method} is not a method checks send here ({', '.join(sorted(METHODS))}); GET is sent")
    headers = endpoint.get("headers")
    if isinstance(headers, dict) and headers:
        target["headers"] = {str(key): str(value) for key, value in headers.items()}
    body = endpoint.get("body")
    if body:
        if endpoint.get("graphql"):
            import json

            body = json.dumps({"query": str(body)})
            target.setdefault("headers", {}).setdefault("Content-Type", "application/json")
        target["body"] = str(body)
    if any("[RANDOM_STRING_" in str(body) or f"[{word}]" in str(body) for word in ("ENDPOINT_NAME", "ENDPOINT_URL")):
        imported.skip(f"{where}.body", "placeholders in a body ([ENDPOINT_NAME], [RANDOM_STRING_N]...) are sent as written")


def _client(imported: Import, where: str, client: dict[str, Any], target: dict[str, Any]) -> None:
    for key, value in client.items():
        if key == "timeout" and go_duration(value):
            target["timeout"] = seconds(go_duration(value) or 10.0)
        elif key == "insecure" and value is True:
            if target["url"].lower().startswith(("https:", "tls:")):
                target["verify_tls"] = False
        elif key == "ignore-redirect" and value is True:
            if target["url"].lower().startswith("http"):
                target["max_redirects"] = 0
        elif key not in ("insecure", "ignore-redirect"):
            imported.skip(f"{where}.client.{key}", "this client setting has no counterpart here (timeout, insecure and ignore-redirect do)")


def _conditions(imported: Import, where: str, conditions: list[Any], target: dict[str, Any]) -> None:
    """Each condition as a condition, a dns setting, or a reported skip; Gatus judges the status only if asked."""
    from monitor.config import kind_of
    from monitor.config.conditions import parse, unavailable

    kind = kind_of(target["url"]) or "http"
    carried: list[str] = []
    for position, text in enumerate(conditions):
        at = f"{where}.conditions[{position}]"
        text = str(text).strip()
        if (kind == "dns" and _dns_condition(imported, at, text, target)) or (kind == "tcp" and _tcp_reply(text, target)):
            continue
        missing = next((name for name in NO_COUNTERPART if f"[{name}]" in text), None)
        if missing is not None:
            imported.skip(at, f"{text}: {NO_COUNTERPART[missing]}")
            continue
        try:
            reason = unavailable(parse(text), kind, target["url"])
        except ValueError as exc:
            reason = str(exc)
        if reason is None:
            carried.append(text)
        else:
            imported.skip(at, reason)
    if carried:
        target["conditions"] = carried
    if kind == "http" and not any("[STATUS]" in text for text in carried):
        target["expect"] = {"status": ALL_STATUSES}


def _dns_condition(imported: Import, at: str, text: str, target: dict[str, Any]) -> bool:
    """A dns endpoint's [DNS_RCODE] and [BODY] conditions, as ``dns:`` settings; False for any other."""
    left, _, right = (part.strip() for part in text.partition("=="))
    if left == "[DNS_RCODE]":
        if right == "NXDOMAIN":
            target["dns"]["nxdomain"] = True
        elif right != "NOERROR":  # NOERROR with answers is what a dns target expects by default
            imported.skip(at, f"{text}: a dns target here expects answers (NOERROR) or, with nxdomain, NXDOMAIN")
        return True
    if left == "[BODY]":
        if right.startswith(("pat(", "any(")):
            imported.skip(at, f"{text}: a dns target's answers are compared exactly (dns.contains), not by pattern; any answer passes")
        else:
            target["dns"].setdefault("contains", []).append(right.strip("\"'"))
        return True
    return False


def _tcp_reply(text: str, target: dict[str, Any]) -> bool:
    """``[BODY] == X`` (or ``pat(GLOB)``) on a tcp endpoint: the reply must match, ``tcp.expect``; False for others."""
    import fnmatch
    import re

    left, _, right = (part.strip() for part in text.partition("=="))
    if left != "[BODY]" or not right or right.startswith("any(") or "expect" in target.get("tcp", {}):
        return False
    if right.startswith("pat(") and right.endswith(")"):
        pattern = "^" + fnmatch.translate(right[4:-1].strip("\"'"))
    else:
        pattern = f"^{re.escape(right.strip(chr(34) + chr(39)))}\\s*$"
    target.setdefault("tcp", {})["expect"] = pattern
    return True


def _external(imported: Import, where: str, endpoint: Any, taken: set[str], alerting: Any, groups: dict[str, list[str]]) -> None:
    """A pushed endpoint: a heartbeat target; pushes come to /ping/<token> (or /ping/<token>/fail)."""
    named = _named(imported, where, endpoint, "an external endpoint", ("name",))
    if named is None:
        return
    where = named
    name = _name(endpoint, taken)
    period = go_duration((endpoint.get("heartbeat") or {}).get("interval") or 0) or 0.0
    if not period:
        imported.skip(f"{where}.heartbeat", "no heartbeat.interval: a heartbeat here needs a period; 1h is set, change it to the job's")
        period = 3600.0
    target: dict[str, Any] = {"name": name, "kind": "heartbeat"}
    target["heartbeat"] = {
        "token": ping_token(imported, where, endpoint.get("token"), name, "/api/v1/endpoints/{key}/external"),
        "period": seconds(period),
    }
    target["heartbeat"]["grace"] = seconds(max(60.0, period * 0.1))
    if endpoint.get("group"):
        target["group"] = str(endpoint["group"])[:128]
    alerting.apply(f"{where}.alerts", endpoint.get("alerts"), target)
    if admit(imported, where, target):
        groups.setdefault(str(endpoint.get("group") or ""), []).append(name)


def _storage(imported: Import, document: dict[str, Any]) -> None:
    if document.get("storage") is not None:
        imported.skip("storage", "Gatus' stored results are not read; results here go to database: (default monitor.db)")
    concurrency = document.get("concurrency")
    if isinstance(concurrency, int) and not isinstance(concurrency, bool):
        imported.config["concurrency"] = concurrency if 1 <= concurrency <= 4096 else 4096
