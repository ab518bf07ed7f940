"""Diagnosis eval scenarios: the file format, its loader, and the target's behaviour on loopback.

A scenario is one folder, ``eval/scenarios/<name>/scenario.yaml``::

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
      # heartbeat: last_ping: 2d (ago; none: never pinged), failed: true (a /fail after it)
    history:                            # results seeded before the live check, oldest first
      every: 30s
      results: [{ok: true, latency_ms: 40, times: 20}, {ok: false, status_code: 500, error: unexpected_status}]
    past_incidents:                     # long-term memory; ids are 1, 2, ... in this order
      - {target: api, summary: ..., root_cause: server_error, resolution: ...}
    config: {agent: {remediation: dry_run}}        # optional Config sections (detectors, agent, memory)
    expect: {root_cause: server_error, related_incident: 1, actionable: true,
             tools_required: [check_target], tools_forbidden: [remediate]}

``load(path)`` returns a :class:`Scenario` or raises :class:`ScenarioError` whose
message names the file and the field, as config errors do. ``Behaviour`` serves
``serve`` in a thread, for one scenario run: a fresh script, a fresh port, and
for ``tls`` a fresh certificate made with ``openssl`` in the run's directory.

The target is HTTP unless ``target.kind`` says ``tcp`` or ``tls`` (its address is the server's),
``dns`` (``target.address: dns:NAME/TYPE``, asked of the ``dns_server``) or ``heartbeat``.
"""

from __future__ import annotations

import re
import shutil
import socket
import socketserver
import ssl
import struct
import subprocess
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from monitor.checks import engine as checks
from monitor.checks import heartbeat, probes
from monitor.config import (
    Action,
    Config,
    DnsSettings,
    Duration,
    HeartbeatSettings,
    Kind,
    Strict,
    Target,
    TargetDefaults,
    TcpSettings,
    TlsSettings,
)
from monitor.config import describe as describe_config

FILE = "scenario.yaml"
ERROR_KINDS = (checks.TIMEOUT, checks.REFUSED, checks.RESET, checks.DNS, checks.TLS, checks.PROTOCOL,
               checks.REDIRECTS, checks.BODY_TOO_LARGE, checks.STATUS, checks.CONDITION, checks.CONNECTION,
               probes.TCP_REFUSED, probes.TCP_TIMEOUT, probes.TCP_UNEXPECTED_REPLY, probes.CERT_EXPIRED,
               probes.CERT_EXPIRING, probes.CERT_UNTRUSTED, probes.CERT_MISMATCH, probes.DNS_NXDOMAIN,
               probes.DNS_SERVFAIL, probes.DNS_TIMEOUT, probes.DNS_UNEXPECTED, probes.DNS_ERROR,
               heartbeat.MISSED, heartbeat.FAILED)
RUNNER_OWNS = ("targets", "model", "database", "defaults")


class ScenarioError(Exception):
    """A bad scenario file: the message is meant for the user, as it is."""


def root_causes() -> dict[str, str]:
    from monitor.incidents.patterns import ROOT_CAUSES

    return ROOT_CAUSES


def tool_names() -> set[str]:
    """Every tool an agent may be given, and final_answer."""
    from monitor.agent.tools import MonitorTool

    return {t.name for t in MonitorTool.__subclasses__()} | {"final_answer"}


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

    @model_validator(mode="after")
    def _fits_kind(self) -> Serve:
        wrong = [name for name, kinds in (("script", ("http", "tls", "redirect_loop", "tcp")), ("cert", ("tls",)),
                                          ("host", ("dns",)), ("records", ("dns_server",)), ("servfail", ("dns_server",)),
                                          ("last_ping", ("heartbeat",)), ("failed", ("heartbeat",)))
                 if name in self.model_fields_set and self.kind not in kinds]
        if wrong:
            raise ValueError(f"{', '.join(wrong)} does not apply to kind {self.kind}")
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
    related_incident: int | None = None
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

    @field_validator("tools_required", "tools_forbidden")
    @classmethod
    def _tools(cls, value: list[str]) -> list[str]:
        known = tool_names()
        for name in value:
            if name not in known:
                raise ValueError(f"{name!r} is not a tool (one of: {', '.join(sorted(known))})")
        return value


