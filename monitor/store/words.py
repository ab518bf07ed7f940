"""The words of full-text search: which of a query's words a search looks for, and how many incidents
hold each word of the index.

Every incident a search matches is ranked (bm25 or ts_rank, about 5 µs each here), and an evidence text's
every word, ORed, matched most of the table: 225-330 ms a search over 100,000 incidents on SQLite and 10 s
on PostgreSQL (bench/recall.py). So a search looks for the ``MAX_WORDS`` rarest words of its query less
those held by more than ``COMMON_SHARE`` of the incidents (and by more than ``COMMON_MIN``), which say
little of which incident is meant; when every word is that common, for incidents holding all of the
``ALL_OF`` rarest. Of the incidents matched, the newest ``WINDOW`` are ranked: the cost of a search is
bounded whatever its words. Over bench/recall.py's 100,000 incidents the 20 best ranked have the
evidence's root cause as often as with every word and every match ranked (0.94 of them, 0.92 before);
leaving out the words held by more than 5% instead left 0.42, the 6 rarest words 0.48.

How many incidents hold a word (:meth:`Words.word_frequency`):

    SQLite       FTS5's own counts (``schema.FTS_VOCABULARY``), read whole into memory once (200 ms over
                 100,000 incidents here), again when the number of incidents changed by a tenth
    PostgreSQL   the statistics ANALYZE (autovacuum) keeps of ``incident_words.words``: the most common
                 words and their shares; a word not listed is held by fewer than the least common listed
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field

from monitor.store import schema
from monitor.store.base import Part

COMMON_SHARE = 0.2  # a word held by more than this share of the incidents is left out of a search...
COMMON_MIN = 1000  # ...when that is more than this many too (fewer are ranked quickly)
MAX_WORDS = 12  # words searched for at most, the rarest (an evidence text has 20 to 60)
ALL_OF = 3  # when every word is common: incidents holding all of the rarest few
WINDOW = 500  # the newest matches ranked (about 3 ms here); those with a resolution come first
STALE = 0.1  # SQLite's counts are read again when the number of incidents changed by this share


def query_words(text: str) -> list[str]:
    """The words of free text, lower case, once each (``\\w``: données and 超时 are words too)."""
    return list(dict.fromkeys(re.findall(r"\w{2,}", text.lower())))


def tokens(word: str) -> list[str]:
    """The index's words in a query word: ``job_missing`` is job and missing, as the tokenizers split it."""
    return re.findall(r"[^\W_]+", word)


def searched_words(words: list[str], frequency: dict[str, int], total: int) -> tuple[list[str], bool]:
    """The words a search looks for, rarest first, and whether an incident must hold all of them (see the
    module's docstring). ``frequency``: how many of the ``total`` incidents hold each word."""
    common = max(COMMON_SHARE * total, COMMON_MIN)
    rarest = sorted(words, key=lambda word: frequency.get(word, 0))
    rare = [word for word in rarest if frequency.get(word, 0) <= common][:MAX_WORDS]
    return (rare, False) if rare else (rarest[:ALL_OF], True)


def fts_query(words: list[str], every: bool = False) -> str:
    """A safe FTS5 query: any (or ``every``) of ``words``, each quoted (FTS5 reads a quoted ``job_missing``
    as the phrase "job missing")."""
    return (" AND " if every else " OR ").join(f'"{w}"' for w in words)


def tsquery(words: list[str], every: bool = False) -> str:
    """The same as a PostgreSQL ``tsquery``: ``_`` separates words, as punctuation does in the index
    (``schema_pg.PG_TEXT_OF``), so ``job_missing`` is the phrase job <-> missing."""
    terms = [" <-> ".join(f"'{part}'" for part in tokens(word)) for word in words]
    return (" & " if every else " | ").join(f"({term})" for term in terms if term)


def pg_tsquery(query: str, parser: str = "to_tsquery") -> str:
    """``query`` as a tsquery written in the statement, not a parameter: a prepared statement's generic plan
    cannot tell a common word from a rare one, and took PostgreSQL's search from 20 ms to 70-150 ms."""
    return f"{parser}('simple', '{query.replace(chr(39), chr(39) * 2)}')"


def folded(word: str) -> str:
    """A word as FTS5's unicode61 tokenizer indexes it: without diacritics (données: donnees)."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


class RarestListed(dict[str, int]):
    """Counts where a word not listed is held by ``floor`` incidents (fewer than any listed)."""

    def __init__(self, held: dict[str, int], floor: int) -> None:
        super().__init__(held)
        self.floor = floor

    def __missing__(self, word: str) -> int:
        return self.floor


@dataclass
class Counts:
    """How many incidents held each word of SQLite's index when there were ``total`` incidents."""

    total: int = -1
    held: RarestListed = field(default_factory=lambda: RarestListed({}, 0))
    lock: threading.Lock = field(default_factory=threading.Lock)


class Words(Part):
    """How many incidents hold each word of the full-text index."""

    @property
    def _word_counts(self) -> Counts:
        return self._state(Counts)

    def word_frequency(self, words: list[str]) -> tuple[dict[str, int], int]:
        """How many incidents hold each of ``words`` (a phrase such as ``job_missing``: its rarest word),
        and how many incidents there are."""
        held, total = self._pg_frequency() if self._shared else self._sqlite_frequency()
        key = (lambda part: part) if self._shared else folded
        return {word: min((held[key(part)] for part in tokens(word)), default=0) for word in words}, total

    def _sqlite_frequency(self) -> tuple[RarestListed, int]:
        """FTS5's counts as of the last read (a word not listed: held by one incident, or none)."""
        counts = self._word_counts
        total = int(self._scalar("SELECT (SELECT max(id) FROM incidents) - (SELECT min(id) FROM incidents) + 1") or 0)
        with counts.lock:
            if abs(total - counts.total) > STALE * counts.total:
                counts.held = RarestListed(
                    {row["term"]: int(row["doc"]) for row in self._rows(f"SELECT term, doc FROM {schema.FTS_VOCABULARY} WHERE doc > 1")}, 0
                )
                counts.total = total
            return counts.held, counts.total

    def _pg_frequency(self) -> tuple[RarestListed, int]:
        """Estimated from the statistics; a word not listed, as the least common listed (0: no statistics)."""
        total = float(self._scalar("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = to_regclass('incident_words')") or 0)
        row = self._one("""SELECT most_common_elems::text::text[] AS words, most_common_elem_freqs AS shares
                           FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'incident_words'
                           AND attname = 'words'""")
        if row is None or not row["words"]:
            return RarestListed({}, 0), round(total)
        words, shares = row["words"], row["shares"]
        held = {word: round(share * total) for word, share in zip(words, shares, strict=False)}
        return RarestListed(held, round(shares[len(words)] * total)), round(total)
