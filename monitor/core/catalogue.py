"""What is a secret: the keys and words that name one, and credentials known by their shape whatever key they come
under (tokens, private keys, the values the config itself substituted from the environment).

The token shapes are those of detect-secrets' regex plugins (AWS, Artifactory, Discord, GitHub, GitLab, JWT,
Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, Square, Stripe, Telegram, Twilio; Azure's ``AccountKey=`` is a
secret key's value), with Google API keys and a bare AWS secret access key added; ``tests/test_secret_shapes.py``
holds that detect-secrets finds nothing in what :func:`monitor.core.redaction.redact_text` left. A token is hidden
whole: a shape matches its start, and the rest of its characters go with it (a JWT's signature, a Slack token's
last part).

``remember`` is told, by the config's ``${VAR}`` substitution, each value it put in; those that are secrets (the
variable's name says so, or the value is shaped like a token) are hidden wherever a text shows them: a condition
``[BODY].status == ${HEALTH_SECRET}`` is a check's own words in its result's detail.
"""

from __future__ import annotations

import re
import threading

HIDDEN = "***"
# Query keys and JSON keys whose value is a secret, and words that make a key one (db_pwd, X-Auth-Token)
SECRET_QUERY_KEYS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "client_secret",
        "code",
        "id_token",
        "key",
        "pass",
        "passwd",
        "password",
        "private_token",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
    }
)
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pw",
        "pass",
        "secret",
        "token",
        "apikey",
        "privatekey",
        "accountkey",
        "signature",
        "sig",
        "credential",
        "credentials",
        "creds",
        "cred",
        "auth",
        "session",
        "sessionid",
        "sessid",
        "sid",
    }
)
SECRET_ENDINGS = ("password", "passwd", "token", "secret", "sessionid", "sessid")  # csrftoken, JSESSIONID, PHPSESSID
_SHAPES = (
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key id
    r"AKC[a-zA-Z0-9]{10,}|AP[0-9A-F][a-zA-Z0-9]{8,}",  # Artifactory
    r"[MNO][a-zA-Z0-9_-]{23,25}\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}",  # Discord bot
    r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{30,}|github_pat_[A-Za-z0-9_]{30,}",  # GitHub
    r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,}",  # GitLab
    r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_.+/=-]*)?",  # JWT
    r"npm_[A-Za-z0-9]{36}",  # npm
    r"sk-[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"pypi-AgE[A-Za-z0-9_-]{50,}",  # PyPI
    r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}",  # SendGrid
    r"xox[abposre]-[0-9A-Za-z-]{10,}|T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{20,}",  # Slack: a token, a webhook's path
    r"sq0(?:csp|atp)-[0-9A-Za-z_-]{22,}",  # Square
    r"[rsp]k_(?:live|test)_[0-9a-zA-Z]{16,}",  # Stripe
    r"(?:AC|SK)[a-z0-9]{32}",  # Twilio
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
)  # Azure's AccountKey= is a secret key's value (monitor.core.redaction.SECRET_WORDS)
_TOKEN = re.compile(rf"(?<![A-Za-z0-9_])(?:{'|'.join(_SHAPES)})[A-Za-z0-9_\-+/=]*")
# Shapes with no letters to start from, each tried only where a run of text has what it needs
_MAILCHIMP = re.compile(r"(?<![0-9a-z])[0-9a-z]{32}-us[0-9]{1,2}(?![0-9])")
_TELEGRAM = re.compile(r"(?<![0-9])[0-9]{8,10}:[0-9A-Za-z_-]{35}")
# An AWS secret access key on its own: 40 characters of base64 with upper case, lower case and a digit (a commit id,
# all lower case hex, is not one); not a path (it would start with /).
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_RUN = re.compile(r"[A-Za-z0-9_\-+/=.:~]{12,}")  # where a token can be, in a long word of the text
_PRIVATE_KEY = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(.+?)(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)", re.S)
_PRIVATE_KEY_CUT = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)((?:[A-Za-z0-9+/=:,. \t\r\n-]|\\[rn])+)")

MAX_REMEMBERED = 1024
_remembered: tuple[str, ...] = ()  # longest first; swapped whole, so a reader never sees it change under it
_remembering = threading.Lock()


def hide_tokens(text: str) -> str:
    """``text`` with every token of the catalogue hidden, wherever it is written. Only the long words of a text
    are searched (a scan of the whole text by the catalogue would cost more than the rest of the redaction)."""
    if len(text) < 12:
        return text
    found = {token for word in text.split() if len(word) >= 12 for run in _RUN.findall(word) for token in _tokens(run)}
    for token in sorted(found, key=len, reverse=True) if found else ():
        text = text.replace(token, HIDDEN)
    return text


def _tokens(run: str) -> list[str]:
    found = _TOKEN.findall(run)
    if "-us" in run:
        found += _MAILCHIMP.findall(run)
    if ":" in run:
        found += _TELEGRAM.findall(run)
    if len(run) >= 40:
        found += [key for key in _BASE64_40.findall(run) if _token_shaped(key) and not key.startswith("/")]
    return found


def hide_private_keys(text: str) -> str:
    """The body of every PEM private key hidden (its BEGIN and END lines kept), to where it stops if it was cut."""
    if "PRIVATE KEY" not in text:
        return text
    text = _PRIVATE_KEY.sub(rf"\1{HIDDEN}\3", text)
    return _PRIVATE_KEY_CUT.sub(rf"\1{HIDDEN}", text)


def remember(value: str, *, secret: bool) -> None:
    """Hide ``value`` from now on if it is a secret: ``secret`` (its variable's name says so) and at least 6
    characters, not only digits; or shaped like a token, whatever its name (16+ characters, no space, with upper
    and lower case letters and a digit, not a URL or a path). A plain word, a port, a host or a URL is left to be read."""
    global _remembered
    if not (_named_secret(value) if secret else _token_shaped(value)) or value in _remembered:
        return
    with _remembering:
        kept = (value, *_remembered)[:MAX_REMEMBERED]
        _remembered = tuple(sorted(kept, key=len, reverse=True))


def forget() -> None:
    """Hide no remembered value any more (a test's isolation)."""
    global _remembered
    with _remembering:
        _remembered = ()


def hide_remembered(text: str) -> str:
    """``text`` with every remembered value hidden."""
    for value in _remembered:
        if value in text:
            text = text.replace(value, HIDDEN)
    return text


def _named_secret(value: str) -> bool:
    return len(value) >= 6 and not value.isdigit() and HIDDEN not in value


def _token_shaped(value: str) -> bool:
    return (
        len(value) >= 16
        and not any(c.isspace() for c in value)
        and "://" not in value
        and not value.startswith("/")
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )
