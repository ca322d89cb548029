"""Leases over SQL, and the fence every write passes: one writer per session, even a stalled one.

A lease row (session_id, token, host, pid, started, expires_at) names the owner. Renewal alone cannot
stop a stalled owner (SIGSTOP, a GC pause, a laptop asleep, a partition from the database) from
writing when it wakes: its lease may have expired and been taken over meanwhile. So every write
transaction first reads the session's lease row, locked (`FOR UPDATE` on PostgreSQL; on SQLite the
transaction holds the write lock), and applies only if:

- this store acquired the session: the row still holds this store's token. A row that expired but
  that nobody took over still counts: acquiring rewrites the token under the same lock, so the old
  owner's write lands wholly before the new owner's acquire (and its load sees it), or is refused.
  The write does not extend the lease; the renewal loop does.
- this store has not acquired it (a brand-new session's create, a script using the store without
  leases, a callback's write after its session was closed): no row names another owner, expired or
  not, since an expired owner may be stalled rather than dead. Only `acquire` decides that.

A refused write raises nothing on the worker: the session is marked lost (logged once), every later
write of it by this store is dropped before reaching the database, and `flush(session_id)` raises
LeaseLost until this store acquires the session again. Renewal that finds the lease gone marks it
lost the same way. `release` and `close` delete only rows holding this store's token.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..util.secrets import dumps
from .protocol import Db, LeaseLost, Owner, SessionBusy

if TYPE_CHECKING:
    from .worker import Workers

log = logging.getLogger(__name__)

LEASE = "SELECT token, host, pid FROM leases WHERE session_id = ?"


class SqlLeases:
    """The lease half of SqlStore: acquire, renew, release, delete, and the fence around writes."""

    workers: Workers[Db]
    owner: Owner
    lease_ttl: float

    def _init_leases(self) -> None:
        self._held: set[str] = set()
        """Leases to renew: acquired, not released, not lost."""
        self._fenced: set[str] = set()
        """Acquired and not released: a write needs this store's token in the row. Changed on the
        session's worker only, so it is in step with the session's queued writes."""
        self._lost: dict[str, tuple[str, int]] = {}
        """Sessions taken over by another owner (its host and pid when known), until acquired again."""

    # The fence
    def _write(self, session_id: str, op: Callable[[Db], Any], fused: Callable[[Db], Any] | None = None) -> None:
        """Queue `op` to run in one transaction with the fence. `fused`, where the database can, does the
        fence and the write in one statement (PostgreSQL's append) and returns the lease row it read."""

        def fenced(db: Db) -> None:
            if session_id in self._lost:
                return  # refused already: flush(session_id) says so, and nothing more of it is written
            if fused is not None and db.dml_in_cte and session_id in self._fenced:
                self._check(session_id, fused(db))
                return
            with db.transaction():
                if session_id not in self._fenced and db.lock_session:  # in step with a concurrent acquire
                    db.execute(db.lock_session, (session_id,))
                if self._check(session_id, db.execute(LEASE + db.lock_rows, (session_id,)).fetchone()):
                    op(db)

        self.workers.of(session_id).write(fenced)

    def _check(self, session_id: str, row: Any) -> bool:
        """Whether this store may write the session, given its lease row (None: no row); else mark it lost."""
        if (row is not None and row[0] == self.owner.token) or (row is None and session_id not in self._fenced):
            return True
        host, pid = (row[1], int(row[2])) if row is not None else ("", 0)
        self._mark_lost(session_id, host, pid)
        return False

    def _mark_lost(self, session_id: str, host: str = "", pid: int = 0) -> None:
        if session_id not in self._lost:
            self._lost[session_id] = (host, pid)
            self._held.discard(session_id)
            log.warning("%s", LeaseLost(session_id, host, pid))

    def lease_lost(self, session_id: str) -> LeaseLost | None:
        """The error for a session this store lost to another owner, or None."""
        if (holder := self._lost.get(session_id)) is None:
            return None
        return LeaseLost(session_id, *holder)

    # Leases
    async def acquire(self, session_id: str) -> None:
        await self.workers.of(session_id).call(lambda db: self._acquire(db, session_id))

    def _acquire(self, db: Db, session_id: str) -> None:
        me = self.owner
        with db.transaction():
            if db.lock_session:
                db.execute(db.lock_session, (session_id,))
            db.execute(
                "INSERT INTO leases (session_id, token, host, pid, started, expires_at) VALUES (?, '', '', 0, '', 0) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id,),
            )
            row = db.execute(
                "SELECT token, host, pid, started, expires_at FROM leases WHERE session_id = ?" + db.lock_rows,
                (session_id,),
            ).fetchone()
            now = db.now()
            token, host, pid, started, expires_at = row
            holder = Owner(host, pid, started, token)
            if token and token != me.token and expires_at > now and not holder.visibly_gone(me.host):
                raise SessionBusy(session_id, host, pid, expires_at - now)
            db.execute(
                "UPDATE leases SET token = ?, host = ?, pid = ?, started = ?, expires_at = ? WHERE session_id = ?",
                (me.token, me.host, me.pid, me.started, now + self.lease_ttl, session_id),
            )
        # Committed: this store writes the session from now on (on its worker, so in order with its writes).
        self._lost.pop(session_id, None)
        self._fenced.add(session_id)
        self._held.add(session_id)

    async def release(self, session_id: str) -> None:
        """Give the lease back: only a row holding this store's token is deleted."""
        self._held.discard(session_id)

        def op(db: Db) -> None:
            db.execute("DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, self.owner.token))
            self._fenced.discard(session_id)

        await self.workers.of(session_id).call(op)

    async def delete(self, session_id: str) -> None:
        def op(db: Db) -> None:
            self._acquire(db, session_id)  # not while another process writes it
            with db.transaction():
                if db.lock_session:
                    db.execute(db.lock_session, (session_id,))
                row = db.execute(LEASE + db.lock_rows, (session_id,)).fetchone()
                if row is None or row[0] != self.owner.token:  # taken over since: this store stalled
                    raise SessionBusy(session_id, row[1] if row else "", int(row[2]) if row else 0, self.lease_ttl)
                _unlink_forks(db, session_id)
                for table, column in DELETED:
                    db.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))
            self._fenced.discard(session_id)
            self._held.discard(session_id)

        await self.workers.of(session_id).call(op)

    async def renew(self, skip: frozenset[str] = frozenset()) -> list[str]:
        token, ttl = self.owner.token, self.lease_ttl

        def op(db: Db) -> list[str]:
            held = set(self._held)  # before reading: a session acquired from now on is not taken for lost
            with db.transaction():
                expires = db.now() + ttl
                if skip:  # a skipped lease keeps this owner's token: it may be renewed again if nobody took it
                    for session_id in sorted(held - skip):
                        db.execute(
                            "UPDATE leases SET expires_at = ? WHERE token = ? AND session_id = ?",
                            (expires, token, session_id),
                        )
                else:
                    db.execute("UPDATE leases SET expires_at = ? WHERE token = ?", (expires, token))
                still = {
                    row[0] for row in db.execute("SELECT session_id FROM leases WHERE token = ?", (token,)).fetchall()
                }
            lost = sorted(sid for sid in held - still if sid in self._held)  # not released meanwhile
            for session_id in lost:
                self._mark_lost(session_id)
            return lost

        if not self._held:
            return []
        return await self.workers.all[0].call(op)

    async def _release_all(self) -> None:
        if self._held:
            self._held.clear()
            await self.workers.all[0].call(
                lambda db: db.execute("DELETE FROM leases WHERE token = ?", (self.owner.token,))
            )


DELETED = (("messages", "session_id"), ("shares", "session_id"), ("leases", "session_id"), ("sessions", "id"))
"""What a deleted session leaves behind nothing of: (table, its session id column)."""


def _unlink_forks(db: Db, session_id: str) -> None:
    """Forks of a deleted session forget where they came from: no session names one that is gone."""
    rows = db.execute("SELECT id, data FROM sessions WHERE data LIKE ?", ('%"forked_from"%',)).fetchall()
    for fork_id, text in rows:
        data = json.loads(text)
        if data.get("forked_from") == session_id:
            del data["forked_from"]
            db.execute("UPDATE sessions SET data = ? WHERE id = ?", (dumps(data), fork_id))
