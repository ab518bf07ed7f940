"""What a stored diagnosis may say: this investigation's facts, and the chosen past fix quoted and attributed.

A model summarising an investigation has read several past incidents. What it writes is stored, sent in
alerts and recalled later, so it must not carry another incident's text as if it were this one's: a
sentence that names another incident, repeats four words in a row of one, or repeats a name or token
only one of them has (a host, a change ticket, a key) is dropped. The chosen incident's fix is then
quoted with its source: ``#12 on api: 'raised the pool to 40'``.

>>> attributed("api answers 500. Like #7 (pg-logistics) restart it.", facts="api: 5xx", chosen=row12,
...            others=[row7])
"api answers 500. #12 on api: 'raised maximumPoolSize to 40 (CHG-1498)'"
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from monitor.core.incidents import Incident
from monitor.memory.embedding import incident_text

NAMED = re.compile(r"(?<![\w.-])([a-z0-9_]+(?:[.-][a-z0-9_]+)+)(?::\d+)?", re.IGNORECASE)


def named(text: str) -> frozenset[str]:
    """Hosts, tickets, upstreams: any dotted or hyphenated name in ``text`` (``pg-main.db.internal:5432`` names
    ``pg-main.db.internal`` and ``pg-main``; ``CHG-1866`` too); numbers, versions and addresses are not.
    Broader than :func:`monitor.memory.components.extract` on purpose: what a sentence may have borrowed."""
    found: set[str] = set()
    for match in NAMED.finditer(text):
        name = match.group(1).lower().strip(".-")
        if not re.search(r"[a-z]", name) or re.fullmatch(r"v?[\d.]+", name):  # numbers, addresses, versions
            continue
        found.add(name)
        head = name.split(".", 1)[0]
        if "." in name and "-" in head:
            found.add(head)
    return frozenset(found)


SHINGLE = 4  # words in a row that, shared with another incident, make a sentence a copy of it
SENTENCE = re.compile(r"(?<=[.!?;])\s+")
TOKEN = re.compile(r"\w+", re.UNICODE)


def shingles(text: str) -> set[tuple[str, ...]]:
    tokens = TOKEN.findall(text.lower())
    return {tuple(tokens[i : i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1)}


def tokens(text: str) -> set[str]:
    """Names and tokens that identify one thing: hosts, tickets, keys (letters with digits, 6 or more)."""
    plain = {t for t in TOKEN.findall(text.lower()) if len(t) >= 6 and re.search(r"\d", t) and re.search(r"[a-z]", t)}
    return plain | set(named(text))


def quote(incident: Incident) -> str:
    fix = " ".join(str(incident.resolution or "no resolution noted").split())
    return f"#{incident.id} on {incident.target}: '{fix}'"


def borrowed(sentence: str, own: str, others: Sequence[Incident], chosen: int | None) -> bool:
    """Whether ``sentence`` carries text of another incident that this investigation (``own``) does not have."""
    if any(int(n) != chosen for n in re.findall(r"#(\d+)", sentence)):
        return True
    mine_shingles, mine_tokens = shingles(own), tokens(own)
    said_shingles, said_tokens = shingles(sentence) - mine_shingles, tokens(sentence) - mine_tokens
    for other in others:
        text = incident_text(other)
        if said_shingles & shingles(text) or said_tokens & tokens(text):
            return True
    return False


def attributed(summary: str, *, facts: str, chosen: Incident | None, others: Sequence[Incident], limit: int = 500, found: str = "") -> str:
    """The diagnosis to store: the summary's own sentences (``facts`` when none is left), then the quoted fix.

    ``facts`` is what this investigation found, in a sentence fit to store (:func:`monitor.memory.findings.sentence`:
    never a dump of the answer); ``found`` all it saw (the evidence as text), what makes a summary's sentence its
    own; ``chosen`` the past incident whose fix applies; ``others`` every other incident the model was shown.
    """
    own = (found or facts) + "\n" + (incident_text(chosen) if chosen else "")
    others = [o for o in others if chosen is None or o.id != chosen.id]
    source, chosen_id = (quote(chosen), chosen.id) if chosen else ("", None)
    kept = [s for s in SENTENCE.split(summary.strip()) if s and not borrowed(s, own, others, chosen_id)]
    text = " ".join(kept) or facts
    if source and source not in text:
        room = max(0, limit - len(source) - 1)
        text = (text if len(text) <= room else text[: max(0, room - 1)] + "…") + " " + source
    return text[:limit].strip()