class TargetSpec(TargetDefaults):
    """A Target without its URL, which the runner makes from ``serve`` and ``path`` (or ``address``, for dns)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")
    kind: Kind = "http"
    path: str = Field(default="/", pattern=r"^/")
    address: str | None = Field(default=None, pattern=r"^dns:")
    body: str | None = None
    actions: dict[str, Action] = Field(default_factory=dict)
    tcp: TcpSettings | None = None
    tls: TlsSettings | None = None
    dns: DnsSettings | None = None
    heartbeat: HeartbeatSettings | None = None


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
        related = self.expect.related_incident
        if related is not None and not 1 <= related <= len(self.past_incidents):
            raise ValueError(f"expect.related_incident: #{related} is not a past incident "
                             f"(past_incidents holds #1 to #{len(self.past_incidents)})")
        for number, past in enumerate(self.past_incidents, 1):
            if past.status == "open" and past.target == self.target.name:
                raise ValueError(f"past_incidents[{number - 1}]: an open incident on {past.target!r} would be the "
                                 "current incident; resolve it, or put it on another target")
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


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "json-or-python", "union[", "list[", "literal[")):
            out = f"{out}.{part}" if out else str(part)
    return out or "(top level)"


def _allowed(loc: tuple[Any, ...]) -> str:
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        annotation = getattr(model.model_fields.get(part), "annotation", None)
        candidates = [annotation, *(getattr(annotation, "__args__", ()) or ())]
        candidates += [a for c in candidates for a in (getattr(c, "__args__", ()) or ())]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return ""
    return ", ".join(sorted(f.alias or n for n, f in model.model_fields.items() if n != "source"))


def describe(error: ValidationError, source: str) -> str:
    """One line per problem: ``file: field.path: what is wrong``."""
    lines = []
    for item in error.errors():
        where, message = _where(item["loc"]), item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = f"unknown field (allowed here: {_allowed(item['loc'])})"
        elif item["type"] == "missing":
            message = "is required"
        if message.startswith(("expect.", "past_incidents[")):  # a whole-scenario check names its own field
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
        raise ScenarioError(f"{directory}: no scenario named {', '.join(unknown)} "
                            f"(have: {', '.join(s.name for s in scenarios) or 'none'})")
    chosen = [s for s in scenarios if (not only or s.name in only) and (not tags or set(tags) & set(s.tags))]
    if not chosen:
        raise ScenarioError(f"{directory}: no scenario matches" + (f" tags {', '.join(tags)}" if tags else ""))
    return chosen


# -- the target's behaviour on loopback ---------------------------------------------------------


def _http(status: int, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: keep-alive"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if not any(name.lower() == "content-type" for name in headers):
        lines.append("Content-Type: " + ("application/json" if body.startswith((b"{", b"[")) else "text/plain"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        if self.server.tls is not None:
            try:
                sock = self.server.tls.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):  # the client refused the certificate: that is the scenario
                return
        sock.settimeout(30)
        buffer = b""
        while not self.server.stopping.is_set():
            while b"\r\n\r\n" not in buffer:
                try:
                    chunk = sock.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            buffer = buffer[int(length.group(1)) if length else 0:]
            path = head.split(b" ")[1].decode("latin-1") if head.count(b" ") >= 2 else "/"
            if not self.answer(sock, self.server.next_reply(), path):
                return

    def answer(self, sock: socket.socket, reply: Reply, path: str) -> bool:
        """Send ``reply``; False closes the connection."""
        stop = self.server.stopping
        if reply.hang:
            stop.wait(60)
            return False
        if reply.delay is not None and stop.wait(reply.delay):
            return False
        if reply.reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            return False
        if self.server.loop:
            sock.sendall(_http(302, b"", {"Location": path}))
        else:
            sock.sendall(_http(reply.status, reply.body.encode(), reply.headers))
        return True


class _TcpHandler(socketserver.BaseRequestHandler):
    """A plain TCP service: each connection gets the next reply's body (a banner or an answer), then a close."""

    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        reply = self.server.next_reply()
        if reply.hang:
            self.server.stopping.wait(60)
        elif reply.reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif reply.delay is None or not self.server.stopping.wait(reply.delay):
            sock.sendall(reply.body.encode())


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, script: list[Reply], *, tls: ssl.SSLContext | None, loop: bool, tcp: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _TcpHandler if tcp else _Handler)
        self.script, self.tls, self.loop = script, tls, loop
        self.stopping = threading.Event()
        self.requests = 0
        self._lock = threading.Lock()

    def next_reply(self) -> Reply:
        with self._lock:
            index, self.requests = self.requests, self.requests + 1
        for reply in self.script:
            if index < reply.times:
                return reply
            index -= reply.times
        return self.script[-1]


