"""What a past incident quotes its target as saying, and whether the target says it now.

A note that quotes a message (``Redis answered "MISCONF ... RDB snapshots"``) states which failure it
was in the target's own words. When the target answers now and says too few of those words, the note is
about another failure, however alike the two read by meaning: measured on e5 vectors, a Redis ``READONLY``
replica and a Redis ``MISCONF`` snapshot error are nearer than a paraphrase is to its own fix.

Only a verbatim quote counts: text in double or typographic quotes, in ASCII, as software writes its
messages. A quote in another script or with accents is a translation, which another wording does not
contradict; a note without quotes is compared by meaning, as before.

    unsaid(answer, text)    how ``text`` quotes what ``answer`` does not say, in a few words; "" if it does not
    echoed(answer, text)    how much of a message ``text`` quotes ``answer`` says now: 0, or the share of its words

The converse holds too: a note that quotes what the target says now (``« NOAUTH Authentication required. »``
in a French note, ``"nats: maximum connections exceeded"`` on another client of the same NATS) is about this
failure, in any language around the quote and on any target that saw the same message. Here every quoting
style counts (double, typographic, guillemets, German, CJK corner brackets, backticks), since a quote kept
verbatim in a translated note is still the software's own message; but at least three of its words, and two
thirds of them (:data:`ECHOED`), must be said now, numbers aside; a status line's reason phrase is no message.

Either way a quote that gives one of the answer's fields another value (:func:`clashes`: "reset reason:
connection failure" against "reset reason: overflow") is another failure, whatever else the two share.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from email.utils import parsedate_tz
from http import HTTPStatus

QUOTED = re.compile(
    r'"([^"\n]{6,200})"|\u201c([^\u201d\n]{6,200})\u201d'
    r"|(?<![\w'])'((?:[^'\n]|(?<=\w)'(?=\w)){6,200}?)'(?!\w)"
)  # 'single': an apostrophe inside a word is none
WORD = re.compile(r"[a-z][a-z0-9_.-]*[a-z0-9]")  # a name stays whole: mq-prod-1.internal is not mq-prod-2.internal
SAID = 0.6  # the share of a quote's words an answer must hold to say it: most of them, more than half (the same
# message: 1.0); PostgreSQL's global "sorry, too many clients already" says half of a role's "too many connections for role"
ANY_QUOTE = re.compile(
    r'"([^"\n]{4,200})"|\u201c([^\u201d\n]{4,200})\u201d|\u00ab\s*([^\u00bb\n]{4,200}?)\s*\u00bb'
    r"|\u201e([^\u201c\u201d\n]{4,200})[\u201c\u201d]|\u300c([^\u300d\n]{2,200})\u300d|`([^`\n]{4,200})`"
)
ECHOED, ECHO_WORDS = 2 / 3, 3  # a quote the answer says now: two thirds of its words, and three at least
# ("connection refused" alone is every refused connection's message, not one failure's)
TOKEN = re.compile(r"[^\W_][\w.:-]*[^\W_]", re.UNICODE)  # any script; an address stays whole: 10.0.3.40:6379
REASONS = [set(TOKEN.findall(status.phrase.lower())) for status in HTTPStatus]  # "503 Service Unavailable" is no message
# A field of a message as software writes it, "reset reason: overflow", "state=FAILED": its name, then its value up to
# the clause's end. Two messages that give one field values sharing no word are two failures, however many of
# their other words they share (Envoy's "reset reason: overflow" is not its "reset reason: connection failure").
FIELD = re.compile(
    r"(?<![\w.-])([a-z][a-z0-9 _-]{0,30}?[a-z0-9])\s*(?:=|:(?!//))\s*[\"'\[]?((?:[^,;:=\"'\n()\[\]{}.]|\.(?!\s))"
    r"{1,80})",
    re.I,
)  # a value ends with its sentence: "... before headers. reset reason: overflow"; "https://" is no field
# A value's words: its alphanumeric parts that are letters only (an id's or an address's letters are no word:
# 4bf92f3577b3, fe80), a measure's unit aside (950 ms, 3 days: a time, like a count, is no failure)
PARTS = re.compile(r"[^\W_]+", re.UNICODE)
# The header lines a check keeps before the body it quotes (Content-Type, Server): the layer that answered, not the
# failure's message; an error page served by nginx now and by Envoy before is compared by what it says.
HEADERS = re.compile(r"^(?:[A-Za-z][A-Za-z0-9-]*: [^\n]*\n)+\n", re.M)
MEASURE = re.compile(r"\d[\d.,]*\s*[^\W\d_]+", re.UNICODE)


def quotes(text: str) -> list[str]:
    """The verbatim quotes in ``text``: quoted, ASCII, with at least one word."""
    found = (next(group for group in match.groups() if group) for match in QUOTED.finditer(text or ""))
    return [quote for quote in found if quote.isascii() and any(len(w) > 2 for w in WORD.findall(quote.lower()))]


def fields(text: str) -> dict[str, frozenset[str]]:
    """The fields ``text`` writes (:data:`FIELD`), name -> the words of its value; a value without a word (a
    count, a port, a time, an id, a date) says nothing of which failure it was, and one with accents is a
    translation, which another wording does not contradict."""
    return {name: words for name, (words, _) in _fields(text).items()}


@functools.lru_cache(maxsize=1024)
def _fields(text: str) -> dict[str, tuple[frozenset[str], str]]:
    """:func:`fields`, each with its first value as written (what :func:`contradicted` shows)."""
    found: dict[str, tuple[frozenset[str], str]] = {}
    body = HEADERS.sub("", text)
    for name, at, written in _values(body):
        line = body[at : at + 100].split("\n", 1)[0]  # a date is shorter than 100 characters
        parts = PARTS.findall(MEASURE.sub(" ", written.lower()))
        value = frozenset(part for part in parts if len(part) > 1 and part.isalpha())
        if value and written.isascii() and parsedate_tz(line) is None:
            name = " ".join(name.lower().split())
            words, shown = found.get(name, (frozenset(), written.strip()))
            found[name] = (words | value, shown)
    return found


def _values(body: str) -> list[tuple[str, int, str]]:
    """(name, where its value starts, the value) of each field :data:`FIELD` finds in ``body``. One word before a
    colon is the name of a field nested in the value, as an error chain writes it: "port 5432 failed: FATAL:  sorry,
    too many clients already" gives FATAL the message, and the failed connection FATAL and its message."""
    found: list[tuple[str, int, str]] = []
    at, outer = 0, None
    while match := FIELD.search(body, at):
        value = match.group(2).strip()
        if outer is not None and match.start() != outer[1]:
            outer = None
        if NESTED.match(body, match.end()) and re.fullmatch(r"[^\W\d_][\w-]*", value):
            outer = outer or (match.group(1), match.start(2))
            at = match.start(2)
            continue
        if outer is not None:
            found.append((outer[0], outer[1], body[outer[1] : match.end()]))
            outer = None
        found.append((match.group(1), match.start(2), match.group(2)))
        at = match.end()
    return found


