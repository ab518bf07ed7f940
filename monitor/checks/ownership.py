"""Which live replicas check a target: rendezvous (highest random weight) hashing over the members.

Every member scores every target name with a stable hash of the pair; the highest score owns it. A
member that leaves gives each of its targets to that target's second-highest scorer, so its share
spreads over the others and nothing else moves; when it returns, it takes back exactly what it had.
Every replica computes the same answer from the same list of members, with no leader::

    members = [Member(0, "eu"), Member(1, "eu"), Member(2, "us")]
    owners("shop", members)                  # (Member(1, "eu"),): one owner
    owners("shop", members, locations=2)     # one member in each of the two best-scored locations

A quorum target is checked from ``locations`` different places: the locations are ranked by the target's
score of the location, and each is served by its best-scoring live member.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from monitor.config import Target


@dataclass(frozen=True, order=True)
class Member:
    """A live replica: its number (``replica_index``) and where it checks from."""

    id: int
    location: str = ""


def score(name: str, key: str) -> int:
    """The stable weight of the pair (target, member or location): the same in every process."""
    return int.from_bytes(hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=8).digest(), "big")


def order(name: str, keys: Sequence[tuple[bytes, int]]) -> bytes:
    """The members (``keys``: each one's key, as :func:`score` writes it, and its number) from the best score for
    ``name`` to the worst: :func:`score` of each pair, with the name hashed once."""
    prefix = hashlib.blake2b(f"{name}\0".encode(), digest_size=8)
    scored = []
    for key, member in keys:
        pair = prefix.copy()
        pair.update(key)
        scored.append((int.from_bytes(pair.digest(), "big"), member))
    scored.sort(key=itemgetter(0), reverse=True)
    return bytes(member for _, member in scored)


def owners(name: str, members: Sequence[Member], locations: int = 0) -> tuple[Member, ...]:
    """Who checks the target ``name``: its best-scoring member, or with ``locations`` (a quorum), the best
    member of each of its ``locations`` best-scoring locations (fewer when fewer are live)."""
    if not members:
        return ()

    def best(group: Sequence[Member]) -> Member:
        return max(group, key=lambda m: score(name, str(m.id)))

    if locations <= 0:
        return (best(members),)
    by_place: dict[str, list[Member]] = {}
    for member in members:
        by_place.setdefault(member.location, []).append(member)
    places = sorted(by_place, key=lambda place: score(name, f"location:{place}"), reverse=True)[:locations]
    return tuple(best(by_place[place]) for place in places)


def share(targets: Iterable[Target], members: Sequence[Member], me: int) -> list[Target]:
    """The targets member ``me`` checks among ``members``."""
    return [t for t in targets if any(m.id == me for m in owners(t.name, members, t.quorum.locations if t.quorum else 0))]


class Ranking:
    """Each target's members from best to worst score, worked out once for a list of targets: who checks what
    among any live subset is then a walk down each target's list, not a hash of every pair again.

    A daemon's workers share one location, so a target has one owner (a quorum's ``locations`` counts places,
    and there is one): its best-scoring live member, as :func:`owners` says. Members are numbered 0-255.
    """

    def __init__(self, targets: Sequence[Target], members: Sequence[int], before: Ranking | None = None) -> None:
        """``before``: the ranking this one replaces (a reload); its targets' orders are kept where the members
        are the same, so only new names are scored (50,000 targets times 16 members is 800,000 hashes)."""
        self.targets, self.members = list(targets), tuple(members)
        known = before._by_name() if before is not None and before.members == self.members else {}
        keys = [(str(m).encode(), m) for m in self.members]
        self._orders = [known.get(t.name) or order(t.name, keys) for t in self.targets]

    def _by_name(self) -> dict[str, bytes]:
        return {t.name: ranked for t, ranked in zip(self.targets, self._orders, strict=True)}

    def shares(self, live: Iterable[int]) -> dict[int, list[Target]]:
        """Each live member's share (an empty list for one that owns nothing)."""
        out: dict[int, list[Target]] = {member: [] for member in live}
        if not out:
            return out
        for target, order in zip(self.targets, self._orders, strict=True):
            owner = next((m for m in order if m in out), None)
            if owner is not None:
                out[owner].append(target)
        return out