class Behaviour:
    """A scenario's target on loopback, inside ``with``: ``base`` is its URL without the path.

    ``ca_file`` is set when the target must trust the certificate authority the
    server's certificate comes from (an expired or wrongly named certificate).
    """

    def __init__(self, serve: Serve, workdir: str | Path) -> None:
        self.serve, self.workdir = serve, Path(workdir)
        self.ca_file: str | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._dns: DnsServer | None = None
        self.base = ""
        self.port = 0  # where a tcp:// or tls:// target connects
        self.dns_address: str | None = None  # the loopback DNS server a dns: target asks

    @property
    def requests(self) -> int:
        """How many HTTP requests the target has answered (or hung on) so far."""
        return self._server.requests if self._server is not None else 0

    def __enter__(self) -> Behaviour:
        kind = self.serve.kind
        if kind == "dns":
            self.base = f"http://{self.serve.host or 'service.invalid'}"
        elif kind == "refused":
            self.port = _closed_port()
            self.base = f"http://127.0.0.1:{self.port}"
        elif kind == "dns_server":
            records = {(name.partition("/")[0].rstrip(".") + ".", name.partition("/")[2].upper() or "A"): answers
                       for name, answers in self.serve.records.items()}
            self._dns = DnsServer(records, servfail=tuple(n.rstrip(".") + "." for n in self.serve.servfail)).__enter__()
            self.dns_address = self._dns.address
        elif kind != "heartbeat":
            tls = self._tls_context() if kind == "tls" else None
            self._server = _Server(self.serve.script, tls=tls, loop=kind == "redirect_loop", tcp=kind == "tcp")
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                            daemon=True)
            self._thread.start()
            self.port = self._server.server_address[1]
            self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        return self

    def url_for(self, spec: TargetSpec) -> str | None:
        """The address a target of ``spec``'s kind checks here."""
        if spec.kind in ("tcp", "tls"):
            return f"{spec.kind}://127.0.0.1:{self.port}"
        if spec.kind == "dns":
            return spec.address or "dns:service.test"
        return None if spec.kind == "heartbeat" else self.base + spec.path

    def __exit__(self, *exc: object) -> None:
        if self._dns is not None:
            self._dns.__exit__()
        if self._server is not None:
            self._server.stopping.set()
            self._server.shutdown()
            self._server.server_close()

    def _tls_context(self) -> ssl.SSLContext:
        cert, key = make_certificate(self.workdir, self.serve.cert)
        if self.serve.cert != "untrusted":  # the CA is trusted: the certificate's own fault is the scenario
            self.ca_file = str(self.workdir / "ca.pem")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        return context


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"openssl {args[0]} failed: {exc.stderr.decode(errors='replace').strip()[:300]}") from None


