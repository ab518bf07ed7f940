"""How a past incident's failure compares with this investigation's evidence.

failure_layers(row, opened)    what a past incident says of its failure, layer by layer
incident_kinds(...)            the kinds of failure it states (:mod:`monitor.memory.kinds`)
agreeing(here, there)          the kinds it states as the evidence does
unexplained(here, there, said) a failure the evidence states besides the one it agrees on (an aside)
other_failure(...)             how it is another failure than the evidence shows
echo_of(evidence, said)        how much of a message it quotes the target says now
distinctive(text, found)       each candidate's share of the failing signal's rare words
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from monitor.core.incidents import Incident
from monitor.memory import components, health, kinds, quotes
from monitor.memory.candidates import Candidate
from monitor.memory.evidence import Evidence, words


def agreeing(here: Mapping[str, str], there: Mapping[str, str], *, same_target: bool = True) -> str:
    """The kinds a past incident states (``there``) as the evidence does (``here``), but for the status code
    (most incidents of a target share it), and on another target for none of the kinds a target chooses for
    itself (kinds.TARGETS_OWN): "errno EMFILE; signal SIGKILL"; "" if none."""
    skip = {"status"} if same_target else {"status", *kinds.TARGETS_OWN}
    return "; ".join(
        f"{family} {here[family]}"
        for family in sorted(here.keys() & there.keys())
        if family not in skip and kinds.same(family, here[family], there[family])
    )


# The families of kinds that name a failure of their own (a process killed, a Redis error reply, an exception):
# an answer that states two of them tells of two failures, one of them maybe an aside ("FYI, last week: ...").
FAILURES = frozenset({"errno", "signal", "redis", "grpc", "smtp", "oauth", "exception"})


def unexplained(here: Mapping[str, str], there: Mapping[str, str], said: str, text: str = "") -> str:
    """A failure the evidence states (``here``; ``text``: its words) besides the one a past incident agrees on, that
    the incident (``there``, what it ``said``) does not tell of: "exception OutOfMemoryError"; "" when it agrees on
    no kind, or tells of all. An exception whose message states the kind agreed on (``OSError: [Errno 116] Stale
    file handle``) or named for it (``ReadOnlyError``) is that failure, wrapped (:func:`wraps`)."""
    agreed = {f: here[f] for f in here.keys() & there.keys() if f in FAILURES and kinds.same(f, here[f], there[f])}
    if not agreed:
        return ""
    low = said.lower()
    for family in sorted(FAILURES & here.keys() - there.keys()):
        stated = [k for k in here[family].split(",") if k.lower() not in low and not wraps(text, k, agreed)]
        if stated:
            return f"{family} {', '.join(stated)}"
    return ""


def wraps(text: str, name: str, agreed: Mapping[str, str]) -> bool:
    """Whether ``name`` (an exception class) is followed in ``text``, in the same string of the answer, by a
    message that states a kind agreed on, or is named for it (``ReadOnlyError`` for Redis's ``READONLY``): the same
    failure, as the code that caught it names it."""
    if any(len(kind) >= 4 and kind.lower() in name.lower() for kind in agreed.values()):
        return True
    for match in re.finditer(re.escape(name), text):
        tail = re.split(r'["\n]', text[match.end() : match.end() + 200], maxsplit=1)[0]
        stated = kinds.of(tail, None)
        if any(f in stated and kinds.same(f, stated[f], kind) for f, kind in agreed.items()):
            return True
    return False


def echo_of(evidence: Evidence, said: str) -> float:
    """How much of a message a past incident quotes (in ``said``) the target says now (:func:`quotes.echoed`)."""
    return quotes.echoed(f"{evidence.answer}\n{evidence.detail}", said)


def other_failure(evidence: Evidence, cause: str | None, stated: Mapping[str, str], said: str, *, same_target: bool = True) -> str:
    """How a past incident (its root cause, the kinds it states, what it said of its failure) is another
    failure than the evidence shows, in a few words; "" when nothing says so: another kind of failure
    (:mod:`.kinds`), a component it blames that the target's own health document says passes now
    (:mod:`.health`), a message it quotes that the target does not say now, or a field of the answer it gives
    another value (:mod:`.quotes`: "upstream cluster: promo-engine", here "upstream cluster: stock-hold-svc"),
    or an endpoint other than those the answer names (:func:`monitor.memory.components.elsewhere`).
    What a target answers (its status code, its messages) compares with what the same target answered
    before; another target that shares the failing component answers in its own words and codes."""
    here = evidence.kinds(cause)
    if not same_target:
        here = {family: kind for family, kind in here.items() if family not in kinds.TARGETS_OWN}
    found = (
        kinds.differs(here, stated),
        health.blamed_passing(evidence.answer, said),
        quotes.unsaid(evidence.answer, said) if same_target else "",
        quotes.contradicted(evidence.answer, said) if same_target else "",
        components.elsewhere(f"{evidence.answer}\n{evidence.detail}", said),
    )
    return "; ".join(part for part in found if part)


def failure_layers(row: Incident, opened: Mapping[str, Any]) -> list[str]:
    """What a past incident says of its failure, in layers: what its target answered when it opened
    (``opened``, its kept evidence), its summary, its diagnosis; never its suspected cause or its fix. Joined,
    they are its ``said`` (what the rules read)."""
    parts = [
        "\n".join(str(opened[key]) for key in ("error", "detail", "excerpt") if opened.get(key)),
        str(row.summary or ""),
        str(row.diagnosis or ""),
    ]
    return [part for part in parts if part]


def incident_kinds(row: Incident, layers: Sequence[str], opened: Mapping[str, Any]) -> dict[str, str]:
    """The kinds of failure a past incident states, read layer by layer (:func:`failure_layers`; a status code
    measured when it opened outranks one written). A kind the first layer states stands: a summary that says
    the certificate expired is not unsaid by a diagnosis that goes on to tell of revoked DNS credentials. The
    exception classes (a set) are read from all the layers at once."""
    status = opened.get("status_code")
    cause = row.root_cause
    stated: dict[str, str] = {}
    for layer in layers:
        for family, kind in kinds.of(layer, cause, status if isinstance(status, int) else None).items():
            stated.setdefault(family, kind)
    whole = kinds.of("\n".join(layers), cause)
    stated.update({family: kind for family, kind in whole.items() if family in kinds.SETS})
    return stated


def distinctive(text: str, found: Sequence[Candidate]) -> list[float]:
    """Each candidate's share of the failing signal's rare words (:data:`~monitor.memory.candidates.DISTINCT_WEIGHT`):
    the evidence's words, numbers aside, that one candidate in three or fewer says of its failure, rarer weighing
    more."""
    said = [words(c.said or c.symptom) for c in found]
    asked = {w for w in words(text) if len(w) > 2 and not w.isdigit()}
    held = {w: sum(w in t for t in said) for w in asked}
    rare = {w: math.log(len(said) / k) + 1 for w, k in held.items() if 1 <= k <= max(1, len(said) // 3)}
    total = sum(rare.values()) or 1.0
    return [sum(weight for w, weight in rare.items() if w in t) / total for t in said]


def sibling(names: frozenset[str], text: str, said: str = "") -> str:
    """``"redis-ratelimit, here redis-sessions"`` when a past incident's failure (``text``) names none of the
    components the evidence ``names`` but another of the same kind (the same first part of the name: another
    Redis, another origin, another broker of the cluster); "" otherwise. The same failure of another instance is
    another incident: its fix was made there. A name the evidence says itself (``said``: the cluster
    ``etcd-platform`` of its member ``etcd-0.etcd-platform.svc``) is no other instance."""
    here = sorted(n for n in names if components.matchable(n))
    if not here or components.named_in(text, here):
        return ""
    there = sorted(n for n in components.written(text) if components.matchable(n))
    heard = said.lower()
    pairs = [(t, h) for t in there for h in here if t != h and stem(t) == stem(h) and t.lower() not in heard]
    return f"{pairs[0][0]}, here {pairs[0][1]}" if pairs else ""


def stem(name: str) -> str:
    """A component's kind as its name says: ``redis`` of ``redis-sessions-0``; "" for a name too short to tell."""
    first = re.split(r"[-.]", name, maxsplit=1)[0]
    return first if len(first) >= 3 and not first.isdigit() else f"\x00{name}"


def verbatim(answer: str, said: str) -> bool:
    """Whether a past incident holds this answer whole, word for word (40 characters or more): the same body,
    which any service built alike answers, not a message of a component the two share."""
    body = " ".join(quotes.HEADERS.sub("", answer).split())
    return len(body) >= VERBATIM and body.lower() in " ".join(said.split()).lower()


VERBATIM = 40  # the shortest answer that, held whole by another target's incident, is that answer and no message
