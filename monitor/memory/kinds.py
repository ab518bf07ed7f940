"""The kind of a failure within its root cause, in the words its protocol uses for it.

One root cause covers failures that one fix does not: an expired certificate is renewed, but renewing does
not fix a certificate issued for another name; a record missing from its zone (NXDOMAIN) is not a resolver
that cannot answer (SERVFAIL); a 401 is not a 403; an OAuth ``invalid_client`` is not an ``invalid_token``.
A past incident whose kind is stated and differs from this investigation's is not this failure, however
alike the two read (recall.applicable): measured on the e5 vectors, an expired OAuth secret and a token
signed with a retired key are nearer than a paraphrase is to its own fix, so meaning alone cannot tell.

    of(text, cause, status)   the kinds a text states under a root cause, family -> kind
    differs(here, there)      the families where both state a kind and the kinds are not the same
    same(family, here, there) whether two kinds of one family are one

A kind is stated only in the protocol's own terms, so that what a checker reports and what an operator
wrote in a note are read alike, in any wording around them:
    tls_error     X.509 verification (OpenSSL's verify messages, RFC 5280 and 6125): the validity period (its
                  expiry, its renewal), the chain of trust (issuers, intermediates), the name, the handshake's
                  protocol or ciphers, revocation
    dns_failure   the response code (RFC 1035, 2308): NXDOMAIN, SERVFAIL, REFUSED, no answer at all, or an
                  answer with the wrong address in it (NOERROR: "answered 10.40.9.9", "the A answers lack ...")
    client_error  the status code (RFC 9110: each 4xx is its own condition) and an OAuth error code (RFC 6749
                  section 5.2, RFC 6750 section 3.1)
    server_error  the status code: a 500 is the application's own error, a 502 an upstream's bad answer, a 503
                  a service unavailable, a 504 an upstream that did not answer (RFC 9110 section 15.6)
    any cause     the operating system's error number (POSIX errno, by its name or its C library message, and
                  the resolver's getaddrinfo errors): a disk that is full is not a file it may not write, nor a
                  socket that would block, nor a name that does not resolve; the signal that ended a
                  process (POSIX: its name, its number, the shell's exit code 128+n; the OOM killer's is
                  SIGKILL); a gRPC status code (grpc/doc/statuscodes.md); Redis's error reply (RESP); and SMTP's
                  enhanced status code's subject (RFC 3463: 4.7.0 is not 4.3.1)
    on one target the exception classes its code raises: ``ZeroDivisionError`` is not ``ProgrammingError``;
                  and the error codes and identifiers it writes: ``InvalidProviderToken`` is not
                  ``ExpiredProviderToken`` (TARGETS_OWN: the status, the classes and the codes compare with the
                  same target's past only)
A text that states two kinds of one family states none of it (a note that compares them), and a text that
states none leaves the candidate open: a paraphrase or another language is compared by meaning, as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

TERMS: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "tls_error": {
        "certificate": {
            "validity": ("expir", "not yet valid", "notafter"),
            "trust": (
                "self-signed",
                "self signed",
                "issuer",
                "unknown authority",
                "untrusted",
                "unknown ca",
                "unable to verify the first certificate",
                "intermediate",
                "chain of trust",
                "ca bundle",
            ),
            # RFC 6125 matches the name against the certificate's subjectAltName (RFC 5280 section 4.2.1.6)
            "name": ("mismatch", "not match", "doesn't match", "not valid for", "subject alternative name", "subjectaltname"),
            # the protocol or ciphers the two sides could not agree on: RFC 8446's handshake_failure alert, by its name or
            # number (40); not the words "handshake failure", which every certificate failure also is ("TLS handshake
            # failures: the certificate had expired")
            "handshake": (
                "alert handshake failure",
                "handshake_failure",
                "alert 40",
                "unsupported protocol",
                "no shared cipher",
                "wrong version number",
                "protocol version",
            ),
            "revocation": ("revoked",),
        }
    },
    "dns_failure": {
        "rcode": {
            "NXDOMAIN": ("nxdomain", "does not exist", "no such host", "not known"),
            "SERVFAIL": ("servfail", "server failure", "dnssec"),
            "REFUSED": ("refused the query", "query refused", "(refused)"),
            "no answer": ("timed out", "timeout", "timing out", "no answer within", "no response"),
            # an answer, with a wrong address in it (NOERROR): the record is there, its data is not the one expected
            "wrong answer": (
                "unexpected answer",
                "unexpected_answer",
                "answers lack",
                "answers are not exactly",
                "wrong address",
                "old address",
                "stale address",
                "wrong ip",
                "old ip",
            ),
        }
    },
}
# Terms that state a kind only when the text states no other of its family: a note about a chain or a name often
# tells of the renewal that installed it ("after the manual renewal only the leaf was installed")
CONTEXT: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {"tls_error": {"certificate": {"validity": ("renew",)}}}
ERRNO = {  # POSIX errno names and their glibc strerror() messages; EACCES and EPERM are one condition
    "ENOSPC": ("no space left on device",),
    "EDQUOT": ("disk quota exceeded",),
    "EACCES": ("permission denied", "operation not permitted", "EPERM"),
    "EROFS": ("read-only file system",),
    "ENOENT": ("no such file or directory",),
    "EMFILE": ("too many open files", "ENFILE"),
    "ENOMEM": ("cannot allocate memory",),
    "EAGAIN": ("resource temporarily unavailable", "EWOULDBLOCK"),
    "ECONNREFUSED": ("connection refused",),
    "ECONNRESET": ("connection reset by peer",),
    "ETIMEDOUT": ("connection timed out", "i/o timeout"),
    "EHOSTUNREACH": ("no route to host",),
    "ENETUNREACH": ("network is unreachable",),
    "EPIPE": ("broken pipe",),
    "EIO": ("input/output error",),
    "EADDRINUSE": ("address already in use",),
    "ESTALE": ("stale file handle",),
    "ENOTCONN": ("transport endpoint is not connected",),
    "EBUSY": ("device or resource busy",),
    "EEXIST": ("file exists",),
    "EINVAL": ("invalid argument",),
    "EFBIG": ("file too large",),
    "ECONNABORTED": ("software caused connection abort",),
    "ENOBUFS": ("no buffer space available",),
    "EADDRNOTAVAIL": ("cannot assign requested address",),
    "EHOSTDOWN": ("host is down",),
    "ENOTDIR": ("not a directory",),
    "EISDIR": ("is a directory",),
    "ENAMETOOLONG": ("file name too long",),
    "ELOOP": ("too many levels of symbolic links",),
    "ENOSYS": ("function not implemented",),
    # the resolver's (getaddrinfo, gai_strerror): a name that does not resolve is not a port that refuses
    "EAI_NONAME": ("name or service not known", "nodename nor servname provided", "no such host", "ENOTFOUND"),
    "EAI_AGAIN": ("temporary failure in name resolution",),
    "EAI_NODATA": ("no address associated with hostname",),
    "EAI_FAIL": ("non-recoverable failure in name resolution", "server misbehaving"),  # Go's resolver says the latter
}
ERRNO_WORDS = {word.lower(): name for name, words in ERRNO.items() for word in (name, *words)}
ERRNO_TEXT = re.compile(r"\b(" + "|".join(re.escape(word) for word in ERRNO_WORDS) + r")\b")
TARGETS_OWN = frozenset({"status", "exception", "code"})  # families a target chooses for itself: compared with its own past only
# gRPC status codes (grpc/doc/statuscodes.md), as Go's and Java's clients write them: "code = Unavailable",
# "DEADLINE_EXCEEDED"
GRPC = (
    "Cancelled",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
)
GRPC_WORDS = {code.lower(): code for code in GRPC}
GRPC_SNAKE = {re.sub(r"(?<!^)(?=[A-Z])", "_", code).upper(): code for code in GRPC}
GRPC_CODE = re.compile(r"\bcode\s*[=:]\s*(" + "|".join(GRPC) + r")\b", re.I)  # "code = Unavailable desc = ..."
GRPC_NAME = re.compile(r"\b(" + "|".join(GRPC_SNAKE) + r")\b")  # "DEADLINE_EXCEEDED", as written: upper case
# POSIX signals that ended a process, by name, number or the shell's exit code (128 + n); the kernel's OOM
# killer sends SIGKILL: a worker killed for its memory is not one stopped by a deploy (SIGTERM) or crashed (SIGSEGV)
SIGNALS = {
    "SIGKILL": ("sigkill", "signal 9", "exit code 137", "oomkilled", "oom-killer", "oom killer", "oom_kill"),
    "SIGTERM": ("sigterm", "signal 15", "exit code 143"),
    "SIGSEGV": ("sigsegv", "signal 11", "segmentation fault", "exit code 139"),
    "SIGABRT": ("sigabrt", "signal 6", "exit code 134"),
    "SIGBUS": ("sigbus", "signal 7"),
    "SIGINT": ("sigint", "signal 2", "exit code 130"),
    "SIGHUP": ("sighup", "signal 1"),
    "SIGPIPE": ("sigpipe", "signal 13"),
}
SIGNAL_WORDS = {word: name for name, words in SIGNALS.items() for word in words}
SIGNAL_TEXT = re.compile(r"\b(" + "|".join(re.escape(word) for word in SIGNAL_WORDS) + r")\b")
# Redis's error replies (RESP: "-LOADING Redis is loading the dataset in memory"), as the server writes them
REDIS = (
    "LOADING",
    "BUSY",
    "NOSCRIPT",
    "MASTERDOWN",
    "MISCONF",
    "READONLY",
    "NOAUTH",
    "WRONGPASS",
    "NOPERM",
    "EXECABORT",
    "NOREPLICAS",
    "CLUSTERDOWN",
    "TRYAGAIN",
    "CROSSSLOT",
    "WRONGTYPE",
)
REDIS_CODE = re.compile(r"\b(" + "|".join(REDIS) + r"|OOM(?= command not allowed))\b(?= [A-Za-z])")  # then its message
# The subject of SMTP's enhanced status code (RFC 3463) after its reply code (RFC 5321): "421 4.7.0 too many
# connections" (X.7, security or policy) is not "452 4.3.1 insufficient system storage" (X.3, the mail system). The
# class (2, 4, 5: success, transient, permanent) and the detail aside: servers differ on them for one condition (a
# full spool is 4.3.1 to one, 4.3.2 to another). A version (3.6.1) follows no reply code.
SMTP_CODE = re.compile(r"(?<![\w.])[245]\d\d[ -][245]\.(\d{1,3})\.\d{1,3}\b(?!\.\d)")
# An exception's class, as runtimes name them (ZeroDivisionError, TopicAuthorizationException): a class names one
# failure of the code, so on the same target a past incident that names only others is about another failure
EXCEPTION = re.compile(r"\b([A-Z][A-Za-z0-9]{1,60}?(?:Error|Exception|Fault))\b")
# and as an API writes its error's type in snake case (Elasticsearch's cluster_block_exception, Stripe's
# api_connection_error): the same classes, spelt for JSON; not a key that holds an error ("last_error": ...)
SNAKE_EXCEPTION = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:exception|error))\b(?![\"']?\s*[:=])")  # a key is no type
# An error code, state or identifier as software writes it, in CamelCase of three words at least or in UPPER_SNAKE
# (APNs' InvalidProviderToken, GraphQL's GRAPHQL_VALIDATION_FAILED, Kubernetes' ImagePullBackOff, a setting's
# SUPPLIER_API_URL): like an exception's class, it names what failed in the target's own terms, so on the same target
# a past incident that names only others is about another thing. Two-word CamelCase is left out: it is as often a
# product's name (CloudFront, HikariPool) as a code. A class qualified by a dot is a place in the code, not a code it
# writes (a stack frame's com.shop.pricing.PromoRuleCache.get, PromoRuleCache.java:51).
CODE = re.compile(r"(?<![\w.$])((?:[A-Z][a-z0-9]+){3,}|[A-Z]{2,}(?:_[A-Z]{2,})+)\b(?!\.\w)(?!\s*=)")  # not a setting: X=1, $X
SETS = frozenset({"exception", "code"})  # families stated as a set: another failure when the sets share nothing
OAUTH = (
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "invalid_token",
    "insufficient_scope",
)
OAUTH_CODE = re.compile(r"\b(" + "|".join(OAUTH) + r")\b")
STATUS_4XX = re.compile(r"(?<![\d.:/-])(4\d\d)(?![\d/-]|[.:]\d)")  # "getting 403." ends a sentence; 403.5 is no code
# a 5xx status as it is written (RFC 9110's 500-511, and the 520-527 a CDN answers for its origin): not a
# setting's value (=512M, (500)), a size or a duration (500 ms), nor another number (AD's "data 532")
STATUS_5XX = re.compile(r"(?<![\w.:/=(\[-])(50\d|51[01]|52[0-7])(?![\w/%)\]-]|\.\w)(?!\s*(?:ms|s|m|h|kb|mb|gb|kib|mib|gib)\b)", re.I)


# Go's crypto/x509 HostnameError, as Kubernetes tooling writes it: "x509: certificate is valid for *.elb.amazonaws.com,
# not pay.example.com" (a name mismatch, in words that hold none of the name terms)
VALID_FOR = re.compile(r"\bvalid for [^\s,]+(?:, [^\s,]+)*, not [^\s,]+", re.I)
# a name that answered an address: "answered 10.40.9.9", "resolved to 198.51.100.7", "still pointed at 10.0.0.9"
ANSWERED = re.compile(
    r"\b(?:answered|returned|resolved to|resolves to|resolving to|points? (?:to|at)|pointing (?:to|at)|"
    r"pointed (?:to|at))\s+(?:the\s+)?(?:old\s+|wrong\s+|stale\s+|previous\s+)?(?:address\s+|ip\s+)?"
    r"\d{1,3}(?:\.\d{1,3}){3}\b",
    re.I,
)
# A term denied by the words just before it, a word at most between: "not expired", "was never revoked", "no longer
# trusted", "isn't a mismatch". Not "no" or "without": what is missing states the failure ("installed without the
# intermediate", "no intermediate in the chain").
DENIALS = ("not ", "never ", "n't ")
DENIED = re.compile(r"(?:\b(?:not|never|no longer)|n't)\s+(?:[\w-]+\s+)?$")
# Kinds stated by a phrase's shape rather than its terms: root cause -> (family, kind, pattern)
SHAPES = {"tls_error": ("certificate", "name", VALID_FOR), "dns_failure": ("rcode", "wrong answer", ANSWERED)}


def of(text: str, cause: str | None, status: int | None = None) -> dict[str, str]:
    """The kinds ``text`` states under ``cause``, family -> kind. ``status``: the status code as measured,
    which states the family ``status`` (else a lone 4xx code in the text does). Read once per text: a search
    compares one evidence and the same incidents with many candidates."""
    return dict(_read(text, cause, status))


@functools.lru_cache(maxsize=4096)
def _read(text: str, cause: str | None, status: int | None) -> tuple[tuple[str, str], ...]:
    low = text.lower()
    found = {
        family: one(kind for kind, terms in kinds.items() if any(says(low, term) for term in terms))
        for family, kinds in TERMS.get(cause or "", {}).items()
    }
    for family, kinds in CONTEXT.get(cause or "", {}).items():
        if not any(says(low, term) for terms in TERMS[cause or ""][family].values() for term in terms):
            found[family] = one(kind for kind, terms in kinds.items() if any(says(low, term) for term in terms))
    if (shape := SHAPES.get(cause or "")) and shape[2].search(text):
        family, kind, _ = shape
        found[family] = one([*filter(None, [found.get(family)]), kind])
    found["errno"] = one(ERRNO_WORDS[word] for word in ERRNO_TEXT.findall(low))
    found["grpc"] = one([GRPC_WORDS[c.lower()] for c in GRPC_CODE.findall(text)] + [GRPC_SNAKE[c] for c in GRPC_NAME.findall(text)])
    found["signal"] = one(SIGNAL_WORDS[word] for word in SIGNAL_TEXT.findall(low))
    found["redis"] = one(REDIS_CODE.findall(text))
    found["smtp"] = one(f"X.{code}" for code in SMTP_CODE.findall(text))
    found["exception"] = ",".join(sorted(set(EXCEPTION.findall(text)) | set(SNAKE_EXCEPTION.findall(text))))
    found["code"] = ",".join(
        sorted({code for code in CODE.findall(text) if code not in GRPC_SNAKE and code not in ERRNO and not EXCEPTION.fullmatch(code)})
    )
    if cause == "client_error":
        found["oauth"] = one(OAUTH_CODE.findall(low))
        found["status"] = str(status) if status is not None and 400 <= status < 500 else one(STATUS_4XX.findall(text))
    if cause == "server_error":
        found["status"] = str(status) if status is not None and 500 <= status < 600 else one(STATUS_5XX.findall(text))
    return tuple((family, kind) for family, kind in found.items() if kind)


def says(low: str, term: str) -> bool:
    """Whether ``low`` (a lower-cased text) states ``term`` once at least without denying it: "the certificate itself
    was valid and not expired" states no expiry, "had not been renewed, so it expired" does. A term that is a
    denial itself ("not yet valid", "not valid for") is stated as written."""
    if term not in low:
        return False
    if term.startswith(DENIALS):
        return True
    return any(not DENIED.search(low, max(0, at - 30), at) for at in (m.start() for m in re.finditer(re.escape(term), low)))


def one(kinds: Iterable[str]) -> str:
    """The kind, if exactly one is stated; else none (two kinds of one family compare, they do not state)."""
    stated = set(kinds)
    return stated.pop() if len(stated) == 1 else ""


def differs(here: Mapping[str, str], there: Mapping[str, str]) -> str:
    """How ``there`` (a past incident's kinds) is another failure than ``here``, in a few words; "" if it is not."""
    return "; ".join(
        f"{family} {there[family]}, here {here[family]}"
        for family in sorted(here.keys() & there.keys())
        if not same(family, here[family], there[family])
    )


def same(family: str, here: str, there: str) -> bool:
    """Whether two kinds of one family are one: equal, or for a set (exception classes) sharing a member."""
    if family in SETS:
        return bool(set(here.split(",")) & set(there.split(",")))
    return here == there
