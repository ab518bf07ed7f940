"""Families of recurring failures: past incidents that were one failure, come back, and how each was fixed.

A failure that keeps coming back is the most common case of all, and each time it comes back the memory holds
one more incident like it. Weighed one by one, two such incidents are two candidates whose fix could apply,
and recall cannot choose between them; weighed as one family, each new member makes the claim stronger:
"3rd time since 12 Jun; fixed by raising the pool each time".

    Family              the members (oldest first), whose fix held, whose did not, and why they are one
    families(fitting)   the applicable candidates grouped into families
    kin(a, b)           why two past incidents are one failure ("": they are not)

Two past incidents that both could apply to this investigation are one failure (:func:`kin`) when a person
said so (``monitor incidents resolve N --same-as M``), or the memory asserted one as the other when it came
back (its ``related_incident``), or both of these hold: they happened in one place (the same target, or
targets naming the same component as the evidence, or quoting the same message the target says now, naming no
other instance of its component) under root causes alike, stating no kind of failure the
other contradicts; and they quote the same message the target says now (:func:`quoted_alike`), or their fixes
agree in words (:data:`FIX_AGREE`, :data:`FIX_RARE`), or the failure came back within :data:`HOLD` of the first one's resolution
(its fix did not hold). A person who said they are not one (``--not``) is never overruled.

A member's fix *held* unless the failure came back (another member opened, or this investigation began)
within :data:`HOLD` of its resolution. What the family asserts is the newest fix that held.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from monitor.core.causes import alike
from monitor.memory import kinds, quotes
from monitor.memory.candidates import Candidate
from monitor.memory.quotes import ECHOED

HOLD = 86_400.0  # a fix after which the failure came back within a day did not hold
# The share of two fixes' words (four letters or more) they have in common, over all their words, at which they
# are one fix written twice. Between the 2,016 pairs of fixes of one target's different past incidents in the
# eval's scenarios it is at most 0.33 (a renewal and a renewal for another reason); a fix noted twice in other
# words ("raised the pool to 40" / "pool raised to 40 again") shares more.
FIX_AGREE = 0.4
# Or two fixes name the same specific things: words that no other fix shown beside them has (postsuper, rndc
# retransfer, VACUUM FREEZE, hosts.toml), three at least. Between the 2,017 pairs above, three or more such words
# were shared by 5 (0.25%); two by 24, one by 261.
FIX_RARE = 3
WORD = re.compile(r"[^\W_][\w.-]*[^\W_]", re.UNICODE)


class Word(Protocol):
    """People's word on two incidents (:class:`monitor.core.incidents.Link`): the same failure, or not."""

    @property
    def incident(self) -> int: ...
    @property
    def other(self) -> int: ...
    @property
    def verdict(self) -> str: ...


@dataclass(frozen=True)
class Family:
    """Past incidents that were one failure, oldest first, and what became of each fix."""

    members: tuple[Candidate, ...]
    held: frozenset[int] = frozenset()  # the members whose fix held
    why: tuple[str, ...] = ()  # why they are one (:func:`kin`)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(c.id for c in self.members)

    @property
    def fixed(self) -> Candidate | None:
        """The newest member whose fix held and is noted: what the family asserts."""
        return next((c for c in reversed(self.members) if c.id in self.held and noted(c)), None)

    def story(self) -> str:
        """The family in a sentence: "3rd time since 12 Jun 2026 (#2, #5, #9); fixed by: ... (#9); the fix of #5
        did not hold"."""
        if len(self.members) < 2:
            return ""
        since = time.strftime("%d %b %Y", time.gmtime(self.members[0].opened)) if self.members[0].opened else "before"
        ids = ", ".join(f"#{c.id}" for c in self.members)
        said = [f"{ordinal(len(self.members) + 1)} time since {since} ({ids})"]
        fixed = self.fixed
        if fixed is not None:
            same = [c.id for c in self.members if c.id != fixed.id and noted(c) and fixes_agree(c.fix, fixed.fix)]
            said.append(f"fixed by: {fixed.fix} (#{fixed.id}{''.join(f', #{i}' for i in same)})")
        failed = [f"#{c.id}" for c in self.members if c.id not in self.held and noted(c)]
        if failed:
            said.append(f"the fix of {', '.join(failed)} did not hold")
        return "; ".join(said)


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def noted(c: Candidate) -> bool:
    fix = (c.fix or "").strip().lower()
    return bool(fix) and fix not in ("none noted", "no resolution noted")


def fix_words(fix: str | None) -> frozenset[str]:
    """A fix's words of four letters or more, numbers aside, each also by its parts (``gunicorn`` of
    ``gunicorn-media``) and in one form (:func:`stem`: "restarted" is "restart", "nodes" is "node")."""
    found = WORD.findall((fix or "").lower())
    found += [part for word in found if "-" in word for part in word.split("-")]
    return frozenset(stem(w) for w in found if len(w) >= 4 and not w.replace(".", "").isdigit())


SUFFIX = re.compile(r"(?<=[a-z]{4})(?:ing|ed|es|s)$")  # English inflections; a word of another language stays whole


def stem(word: str) -> str:
    return SUFFIX.sub("", word) if word.isascii() and word.isalpha() else word


