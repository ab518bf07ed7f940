"""The error kinds a :class:`~monitor.core.results.Result` names (``Result.error``), by check kind: those the
built-in kinds share here; a kind of its own declares its own with it (``kinds.Kind.errors``, e.g. icmp's).

Any check::

    timeout                 the check did not finish within its timeout
    connection_refused      nothing listens on the port
    connection_reset        the peer reset or dropped the connection
    dns                     the host name does not resolve
    tls                     handshake or certificate verification failed
    condition_failed        a condition in expect failed (latency, body, JSON, cert)
    connection_error        any other transport failure
    address_refused         the host resolved only to addresses the check may not connect to (/probe's allow)

http::

    protocol                the peer did not speak HTTP
    too_many_redirects      redirects went past max_redirects
    redirect_refused        a redirect led outside what the check may reach
    body_too_large          the body went past max_body bytes
    unexpected_status       the status code is not one of expect.status

tcp, tls and dns::

    tcp_refused             nothing listens on the port
    tcp_timeout             no connection, or no matching reply, within the timeout
    tcp_unexpected_reply    the peer closed, or sent max_reply bytes, without a reply matching tcp.expect
    cert_expired            the certificate's validity has ended (or not begun)
    cert_expiring           valid, but for fewer than expect.cert_min_days days (a warning)
    cert_untrusted          the chain does not lead to a trusted CA
    cert_hostname_mismatch  the certificate does not name the host (or tls.server_name)
    dns_nxdomain            the name does not exist (unless dns.nxdomain expects that)
    dns_servfail            the server could not answer (SERVFAIL)
    dns_timeout             no answer within the timeout
    dns_unexpected_answer   an answer, but not the expected one
    dns_error               any other failure: REFUSED, a closed port, a malformed answer

heartbeat::

    heartbeat_missed        no ping for period + grace, or a /start not followed by a ping within grace
    heartbeat_failed        the latest word from the job was /fail
    heartbeat_waiting       no ping yet since monitoring began, within period + grace (ok: nothing is late)
"""

from __future__ import annotations

from typing import Final

TIMEOUT: Final = "timeout"
REFUSED: Final = "connection_refused"
RESET: Final = "connection_reset"
DNS: Final = "dns"
TLS: Final = "tls"
CONDITION: Final = "condition_failed"
CONNECTION: Final = "connection_error"
ADDRESS_REFUSED: Final = "address_refused"

PROTOCOL: Final = "protocol"
REDIRECTS: Final = "too_many_redirects"
REDIRECT_REFUSED: Final = "redirect_refused"
BODY_TOO_LARGE: Final = "body_too_large"
STATUS: Final = "unexpected_status"

TCP_REFUSED: Final = "tcp_refused"
TCP_TIMEOUT: Final = "tcp_timeout"
TCP_UNEXPECTED_REPLY: Final = "tcp_unexpected_reply"
CERT_EXPIRED: Final = "cert_expired"
CERT_EXPIRING: Final = "cert_expiring"
CERT_UNTRUSTED: Final = "cert_untrusted"
CERT_MISMATCH: Final = "cert_hostname_mismatch"
DNS_NXDOMAIN: Final = "dns_nxdomain"
DNS_SERVFAIL: Final = "dns_servfail"
DNS_TIMEOUT: Final = "dns_timeout"
DNS_UNEXPECTED: Final = "dns_unexpected_answer"
DNS_ERROR: Final = "dns_error"

HEARTBEAT_MISSED: Final = "heartbeat_missed"
HEARTBEAT_FAILED: Final = "heartbeat_failed"
HEARTBEAT_WAITING: Final = "heartbeat_waiting"
