"""Whose a session is: the owner recorded with it, the users it is shared with, and what a caller may see.

One rule, in SQL so a list never loads sessions it then hides: a caller sees a session they own, one
shared with them, or, as an admin, every one. `access` answers the same None for a session that does
not exist and for one the caller may not see, from one query of the same shape, so neither the answer
nor its cost tells the two apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .protocol import Access, Caller, Db, Grant

if TYPE_CHECKING:
    from .worker import Workers

ACCESS = ("read", "full")

VISIBLE = " AND (owner = ? OR EXISTS (SELECT 1 FROM shares s WHERE s.session_id = sessions.id AND s.user_name = ?))"
"""The condition a non-admin caller's listing adds (their name twice)."""

GRANT = (
    "SELECT owner, (SELECT access FROM shares s WHERE s.session_id = sessions.id AND s.user_name = ?)"
    " FROM sessions WHERE id = ?"
)


def visible(caller: Caller | None) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition (and its arguments) limiting a listing to what `caller` sees; none for an admin."""
    if caller is None or caller.admin:
        return "", ()
    return VISIBLE, (caller.user, caller.user)


def grant_of(row: Any, caller: Caller) -> Grant | None:
    if row is None:
        return None
    owner, shared = row
    if caller.admin or owner == caller.user:
        return Grant(owner, "full")
    return Grant(owner, shared) if shared in ACCESS else None


class SqlOwners:
    """The ownership half of SqlStore."""

    workers: Workers[Db]

    async def access(self, session_id: str, caller: Caller) -> Grant | None:
        args = (caller.user, session_id)
        row = await self.workers.of(session_id).call(lambda db: db.execute(GRANT, args).fetchone())
        return grant_of(row, caller)

    async def share(self, session_id: str, user: str, access: Access | None) -> None:
        if access is not None and access not in ACCESS:
            raise ValueError(f"access must be one of {', '.join(ACCESS)}, not {access!r}")

        def op(db: Db) -> None:
            with db.transaction():
                db.execute("DELETE FROM shares WHERE session_id = ? AND user_name = ?", (session_id, user))
                if access is not None:
                    db.execute(
                        "INSERT INTO shares (session_id, user_name, access) VALUES (?, ?, ?)",
                        (session_id, user, access),
                    )

        await self.workers.of(session_id).call(op)

    async def shares(self, session_id: str) -> dict[str, Access]:
        sql = "SELECT user_name, access FROM shares WHERE session_id = ? ORDER BY user_name"
        rows = await self.workers.of(session_id).call(lambda db: db.execute(sql, (session_id,)).fetchall())
        return {user: access for user, access in rows if access in ACCESS}
