"""blackbox_exporter's modules and Prometheus' probe jobs as a monitor config: ``monitor import blackbox b.yml p.yml``.

Each module (http, tcp, icmp, dns prober) becomes one of ``probe.modules``, so the same scrapes of ``/probe``
keep working against this daemon; each target of a scrape job whose ``metrics_path`` is ``/probe``
(``static_configs``, and the files of ``file_sd_configs``) becomes a target checked on the job's
``scrape_interval`` with its module's settings, labelled with the job and module; ``probe.allow`` lists
exactly those addresses. A setting with no counterpart is reported, module by module. Neither file substitutes
``${...}``: it is written ``$${...}``, text here too (:mod:`monitor.importers.variables`).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from monitor.importers import file_sd, files, variables
from monitor.importers.report import Import, Unreadable, admit, go_duration, seconds, target_name

Module = dict[str, Any]
STANDARD_RELABEL = ({"__address__"}, {"__param_target"})  # the README's: target -> __param_target -> instance
LITERAL = re.compile(r"^[^.^$*+?()\[\]{}|\\]+$")


def read(blackbox_path: str | Path, prometheus_path: str | Path, *, anywhere: bool = False) -> Import:
    """The conversion of the two files; ``anywhere``: read ``file_sd`` files outside the Prometheus config's
    folder too (absolute paths, ``../``), which is refused otherwise."""
    modules = _yaml(blackbox_path).get("modules")
    prometheus = _yaml(prometheus_path)
    if not isinstance(modules, dict):
        raise Unreadable(f"{blackbox_path}: not a blackbox_exporter config (no modules:)")
    if not isinstance(prometheus.get("scrape_configs"), list):
        raise Unreadable(f"{prometheus_path}: not a Prometheus config (no scrape_configs:)")
    found = file_sd.Finder(Path(prometheus_path).parent, anywhere=anywhere)
    return convert(modules, prometheus, f"{blackbox_path} and {prometheus_path}", found)


def _yaml(path: str | Path) -> dict[str, Any]:
    document = files.load_yaml(path)
    if not isinstance(document, dict):
        raise Unreadable(f"{path}: not a YAML mapping")
    return document


def convert(modules: dict[str, Any], prometheus: dict[str, Any], source: str, sd: file_sd.Finder) -> Import:
    imported = Import(source)
    imported.config["targets"] = []
    converted: dict[str, Module] = {}
    for name, module in modules.items():
        found = _module(imported, f"modules.{name}", module if isinstance(module, dict) else {})
        if found is not None:
            converted[str(name)] = found
    defaults = prometheus.get("global") or {}
    taken: set[str] = set()
    allow: list[str] = []
    for index, job in enumerate(prometheus["scrape_configs"]):
        if isinstance(job, dict):
            _job(imported, f"scrape_configs[{index}] ({job.get('job_name')})", job, converted, defaults, sd, taken, allow)
    imported.config["probe"] = {"allow": sorted(set(allow)), "modules": converted}
    for key, why in PROMETHEUS_SKIPPED.items():
        if prometheus.get(key):
            imported.skip(key, why)
    variables.keep_literal(imported, "blackbox_exporter (and Prometheus' scrape config)")
    return imported


PROMETHEUS_SKIPPED = {
    "rule_files": "Prometheus' alerting and recording rules are not read: an incident here opens from the checks' own "
    "detectors (consecutive failures, a window, flapping), so a rule's expression, for: and labels do not carry; keep "
    "the rules in Prometheus, scraping /probe here as before",
    "alerting": "Prometheus' Alertmanagers: alerts here go to alerts.alertmanager (or webhooks, notify), set there",
}


def _module(imported: Import, where: str, module: dict[str, Any]) -> Module | None:
    """A blackbox module as a ``probe.modules`` entry; None (reported) if its prober has no counterpart."""
    from pydantic import ValidationError

    from monitor.config.probe import ProbeModule

    prober = module.get("prober")
    convert_one = {"http": _http, "tcp": _tcp, "icmp": _icmp, "dns": _dns}.get(str(prober))
    if convert_one is None:
        imported.skip(where, f"the {prober} prober has no counterpart here (http, tcp, icmp and dns do)")
        return None
    found: Module = {"prober": prober}
    if module.get("timeout"):
        found["timeout"] = seconds(go_duration(module["timeout"]) or 10.0)
    settings = module.get(str(prober)) or {}
    convert_one(imported, f"{where}.{prober}", settings if isinstance(settings, dict) else {}, found)
    try:
        ProbeModule.model_validate(found)
    except ValidationError as exc:
        imported.skip(where, f"does not validate as a module: {exc.errors()[0]['msg']}")
        return None
    return found


def _http(imported: Import, where: str, settings: dict[str, Any], found: Module) -> None:
    expect: dict[str, Any] = {"status": [int(code) for code in settings.get("valid_status_codes") or []] or ["2xx"]}
    headers = {str(k): str(v) for k, v in (settings.get("headers") or {}).items()}
    auth = settings.get("basic_auth") or {}
    if auth.get("username"):
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth['username']}:{auth.get('password', '')}".encode()).decode()
    for key, value in settings.items():
        if key == "method":
            found["method"] = str(value).upper()
        elif key == "body":
            found["body"] = str(value)
        elif key == "follow_redirects":
            found.update({} if value else {"max_redirects": 0})
        elif key in ("fail_if_body_matches_regexp", "fail_if_body_not_matches_regexp"):
            _body_patterns(
                imported, f"{where}.{key}", value or [], expect, "body_contains" if "not_matches" in key else "body_not_contains"
            )
        elif key == "tls_config":
            _tls(imported, f"{where}.tls_config", value or {}, found)
        elif key not in ("headers", "basic_auth", "valid_status_codes"):
            imported.skip(f"{where}.{key}", HTTP_SKIPPED.get(key, "no counterpart here"))
    found["expect"] = expect
    if headers:
        found["headers"] = headers


HTTP_SKIPPED = {
    "validate_authority_rrs": "only the answer section is judged here (dns.contains, dns.equals)",
    "validate_additional_rrs": "only the answer section is judged here (dns.contains, dns.equals)",
    "valid_http_versions": "any HTTP version the server answers with passes",
    "preferred_ip_protocol": "the system's address order is used",
    "ip_protocol_fallback": "the system's address order is used",
    "http_headers": "headers here are plain values (headers:), not values read from files",
    "fail_if_header_matches": "response headers are not judged here",
    "fail_if_header_not_matches": "response headers are not judged here",
    "fail_if_ssl": "whether the answer came over TLS is not judged here",
    "fail_if_not_ssl": "whether the answer came over TLS is not judged here",
    "proxy_url": "checks here go direct, not through a proxy",
    "oauth2": "OAuth 2 client credentials are not fetched here; give a header",
    "body_file": "a body here is written in the config (body:)",
    "compression": "the answer's encoding is not judged here",
}


def _body_patterns(imported: Import, where: str, patterns: list[Any], expect: dict[str, Any], field: str) -> None:
    """Body regular expressions: a plain word is ``body_contains``/``body_not_contains``; one of each at most."""
    for index, pattern in enumerate(patterns):
        if LITERAL.match(str(pattern)) and field not in expect:
            expect[field] = str(pattern)
        else:
            imported.skip(f"{where}[{index}]", f"{pattern!r}: only one plain text per module is matched here ({field})")


def _tls(imported: Import, where: str, settings: dict[str, Any], found: Module) -> None:
    for key, value in settings.items():
        if key == "insecure_skip_verify":
            found.update({"verify_tls": False} if value else {})
        elif key == "ca_file" and Path(str(value)).is_file():
            found["ca_file"] = str(value)
        else:
            imported.skip(f"{where}.{key}", "no such file here" if key == "ca_file" else "no counterpart here")


def _tcp(imported: Import, where: str, settings: dict[str, Any], found: Module) -> None:
    if settings.get("tls"):
        found["prober"] = "tls"
    for key, value in settings.items():
        if key == "query_response":
            _dialogue(imported, f"{where}.query_response", value or [], found)
        elif key == "tls_config" and found["prober"] == "tls":
            _tls(imported, f"{where}.tls_config", value or {}, found)
        elif key != "tls":
            imported.skip(f"{where}.{key}", HTTP_SKIPPED.get(key, "no counterpart here"))


def _dialogue(imported: Import, where: str, steps: list[Any], found: Module) -> None:
    """A query_response of one expect, or one send then one expect: ``tcp.send`` and ``tcp.expect``."""
    shape = [next(iter(step)) if isinstance(step, dict) and len(step) == 1 else "" for step in steps]
    if found["prober"] == "tcp" and shape in (["expect"], ["send", "expect"]):
        found["tcp"] = {key: value for step in steps for key, value in step.items()}
        if "send" in found["tcp"]:
            found["tcp"]["send"] = str(found["tcp"]["send"]) + "\n"  # blackbox ends each send with a newline
        return
    imported.skip(where, "a dialogue of more than one send and one expect (or STARTTLS, or over TLS) has no counterpart here")


def _icmp(imported: Import, where: str, settings: dict[str, Any], found: Module) -> None:
    for key in settings:
        imported.skip(f"{where}.{key}", HTTP_SKIPPED.get(key, "no counterpart here"))


def _dns(imported: Import, where: str, settings: dict[str, Any], found: Module) -> None:
    found["query"] = f"{settings.get('query_name', '')}/{str(settings.get('query_type') or 'ANY').upper().replace('ANY', 'A')}"
    dns: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "transport_protocol" and value in ("udp", "tcp"):
            dns["protocol"] = value
        elif key == "valid_rcodes" and value == ["NXDOMAIN"]:
            dns["nxdomain"] = True
        elif key == "valid_rcodes" and value not in (["NOERROR"], []):
            imported.skip(f"{where}.{key}", "a dns check here expects NOERROR with answers, or NXDOMAIN")
        elif key == "validate_answer_rrs" and isinstance(value, dict):
            _answers(imported, f"{where}.{key}", value, dns)
        elif key not in ("query_name", "query_type", "valid_rcodes"):
            imported.skip(f"{where}.{key}", HTTP_SKIPPED.get(key, "answers are not matched against patterns here"))
    if dns:
        found["dns"] = dns


def _answers(imported: Import, where: str, rules: dict[str, Any], dns: dict[str, Any]) -> None:
    """``validate_answer_rrs`` as Gatus' ``[BODY] == X`` is carried: an answer that must be there (``dns.contains``),
    or the one answer every record must be (``dns.equals``), where the pattern is one plain answer."""
    for key, patterns in rules.items():
        answers = [_answer(str(pattern)) for pattern in patterns] if isinstance(patterns, list) else [None]
        if key == "fail_if_none_matches_regexp" and None not in answers:
            dns.setdefault("contains", []).extend(answers)
        elif key == "fail_if_not_matches_regexp" and len(set(answers)) == 1 and None not in answers:
            dns["equals"] = answers[:1]
        elif key in ("fail_if_matches_regexp", "fail_if_all_match_regexp"):
            imported.skip(f"{where}.{key}", "a dns check here names answers that must be there, not ones that must not")
        else:
            imported.skip(f"{where}.{key}", "answers are compared exactly here (dns.contains, dns.equals): only a plain answer carries")


def _answer(pattern: str) -> str | None:
    """The answer a regular expression over a record's text names (``127.0.0.1``; ``www.example.org.<TAB>300<TAB>IN<TAB>A<TAB>
    10.0.0.1`` -> ``10.0.0.1``), or None where it is a pattern, not one answer."""
    pattern = pattern.replace("\\t", "\t")  # Go reads \t in a pattern as a tab
    text = pattern.removeprefix("^").removeprefix(".*").removesuffix("$").removesuffix(".*").replace("\\.", ".")
    text = text.split("\t")[-1] if text.count("\t") == 4 else text  # name, TTL, class, type, answer
    return text if text and LITERAL.match(text.replace(".", "")) else None


def _job(
    imported: Import, where: str, job: dict[str, Any], modules: dict[str, Module], defaults: dict[str, Any], sd: file_sd.Finder,
    taken: set[str], allow: list[str],
) -> None:  # fmt: skip
    from monitor.config.probe import ProbeModule, default_modules

    if job.get("metrics_path") != "/probe":
        imported.skip(where, "not a probe job (metrics_path is not /probe): Prometheus scrapes it, as before")
        return
    name = str((job.get("params") or {}).get("module", ["http_2xx"])[0])
    module = modules.get(name) or (default_modules()[name].model_dump(exclude_unset=True) if name in default_modules() else None)
    if module is None:
        imported.skip(where, f"module {name} is not in the blackbox config (or was not carried)")
        return
    for key in sorted(set(job) - {"job_name", "metrics_path", "params", "static_configs", "file_sd_configs", "relabel_configs"}):
        if key not in ("scrape_interval", "scrape_timeout"):
            imported.skip(f"{where}.{key}", "service discovery other than static and file has no counterpart here")
    _relabels(imported, where, job.get("relabel_configs") or [])
    interval = go_duration(job.get("scrape_interval") or defaults.get("scrape_interval") or "1m") or 60.0
    probe = ProbeModule.model_validate(module)
    for address, labels in _targets(imported, where, job, sd):
        target = _target(probe, module, address, interval)
        target["name"] = target_name(f"{job.get('job_name', 'probe')}-{re.sub(r'^[a-z]+://', '', address)}", taken)
        target["labels"] = {**labels, "job": str(job.get("job_name", "")), "module": name}
        if admit(imported, f"{where}: {address}", target):
            allow.append(probe.address(address))


def _relabels(imported: Import, where: str, relabels: list[Any]) -> None:
    for index, rule in enumerate(relabels):
        sources = set(rule.get("source_labels") or []) if isinstance(rule, dict) else set()
        standard = sources in STANDARD_RELABEL or (not sources and rule.get("target_label") == "__address__")
        if not standard:
            imported.skip(f"{where}.relabel_configs[{index}]", "relabelling beyond the README's target/instance/address has no counterpart")


def _targets(imported: Import, where: str, job: dict[str, Any], sd: file_sd.Finder) -> list[tuple[str, dict[str, str]]]:
    """Each address of the job's static configs and file_sd files, with its labels."""
    groups = list(job.get("static_configs") or [])
    for each in job.get("file_sd_configs") or []:
        groups += sd.groups(imported, f"{where}.file_sd_configs", each)
    return [
        (str(address), {str(k): str(v) for k, v in (group.get("labels") or {}).items()})
        for group in groups
        if isinstance(group, dict)
        for address in group.get("targets") or []
    ]


def _target(probe: Any, module: Module, address: str, interval: float) -> dict[str, Any]:
    """The target a scrape of ``address`` with this module probes, as a config writes it."""
    url = probe.address(address)
    fields = {key: value for key, value in module.items() if key not in ("prober", "query", "dns", "tcp", "tls", "icmp")}
    if module["prober"] != "http":
        fields = {key: value for key, value in fields.items() if key in ("timeout", "verify_tls", "ca_file")}
    target: dict[str, Any] = {"url": url, "interval": seconds(interval), **fields}
    if module["prober"] in ("tcp", "tls", "icmp") and module.get(module["prober"]):
        target[module["prober"]] = module[module["prober"]]
    if module["prober"] == "dns":
        target["url"] = f"dns:{module['query']}"
        target["dns"] = {**(module.get("dns") or {}), "server": address}
    if module["prober"] == "tls" and "expect" not in target:
        target["expect"] = {"cert_min_days": 0}
    return target