def make_certificate(where: Path, kind: str) -> tuple[Path, Path]:
    """A CA (``ca.pem``) and a server certificate for 127.0.0.1 signed by it, made with ``openssl``.

    ``untrusted``: valid, but nobody trusts the CA. ``expired``: it expired yesterday.
    ``wrong_name``: it names another host. ``expiring``: valid for 5 more days.
    """
    if shutil.which("openssl") is None:
        raise RuntimeError("the tls scenarios need the openssl command (apt-get install openssl)")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650",
             "-subj", "/CN=monitor eval CA", cwd=where)
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=where)
    name = "DNS:payments.example.com" if kind == "wrong_name" else "IP:127.0.0.1"
    (where / "san.cnf").write_text(f"subjectAltName={name}\n")
    sign = ("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-extfile", "san.cnf")
    if kind == "expiring":
        _openssl(*sign, "-days", "5", cwd=where)
    elif kind != "expired":
        _openssl(*sign, "-days", "90", cwd=where)
    else:
        try:
            _openssl(*sign, "-days", "-1", cwd=where)  # OpenSSL 3.0 to 3.3: valid until yesterday
        except RuntimeError:
            _openssl(*sign, "-not_before", "20240101000000Z", "-not_after", "20240201000000Z", cwd=where)
    return where / "server.pem", where / "server.key"


class DnsServer:
    """A DNS server on loopback (UDP, and TCP on the same port), written with dnspython.

    ``records`` maps (name, type) to answers (``{("api.test.", "A"): ["192.0.2.1"]}``); a name in
    ``servfail`` gets SERVFAIL, one in ``silent`` no answer at all, any other unknown name NXDOMAIN.
    """

    def __init__(self, records: dict[tuple[str, str], list[str]], servfail: tuple[str, ...] = (),
                 silent: tuple[str, ...] = ()) -> None:
        self.records, self.servfail, self.silent = records, servfail, silent
        self.udp, self.tcp = self._bind()
        self.port = self.udp.getsockname()[1]
        self.tcp.listen(16)
        self.stopping = threading.Event()
        self.queries: list[str] = []
        self._threads = [threading.Thread(target=self._serve_udp, daemon=True),
                         threading.Thread(target=self._serve_tcp, daemon=True)]

    @staticmethod
    def _bind() -> tuple[socket.socket, socket.socket]:
        """A UDP and a TCP socket on one free loopback port (another process may hold the first one tried)."""
        for _ in range(50):
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.bind(("127.0.0.1", 0))
            tcp = socket.socket()
            try:
                tcp.bind(("127.0.0.1", udp.getsockname()[1]))
                return udp, tcp
            except OSError:
                udp.close()
                tcp.close()
        raise RuntimeError("no loopback port free for both UDP and TCP")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> DnsServer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.udp.close()
        self.tcp.close()

    def answer(self, wire: bytes) -> bytes | None:
        """The response to one query, or None to stay silent."""
        import dns.message
        import dns.rcode
        import dns.rdatatype
        import dns.rrset

        query = dns.message.from_wire(wire)
        question = query.question[0]
        name, kind = question.name.to_text(), dns.rdatatype.to_text(question.rdtype)
        self.queries.append(f"{name}/{kind}")
        if name in self.silent:
            return None
        response = dns.message.make_response(query)
        if name in self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif (name, kind) in self.records:
            response.answer.append(dns.rrset.from_text_list(name, 60, "IN", kind, self.records[(name, kind)]))
        elif not any(known == name for known, _ in self.records):
            response.set_rcode(dns.rcode.NXDOMAIN)
        return bytes(response.to_wire())

    def _serve_udp(self) -> None:
        while not self.stopping.is_set():
            try:
                wire, peer = self.udp.recvfrom(65535)
            except OSError:
                return
            reply = self.answer(wire)
            if reply is not None:
                self.udp.sendto(reply, peer)

    def _serve_tcp(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    size = struct.unpack("!H", conn.recv(2))[0]
                    reply = self.answer(conn.recv(size))
                    if reply is not None:
                        conn.sendall(struct.pack("!H", len(reply)) + reply)
                    else:
                        self.stopping.wait(10)
                except (OSError, struct.error):
                    continue
