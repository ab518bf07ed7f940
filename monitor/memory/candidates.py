"""A past incident that might apply to this investigation, how it is weighed, and how a model reads it.

    Candidate           one past incident, with its similarity to the evidence and what it states
    Recalled            the candidates of one search, best first, and how they were compared
    listing(found)      what a model is shown: a header, then one line per candidate
    parse_listing(...)  the candidates back from that text (the builtin model reads what a model reads)

How candidates are found and which may apply: :mod:`monitor.memory.recall`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LINE_TEXT, MIN_LINE_TEXT = 240, 40  # characters of a candidate's symptom and of its fix on its line, at most / least
# A candidate that names a host or upstream the evidence names is about the same component: it outranks
# one that does not by this much (the spread of cosines between a scenario's candidates is 0.01-0.05).
NAMED_BONUS = 0.05
# With an embedder, the words' share counts too (hybrid: meaning and words), on the same scale: between the
# applicable candidates of a scenario, cosines spread by 0.011 (sd) and words' shares by 0.055, over all
# candidates 0.024 and 0.115 (orig + blind), a ratio of 0.2 both ways. Without an embedder it is the similarity.
WORDS_WEIGHT = 0.2
# A candidate that quotes a message the target says now (quotes.echoed, 0.67-1.0) names this failure in the
# software's own words: it outranks every candidate that does not (cosines spread by 0.01-0.05), and of two
# that do, the one whose quote the target says whole.
ECHO_BONUS = 0.1
# A candidate that states this failure's kind in its protocol's terms (the same errno, signal, rcode, gRPC or
# Redis code, certificate or OAuth condition, exception class: kinds.of) is about the same failure: as much
# again. The status code does not count: most incidents of a target share it.
KIND_BONUS = 0.1
# The failing signal's rare words: those of the evidence that one candidate in three or fewer also says of its
# failure (a host, "Metaspace", an "nbf" claim): what sets one incident apart from the others alike it, where
# the words all of them share (the message's boilerplate, the protocol's vocabulary) set none apart. Their
# weighted share (failures.distinctive, 0..1) weighs in as much as a named component, at most.
DISTINCT_WEIGHT = 0.1
# A candidate that names another instance of a component the evidence names, and not that one (another Redis,
# another origin: recall.sibling), was a failure made and fixed there: it ranks below those that do not, by as much
# as a named component ranks above.
SIBLING_PENALTY = 0.1
# And where another candidate names the instance the evidence names (recall.weighed), one that names another instead
# ranks below every candidate: of two incidents alike, the one about this Redis is about this failure's place.
DISPLACED_PENALTY = 1.0


@dataclass(frozen=True)
class Candidate:
    """A past incident that might apply, and how like this investigation's evidence it is."""

    id: int
    target: str
    root_cause: str | None
    status: str
    symptom: str
    fix: str | None
    similarity: float  # by meaning (cosine) with an embedder; by words without one
    words: float = 0.0  # the weighted share of the evidence's words the incident has (recall.overlap)
    shared: tuple[str, ...] = ()  # names the evidence and the incident's failure (not its fix) both mention
    sources: tuple[str, ...] = ()
    same_target: bool = False
    differs: str = ""  # how it is another failure than the evidence shows (failures.other_failure)
    kinds: tuple[tuple[str, str], ...] = ()  # the kinds of failure it states, (family, kind)
    said: str = ""  # what it said of its failure (failures.failure_layers, joined)
    echo: float = 0.0  # the share of a message it quotes that the target says now (quotes.echoed)
    agrees: str = ""  # the kinds it states as the evidence does, "errno EMFILE" (failures.agreeing)
    opened: float = 0.0  # when it opened and was resolved (None: not resolved), what became of its fix (families)
    closed: float | None = None
    related: int | None = None  # the past incident the memory asserted it was, when it came (families.kin)
    unexplained: str = ""  # a failure the evidence states besides the one it agrees on (failures.unexplained)
    verbatim: bool = False  # it holds this answer whole, word for word (failures.verbatim)
    sibling: str = ""  # another instance of a component the evidence names, named instead (failures.sibling)
    confirmed: bool = False  # a person said it is this failing signal's failure (links.heard)
    distinct: float = 0.0  # the share of the failing signal's rare words it says of its failure (failures.distinctive)
    displaced: bool = False  # a sibling where another candidate names the instance the evidence names (recall.weighed)

    @property
    def score(self) -> float:
        """Similarity, with the words' share, a named component, a quote said now and the same kind of failure
        weighing in (WORDS_WEIGHT, NAMED_BONUS, ECHO_BONUS, KIND_BONUS)."""
        named = NAMED_BONUS if self.shared or "component" in self.sources else 0.0
        kind = KIND_BONUS if self.agrees else 0.0
        return (
            self.similarity
            + WORDS_WEIGHT * self.words
            + named
            + ECHO_BONUS * self.echo
            + kind
            + DISTINCT_WEIGHT * self.distinct
            - SIBLING_PENALTY * bool(self.sibling)
            - DISPLACED_PENALTY * self.displaced
        )

    def line(self, limit: int = LINE_TEXT) -> str:
        """One line for the model: who, what it looked like, what fixed it, and how close it is."""
        names = f", names {flat(', '.join(self.shared[:3]))} too" if self.shared else ""
        names += ", shares a component" if "component" in self.sources else ""
        names += f", quotes what the target says now ({self.echo:.2f})" if self.echo else ""
        names += f", states the same {flat(self.agrees)}" if self.agrees else ""
        names += f", another failure: {flat(self.differs)}" if self.differs else ""
        names += f", names another: {flat(self.sibling)}" if self.sibling else ""
        names += ", which others name" if self.displaced else ""
        names += ", people said it is this failure" if self.confirmed else ""
        head = (
            f"#{self.id} [{self.status}] target {self.target} (root cause: {self.root_cause or 'unknown'}), "
            f"similarity {self.similarity:.3f}, words {self.words:.2f}, distinct {self.distinct:.2f}{names}"
        )
        return f"{head}: {clip(self.symptom, limit)} | fix: {clip(self.fix or 'none noted', limit)}"