NESTED = re.compile(r"[ \t]*:")


def clashes(quote: str, answer: str) -> str:
    """The field ``quote`` gives another value than ``answer`` gives it, as ``"reset reason"``; "" if none. Of
    several, the last: the innermost of a chain, the message proper ("FATAL" of "port 5432 failed: FATAL: ...")."""
    now = fields(answer)
    clashing = [name for name, value in fields(quote).items() if (there := counterpart(name, now)) and not alike(value, now[there])]
    return clashing[-1] if clashing else ""


def counterpart(name: str, names: Iterable[str]) -> str:
    """The field among ``names`` that is ``name``: the same name, or one that ends with the other's two words or more,
    as a sentence runs into a field's name ("retried and the latest reset reason: ..." writes "reset reason"); ""
    if none. One word alone is no name to match within another ("reason" is every reason)."""
    mine = name.split()
    for other in names:
        theirs = other.split()
        short = min(len(mine), len(theirs))
        if other == name or (short >= 2 and mine[-short:] == theirs[-short:]):
            return other
    return ""


def alike(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two values of a field tell of one failure: they share a word, of four letters or more where both have
    such words ("for", "not" and "the" are in every other message: "no pg_hba.conf entry for host" is not "password
    authentication failed for user")."""
    long, long2 = (frozenset(w for w in value if len(w) >= 3) for value in (one, other))
    if not (long and long2):
        return bool(one & other)
    return len(long & long2) * 2 > min(len(long), len(long2))


def contradicted(answer: str, text: str) -> str:
    """``"gives upstream cluster 'promo-engine', here 'stock-hold-svc'"`` when ``text`` (what a past incident
    said of its failure, quoted or not: "checkout-api 503: ... (upstream cluster: promo-engine)") gives a field of
    the answer another value (:func:`clashes`); "" when it does not, or there is no answer to compare."""
    name = clashes(text, answer) if answer.strip() else ""
    if not name:
        return ""
    here = _fields(answer)[counterpart(name, _fields(answer))][1]
    return f"gives {name} '{_fields(text)[name][1][:40]}', here '{here[:40]}'"


def unsaid(answer: str, text: str) -> str:
    """``"quotes 'x', which the target does not say now"`` when every quote in ``text`` has less than
    :data:`SAID` of its words in ``answer``, or names what the answer does not (:func:`named`: another host,
    upstream or code); "" when there is no answer to compare, no quote, or one is said."""
    quoted = quotes(text)
    if not answer.strip() or not quoted:
        return ""
    heard = set(WORD.findall(answer.lower()))
    for quote in quoted:
        words = {word for word in WORD.findall(quote.lower()) if len(word) > 2}
        if len(words & heard) >= SAID * len(words) and spoken(named(words), heard) and not clashes(quote, answer):
            return ""
    shown = re.sub(r"[:|'\"]", " ", quoted[0])[:60].strip()
    return f"quotes '{shown}', which the target does not say now"


def echoed(answer: str, text: str) -> float:
    """The share of its words the answer says of the quote in ``text`` it says most of; 0.0 when it says none
    (fewer than :data:`ECHO_WORDS` words, or less than :data:`ECHOED` of them). Words of three letters or more,
    numbers aside: a status code or a count alone does not make two messages one. Every name it quotes must be
    said (:func:`named`): ``connect ECONNREFUSED 10.0.3.40:6379`` is another endpoint than ``...10.0.3.12:5432``."""
    heard = set(TOKEN.findall(answer.lower()))
    best = 0.0
    for match in ANY_QUOTE.finditer(text or ""):
        quote = next(group for group in match.groups() if group)
        words = {word for word in TOKEN.findall(quote.lower()) if len(word) > 2 and not word.isdigit()}
        if any(words <= reason for reason in REASONS) or not spoken(named(words), heard) or clashes(quote, answer):
            continue
        said = len(words & heard)
        if len(words) >= ECHO_WORDS and said >= ECHO_WORDS and said >= ECHOED * len(words):
            best = max(best, said / len(words))
    return best


def named(words: set[str]) -> set[str]:
    """The names among a quote's words: an address, a host, a version, a code such as ``52e``, an identifier
    such as ``psp-adyen`` or ``invoicing_ro``; any word with a digit, a dot, a colon, a dash or an underscore."""
    return {word for word in words if any(ch.isdigit() or ch in ".:-_" for ch in word)}


def spoken(names: set[str], heard: set[str]) -> bool:
    """Whether the answer (its words, ``heard``) says every one of ``names``: whole, as the start of a longer
    name it says (``10.0.3.12:5432`` by ``10.0.3.12:5432/orders``), or shortened to a name it says (``pg-main``
    says ``pg-main.db.internal``; a number such as ``10`` says no ``10.0.3.40:6379``)."""
    return all(
        name in heard
        or any(
            word.startswith((f"{name}.", f"{name}:", f"{name}/"))
            or (named({word}) and not word.replace(".", "").isdigit() and len(word) > 2 and name.startswith((f"{word}.", f"{word}:")))
            for word in heard
        )
        for name in names
    )
