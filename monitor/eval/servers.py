"""The servers a scenario's target is served by, on loopback: HTTP, TCP and TLS scripts (:class:`Behaviour`),
certificates made with ``openssl``, and a DNS server (:class:`DnsServer`) that tests use too.

``Behaviour`` serves a scenario's ``serve`` in a thread, for one scenario run: a fresh script, a fresh
port, and for ``tls`` a fresh certificate made with ``openssl`` in the run's directory.
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

from monitor.eval.scenario import Reply, Serve, TargetSpec


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
        try:
            self.serve(sock)
        finally:
            if sock is not self.request:  # the TLS socket now holds the connection: socketserver closes only the plain one
                sock.close()

    def serve(self, sock: socket.socket) -> None:
        """Answer the requests of one connection, in turn, until it or the server ends."""
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
            buffer = buffer[int(length.group(1)) if length else 0 :]
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
    server's certificate comes from (an expired or wrongly named certificate). ``server_name`` is the
    name the target asks for (SNI): a certificate names it, unless its fault is to name another host.
    """

    def __init__(self, serve: Serve, workdir: str | Path, *, server_name: str | None = None) -> None:
        self.serve, self.workdir, self.server_name = serve, Path(workdir), server_name
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
            records = {
                (name.partition("/")[0].rstrip(".") + ".", name.partition("/")[2].upper() or "A"): answers
                for name, answers in self.serve.records.items()
            }
            self._dns = DnsServer(records, servfail=tuple(n.rstrip(".") + "." for n in self.serve.servfail)).__enter__()
            self.dns_address = self._dns.address
        elif kind != "heartbeat":
            tls = self._tls_context() if kind == "tls" else None
            self._server = _Server(self.serve.script, tls=tls, loop=kind == "redirect_loop", tcp=kind == "tcp")
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
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
        cert, key = make_certificate(self.workdir, self.serve.cert, self.server_name)
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


def make_certificate(where: Path, kind: str, server_name: str | None = None) -> tuple[Path, Path]:
    """A CA (``ca.pem``) and a server certificate for 127.0.0.1 (and ``server_name``) signed by it, made
    with ``openssl``.

    ``untrusted``: valid, but nobody trusts the CA. ``expired``: it expired yesterday.
    ``wrong_name``: it names another host. ``expiring``: valid for 5 more days.
    """
    if shutil.which("openssl") is None:
        raise RuntimeError("the tls scenarios need the openssl command (apt-get install openssl)")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650", "-subj", "/CN=monitor eval CA", cwd=where)
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=where)
    other = "payments.example.com" if server_name != "payments.example.com" else "billing.example.com"
    name = f"DNS:{other}" if kind == "wrong_name" else f"IP:127.0.0.1{f',DNS:{server_name}' if server_name else ''}"
    (where / "san.cnf").write_text(f"subjectAltName={name}\n")
    sign = (
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-extfile",
        "san.cnf",
    )
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

    def __init__(self, records: dict[tuple[str, str], list[str]], servfail: tuple[str, ...] = (), silent: tuple[str, ...] = ()) -> None:
        self.records, self.servfail, self.silent = records, servfail, silent
        self.udp, self.tcp = self._bind()
        self.port = self.udp.getsockname()[1]
        self.tcp.listen(16)
        self.stopping = threading.Event()
        self.queries: list[str] = []
        self._threads = [threading.Thread(target=self._serve_udp, daemon=True), threading.Thread(target=self._serve_tcp, daemon=True)]

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