def flat(text: str) -> str:
    """``text`` on one line, without the ``": "`` that ends a line's head (a health document's own keys may
    hold one): what :data:`LINE` reads back whole."""
    return " ".join(str(text).replace(": ", " ").split())


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class Recalled:
    """The candidates of one search, best first, and how they were found (``note`` says what was missing)."""

    candidates: list[Candidate] = field(default_factory=list)
    method: str = "hybrid"
    note: str = ""
    floor: float = 0.0  # the similarity below which nothing applies (recall.MIN_COSINES, recall.MIN_WORDS)


HEADER = "Past incidents like this investigation's evidence, most similar first ({how}; {floor}):"
BY_MEANING = "compared by meaning and by words"
FLOOR = re.compile(r"similarity below (-?\d+(?:\.\d+)?) is unlike")
LINE = re.compile(
    r"^#(\d+) \[(\w*)\] target (\S+) \(root cause: (\w+)\), similarity (-?\d+(?:\.\d+)?), words ([\d.]+), distinct ([\d.]+)"
    r"(?:, names (.+?) too)?(, shares a component)?(?:, quotes what the target says now \(([\d.]+)\))?"
    r"(?:, states the same (.+?))?(?:, another failure: (.+?))?(?:, names another: (.+?))?(, which others name)?"
    r"(, people said it is this failure)?: (.*) \| fix: (.*)$"
)


def listing(found: Recalled, budget: int = 0) -> str:
    """What search_incidents shows: how it compared, then one whole line per candidate; with a ``budget`` (the
    characters working memory keeps of an observation), each line's texts are clipped so that every
    candidate fits, rather than the last ones being cut off."""
    how = BY_MEANING if found.method == "hybrid" else f"compared by words only: {found.note}"
    floor = f"similarity below {found.floor:.3f} is unlike any incident seen to apply"
    head = HEADER.format(how=how, floor=floor)
    for limit in range(LINE_TEXT, MIN_LINE_TEXT - 1, -20):
        text = "\n".join([head, *(c.line(limit) for c in found.candidates)])
        if not budget or len(text) <= budget:
            break
    return text


def parse_listing(text: str, target: str) -> tuple[list[Candidate], float]:
    """The candidates and the similarity floor back from :func:`listing`'s text (what a model reads)."""
    found = [read_line(match, target) for match in map(LINE.match, map(str.strip, text.splitlines())) if match is not None]
    floor = FLOOR.search(text)
    return found, float(floor.group(1)) if floor else 0.0


def read_line(match: re.Match[str], target: str) -> Candidate:
    """One candidate back from its line (:data:`LINE`)."""
    number, status, where, cause, similarity, share, distinct, names, component, echo, agrees, differs, other, displaced, confirmed = (
        match.groups()[:15]
    )
    symptom, fix = match.groups()[15:]
    return Candidate(
        int(number),
        where,
        None if cause == "unknown" else cause,
        status,
        symptom,
        None if fix == "none noted" else fix,
        float(similarity),
        float(share),
        tuple((names or "").split(", ")) if names else (),
        ("component",) if component else (),
        where == target,
        differs or "",
        echo=float(echo or 0.0),
        agrees=agrees or "",
        distinct=float(distinct),
        confirmed=bool(confirmed),
        sibling=other or "",
        displaced=bool(displaced),
    )