def fixes_agree(one: str | None, other: str | None, pool: Sequence[frozenset[str]] | None = None) -> bool:
    """Whether two fixes are one fix written twice (:data:`FIX_AGREE`), or name the same specific things
    (:data:`FIX_RARE` words that no other fix of ``pool``, the words of each fix shown, has, but one that names
    those things too: the third fix of a family is no sign that its words are common)."""
    a, b = fix_words(one), fix_words(other)
    if not (a and b):
        return False
    both = a & b
    others = [words for words in pool or () if len(words & both) < FIX_RARE]
    rare = [w for w in both if pool is not None and not any(w in words for words in others)]
    return len(both) / len(a | b) >= FIX_AGREE or len(rare) >= FIX_RARE


def spoken(a: Candidate, b: Candidate, words: Iterable[Word]) -> str | None:
    """What people said of ``a`` and ``b``: "same", "not", or None when nobody did."""
    said = [w.verdict for w in words if {w.incident, w.other} == {a.id, b.id}]
    return "not" if "not" in said else said[0] if said else None


def contradict(a: Candidate, b: Candidate) -> bool:
    """Whether two past incidents state failures that cannot be one: another kind, or a field of their
    messages given other values (:func:`monitor.memory.quotes.contradicted`). The kinds a target chooses for itself
    (:data:`monitor.memory.kinds.TARGETS_OWN`: its status, its exception classes, its codes) compare with the same
    target's only: one client says ErrImagePull of the failure another says ImagePullBackOff of."""
    own = {} if a.target == b.target else dict.fromkeys(kinds.TARGETS_OWN)
    if kinds.differs({f: k for f, k in a.kinds if f not in own}, {f: k for f, k in b.kinds if f not in own}):
        return True
    return bool(a.said and b.said and (quotes.contradicted(a.said, b.said) or quotes.contradicted(b.said, a.said)))


def came_back(older: Candidate, newer: Candidate) -> bool:
    """Whether ``newer`` opened within :data:`HOLD` of ``older``'s resolution: ``older``'s fix did not hold."""
    return older.closed is not None and 0 <= newer.opened - older.closed <= HOLD


def kin(a: Candidate, b: Candidate, words: Iterable[Word] = (), pool: Sequence[frozenset[str]] | None = None) -> str:
    """Why two past incidents, both applicable to this investigation, are one failure, in a few words; "" when
    they are not (module docstring)."""
    said = spoken(a, b, words)
    if said is not None:
        return "people said so" if said == "same" else ""
    if a.related == b.id or b.related == a.id:
        return "asserted as one when it came back"
    echoed = quoted_alike(a, b)  # a message said now, of one component: a place too, whoever saw it
    place = a.target == b.target or bool(set(a.shared) & set(b.shared)) or (echoed and not (a.sibling or b.sibling))
    if not place or not alike(a.root_cause, b.root_cause) or contradict(a, b):
        return ""
    older, newer = sorted((a, b), key=lambda c: c.opened)
    if echoed:
        return "the same message quoted"
    if fixes_agree(a.fix, b.fix, pool):
        return "the same fix noted"
    return "came back within a day" if came_back(older, newer) else ""


def quoted_alike(a: Candidate, b: Candidate) -> bool:
    """Whether two past incidents quote the same message, and the target says it now. Words alike, a kind both
    state (an ``OutOfMemoryError``, a SERVFAIL) or a component both name are not enough: heap space is not
    Metaspace, and another failure of the same database is not this one."""
    return min(a.echo, b.echo) >= ECHOED and max(quotes.echoed(a.said, b.said), quotes.echoed(b.said, a.said)) >= ECHOED


def families(
    fitting: Sequence[Candidate], words: Sequence[Word] = (), *, now: float | None = None, shown: Sequence[Candidate] = ()
) -> list[Family]:
    """The applicable candidates grouped into families (each its members oldest first), in the order of their
    best-ranked member in ``fitting``; ``now``: when this investigation's failure began (the newest member's fix
    did not hold if it began within :data:`HOLD` of that member's resolution)."""
    group = {c.id: c.id for c in fitting}

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    pool = [fix_words(c.fix) for c in {c.id: c for c in (*shown, *fitting)}.values()]
    said: list[tuple[int, str]] = []
    for n, a in enumerate(fitting):
        for b in fitting[n + 1 :]:
            if reason := kin(a, b, words, pool):
                group[root(b.id)] = root(a.id)
                said.append((a.id, reason))
    members: dict[int, list[Candidate]] = {}
    for c in fitting:
        members.setdefault(root(c.id), []).append(c)
    when = time.time() if now is None else now
    return [
        replace(family(found, now=when), why=tuple(sorted({reason for i, reason in said if root(i) == head})))
        for head, found in members.items()
    ]


def family(members: Sequence[Candidate], *, now: float) -> Family:
    ordered = tuple(sorted(members, key=lambda c: (c.opened, c.id)))
    later = [*(c.opened for c in ordered[1:]), now]
    held = frozenset(c.id for c, after in zip(ordered, later, strict=True) if c.closed is None or after - c.closed > HOLD)
    return Family(ordered, held)
