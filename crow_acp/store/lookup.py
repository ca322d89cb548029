"""Reads for the `crow` command: sessions by id prefix, and the store's state (schema version, leases).

A prefix is matched in the database, never by loading every session: `LIKE` with its wildcards
escaped (an id holding `%` or `_` matches only itself), and a `substr` equality beside it, since
SQLite's LIKE ignores case.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from .owners import visible
from .protocol import Caller, Db, Lease, SessionRecord, StoreState

if TYPE_CHECKING:
    from .worker import Workers

SESSION_COLUMNS = "id, cwd, title, created_at, updated_at, data, owner"
ESCAPE = "!"


def like_prefix(prefix: str) -> str:
    """`prefix` as a LIKE pattern that matches ids starting with exactly it."""
    escaped = prefix.replace(ESCAPE, ESCAPE * 2).replace("%", ESCAPE + "%").replace("_", ESCAPE + "_")
    return escaped + "%"


class SqlLookup:
    """The lookup half of SqlStore."""

    workers: Workers[Db]

    async def find_prefix(
        self, prefix: str, limit: int = 10, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        """Prompted sessions whose id starts with `prefix` (case-sensitive) that `visible_to` may see, most
        recently updated first."""
        condition, seen = visible(visible_to)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE prompted = 1 AND id LIKE ? ESCAPE '{ESCAPE}'"
            f" AND substr(id, 1, ?) = ?{condition} ORDER BY updated_at DESC LIMIT ?"
        )
        args = (like_prefix(prefix), len(prefix), prefix, *seen, limit)
        await asyncio.gather(*(worker.call(lambda _: None) for worker in self.workers.all))  # queued writes first
        return await self.workers.all[0].call(lambda db: [record_of(row) for row in db.execute(sql, args).fetchall()])

    async def state(self) -> StoreState:
        def op(db: Db) -> StoreState:
            version = db.execute("SELECT MAX(version) FROM crow_schema").fetchone()[0] or 0
            now = db.now()
            rows = db.execute(
                "SELECT session_id, host, pid, expires_at FROM leases WHERE token <> '' AND expires_at > ?"
                " ORDER BY expires_at",
                (now,),
            ).fetchall()
            leases = [Lease(sid, host, int(pid), expires - now) for sid, host, pid, expires in rows]
            return StoreState(int(version), leases)

        return await self.workers.all[0].call(op)


def record_of(row: Any) -> SessionRecord:
    sid, cwd, title, created, updated, data, owner = row
    return SessionRecord(sid, cwd, title, created, updated, json.loads(data), owner)
