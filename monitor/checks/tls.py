"""The tls check kind: a TLS handshake with ``host:port``, and the certificate it shows.

Error kinds (besides those of :mod:`monitor.checks.probing`)::

    cert_expired            the certificate's validity has ended (or not begun)
    cert_expiring           valid, but for fewer than ``expect.cert_min_days`` days (a warning)
    cert_untrusted          the chain does not lead to a trusted CA
    cert_hostname_mismatch  the certificate does not name the host (or ``tls.server_name``)
"""

from __future__ import annotations

import calendar
import ssl
import time

from monitor import config
from monitor.checks import network, probing
from monitor.checks.probing import Found, Probe
from monitor.config import Target
from monitor.core import errors, kinds
from monitor.core.results import CRITICAL, OK, WARNING, Result

DEFAULT_CERT_MIN_DAYS = 14.0  # a tls:// target warns this long before expiry unless expect.cert_min_days says
EXPIRED_CODES = {9, 10}  # X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED
MISMATCH_CODES = {62, 64}  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
SPEC = probing.Spec(("dns", "connect", "tls"), "TLS handshake")


async def _tls(target: Target, state: Probe, dialer: network.Dialer) -> Result:
    settings = target.tls or config.TlsSettings()
    host = config.host_port(target.url, "tls")[0].strip("[]")
    name = settings.server_name or host
    context = network.tls_context(target.verify_tls, target.ca_file if target.verify_tls else None)
    reader, writer = await probing.connect(target, state, "tls", dialer)
    try:
        try:
            await state.timed("tls", writer.start_tls(context, server_hostname=name))
        except ssl.SSLCertVerificationError as exc:
            raise Found(*_verification_failure(exc, name)) from None
        except ssl.SSLError as exc:
            raise Found(errors.TLS, f"TLS handshake failed: {exc.reason or exc}") from None
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        state.cert = not_after(der) if der else None
        return _judge_expiry(target, state, name)
    finally:
        await probing.close(writer)


def _verification_failure(exc: ssl.SSLCertVerificationError, name: str) -> tuple[str, str]:
    code, message = exc.verify_code, exc.verify_message or exc.reason or str(exc)
    if code in EXPIRED_CODES:
        return errors.CERT_EXPIRED, f"the certificate is not valid now: {message}"
    if code in MISMATCH_CODES:
        return errors.CERT_MISMATCH, f"the certificate does not name {name}: {message}"
    return errors.CERT_UNTRUSTED, f"the certificate chain is not trusted: {message}"


def _judge_expiry(target: Target, state: Probe, name: str) -> Result:
    verified = "chain and name verified" if target.verify_tls else "not verified (verify_tls: false)"
    if state.cert is None:
        return state.result(OK, None, f"TLS handshake with {name} done; {verified}; expiry unknown")
    days = (state.cert - state.began) / 86400
    if days <= 0:
        return state.result(CRITICAL, errors.CERT_EXPIRED, f"the certificate expired {-days:.1f} days ago")
    minimum = target.expect.cert_min_days
    if minimum is None and not any("CERTIFICATE_EXPIRATION" in c.placeholders for c in target.conditions):
        minimum = DEFAULT_CERT_MIN_DAYS  # a condition on the expiry replaces the default
    detail = f"certificate for {name} expires in {days:.1f} days"
    if minimum is not None and days < minimum:
        return state.result(WARNING, errors.CERT_EXPIRING, f"{detail} (minimum {minimum:g}); {verified}")
    return state.result(OK, None, f"{detail}; {verified}")


def not_after(der: bytes) -> float | None:
    """The end of an X.509 certificate's validity (Unix time), read from its DER; None if unreadable."""
    try:
        certificate = _children(_children(der)[0][1])  # tbsCertificate, signatureAlgorithm, signature
        tbs = _children(certificate[0][1])
        fields = tbs[1:] if tbs[0][0] == 0xA0 else tbs  # [0] version is optional
        validity = _children(fields[3][1])
        tag, value = validity[1]
        text = value.decode("ascii")
        stamp = time.strptime(text, "%y%m%d%H%M%SZ" if tag == 0x17 else "%Y%m%d%H%M%SZ")
        return float(calendar.timegm(stamp))
    except (IndexError, ValueError, UnicodeDecodeError):
        return None


def _children(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) elements of a DER SEQUENCE's content (or of a whole DER blob)."""
    out, at = [], 0
    while at < len(data):
        tag, length = data[at], data[at + 1]
        at += 2
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(data[at : at + count], "big")
            at += count
        if at + length > len(data):
            raise ValueError("truncated DER")
        out.append((tag, data[at : at + length]))
        at += length
    return out


Tls = probing.prober(SPEC, _tls)  # the tls kind: keeps nothing between checks
KIND = kinds.declare(kinds.Kind("tls", ("tls",), host=network.host_of, probe=kinds.Probe("tls://probe.invalid:443"), check=Tls))
