"""Members: the replicas that hold a lease in the shared database, and until when (the database's clock)."""

from __future__ import annotations

from monitor.core.members import Lease
from monitor.store.base import Writing
from monitor.store.rows import many


class MembersPart(Writing):
    """The replicas holding a lease in a shared database: renewed by each live one, expired for one that stopped renewing."""

    def renew_member(self, lease: float, location: str = "") -> list[Lease]:
        """Hold this replica's lease for ``lease`` more seconds; returns the live members' leases, this one
        included, by id.

        Time is the database's own, so replicas on machines whose clocks disagree agree on who is live."""
        now = self._engine.now
        with self._transaction() as db:
            db.execute(
                f"""INSERT INTO members (id, location, joined_at, expires_at) VALUES (?, ?, {now}, {now} + ?)
                    ON CONFLICT (id) DO UPDATE SET location = excluded.location, expires_at = excluded.expires_at,
                    joined_at = CASE WHEN members.expires_at < {now} THEN excluded.joined_at
                                     ELSE members.joined_at END""",
                (self._replica, location, lease),
            )
            cursor = db.execute(f"SELECT id, location, expires_at - {now} AS remaining FROM members WHERE expires_at > {now} ORDER BY id")
            names = [d[0] for d in cursor.description]
            return many(Lease, [dict(zip(names, row, strict=True)) for row in cursor.fetchall()])

    def leave_member(self) -> None:
        """End this replica's lease now (a clean stop): the others take its share at their next look."""
        with self._transaction() as db:
            db.execute("DELETE FROM members WHERE id = ?", (self._replica,))
