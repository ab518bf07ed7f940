"""What a past incident quotes its target as saying, and whether the target says it now.

A note that quotes a message (``Redis answered "MISCONF ... RDB snapshots"``) states which failure it
was in the target's own words. When the target answers now and says too few of those words, the note is
about another failure, however alike the two read by meaning: measured on e5 vectors, a Redis ``READONLY``
replica and a Redis ``MISCONF`` snapshot error are nearer than a paraphrase is to its own fix.

Only a verbatim quote counts: text in double or typographic quotes, in ASCII, as software writes its
messages. A quote in another script or with accents is a translation, which another wording does not
contradict; a note without quotes is compared by meaning, as before.

    unsaid(answer, text)    how ``text`` quotes what ``answer`` does not say, in a few words; "" if it does not
"""

from __future__ import annotations

import re

QUOTED = re.compile(r'"([^"\n]{6,200})"|\u201c([^\u201d\n]{6,200})\u201d')
WORD = re.compile(r"[a-z][a-z0-9_.-]*[a-z0-9]")  # a name stays whole: mq-prod-1.internal is not mq-prod-2.internal
SAID = 0.5  # the share of a quote's words an answer must hold to say it: most of them (the same message: 1.0)


def quotes(text: str) -> list[str]:
    """The verbatim quotes in ``text``: quoted, ASCII, with at least one word."""
    found = (next(group for group in match.groups() if group) for match in QUOTED.finditer(text or ""))
    return [quote for quote in found if quote.isascii() and any(len(w) > 2 for w in WORD.findall(quote.lower()))]


def unsaid(answer: str, text: str) -> str:
    """``"quotes 'x', which the target does not say now"`` when every quote in ``text`` has less than
    :data:`SAID` of its words in ``answer``; "" when there is no answer to compare, no quote, or one is said."""
    quoted = quotes(text)
    if not answer.strip() or not quoted:
        return ""
    heard = set(WORD.findall(answer.lower()))
    for quote in quoted:
        words = {word for word in WORD.findall(quote.lower()) if len(word) > 2}
        if len(words & heard) >= SAID * len(words):
            return ""
    shown = re.sub(r"[:|'\"]", " ", quoted[0])[:60].strip()
    return f"quotes '{shown}', which the target does not say now"
