"""The store over SQL: one implementation for SQLite and PostgreSQL, which differ only in their `Db`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from ..history import EntryMeta, StoredMessage
from .protocol import Owner, SessionBusy, SessionRecord
from .worker import Workers

T = TypeVar("T")

SESSION_COLUMNS = "id, cwd, title, created_at, updated_at, data"


class Db(Protocol):
    """One connection as a worker thread uses it."""

    lock_rows: str
    """What makes a SELECT lock the rows it reads until the transaction ends ("" where writes serialize anyway)."""
    dml_in_cte: bool
    """Whether a WITH clause may hold an INSERT (PostgreSQL): an append is then a single statement."""

    def execute(self, sql: str, args: Iterable[Any] = ()) -> Any: ...
    def transaction(self) -> AbstractContextManager[Any]: ...
    def now(self) -> float:
        """The clock leases are measured against: the database server's, so machines' clocks may differ."""


class SqlStore:
    """A SessionStore over a Db; see crow_acp/store/__init__.py for the design."""

    def __init__(self, workers: Workers[Db], *, owner: Owner | None = None, lease_ttl: float = 30.0) -> None:
        self.workers = workers
        self.owner = owner or Owner.this_process()
        self.lease_ttl = lease_ttl
        self._held: set[str] = set()

    def _write(self, session_id: str, op: Callable[[Db], Any]) -> None:
        self.workers.of(session_id).write(op)

    # Writes
    def create(self, record: SessionRecord, entries: Sequence[StoredMessage] = ()) -> None:
        prompted = int(any(entry.message.get("role") == "user" for entry in entries))
        args = (record.id, record.cwd, record.title, record.created_at, record.updated_at, _dump(record.data), prompted)
        rows = [_row(record.id, entry) for entry in entries]

        def op(db: Db) -> None:
            with db.transaction():
                db.execute(f"INSERT INTO sessions ({SESSION_COLUMNS}, prompted) VALUES (?, ?, ?, ?, ?, ?, ?)", args)
                for row in rows:
                    _insert(db, row)

        self._write(record.id, op)

    def append(self, session_id: str, entry: StoredMessage) -> None:
        row = _row(session_id, entry)
        prompted = int(entry.message.get("role") == "user")

        def op(db: Db) -> None:
            touch = (time.time(), prompted, session_id)
            if db.dml_in_cte:  # one statement, one round trip, atomic on its own
                db.execute(f"WITH added AS ({INSERT} RETURNING 1) {TOUCH}", (*row, *touch))
                return
            with db.transaction():
                db.execute(INSERT, row)
                db.execute(TOUCH, touch)

        self._write(session_id, op)

    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None:
        sets: list[str] = ["updated_at = ?"]
        args: list[Any] = [time.time()]
        if title is not None:
            sets.append("title = ?")
            args.append(title)
        if data is not None:
            sets.append("data = ?")
            args.append(_dump(data))
        sql = f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?"
        self._write(session_id, lambda db: db.execute(sql, (*args, session_id)))

    def update_message(
        self, session_id: str, row_id: int, *, message: dict[str, Any] | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        for column, value in (("message", message), ("extra", extra)):
            if value is not None:
                self._write(session_id, _statement(
                    f"UPDATE messages SET {column} = ? WHERE session_id = ? AND seq = ?", (_dump(value), session_id, row_id)
                ))

    def move_first(self, session_id: str, row_id: int) -> None:
        sql = "UPDATE messages SET pos = (SELECT MIN(pos) FROM messages WHERE session_id = ?) - 1 WHERE session_id = ? AND seq = ?"
        self._write(session_id, lambda db: db.execute(sql, (session_id, session_id, row_id)))

    def compact(self, session_id: str, archived: list[int], appended: list[StoredMessage]) -> None:
        rows = [_row(session_id, entry) for entry in appended]
        archive = [(session_id, seq) for seq in archived]

        def op(db: Db) -> None:
            with db.transaction():
                for args in archive:
                    db.execute("UPDATE messages SET active = 0 WHERE session_id = ? AND seq = ?", args)
                for row in rows:
                    _insert(db, row)
                db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))

        self._write(session_id, op)

    # Reads
    async def flush(self) -> None:
        await self.workers.flush()

    async def get(self, session_id: str) -> SessionRecord | None:
        def op(db: Db) -> SessionRecord | None:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return _record(row) if row else None

        return await self.workers.of(session_id).call(op)

    async def list_sessions(self, cwd: str | None = None) -> list[SessionRecord]:
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE prompted = 1"
        args: tuple[Any, ...] = ()
        if cwd:
            sql, args = sql + " AND cwd = ?", (cwd,)
        sql += " ORDER BY updated_at DESC"
        await self._barrier()  # this process's queued writes first, whichever worker holds them
        return await self.workers.all[0].call(lambda db: [_record(row) for row in db.execute(sql, args).fetchall()])

    async def load(self, session_id: str) -> list[StoredMessage]:
        sql = "SELECT seq, ord, message, extra, active FROM messages WHERE session_id = ? ORDER BY pos, seq"
        rows = await self.workers.of(session_id).call(lambda db: db.execute(sql, (session_id,)).fetchall())
        return [StoredMessage(json.loads(m), EntryMeta.from_json(json.loads(e)), bool(a), row_id=s, order=o) for s, o, m, e, a in rows]

    async def _barrier(self) -> None:
        await asyncio.gather(*(worker.call(lambda _: None) for worker in self.workers.all))

    # Leases
    async def acquire(self, session_id: str) -> None:
        await self.workers.of(session_id).call(lambda db: self._acquire(db, session_id))
        self._held.add(session_id)

    def _acquire(self, db: Db, session_id: str) -> None:
        me = self.owner
        with db.transaction():
            db.execute(
                "INSERT INTO leases (session_id, token, host, pid, started, expires_at) VALUES (?, '', '', 0, '', 0) "
                "ON CONFLICT (session_id) DO NOTHING",
                (session_id,),
            )
            row = db.execute(
                "SELECT token, host, pid, started, expires_at FROM leases WHERE session_id = ?" + db.lock_rows, (session_id,)
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

    async def release(self, session_id: str) -> None:
        self._held.discard(session_id)
        sql = "DELETE FROM leases WHERE session_id = ? AND token = ?"
        await self.workers.of(session_id).call(lambda db: db.execute(sql, (session_id, self.owner.token)))

    async def delete(self, session_id: str) -> None:
        def op(db: Db) -> None:
            self._acquire(db, session_id)  # not while another process writes it
            with db.transaction():
                for table, column in (("messages", "session_id"), ("leases", "session_id"), ("sessions", "id")):
                    db.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))

        await self.workers.of(session_id).call(op)
        self._held.discard(session_id)

    async def renew(self) -> list[str]:
        token, ttl = self.owner.token, self.lease_ttl

        def op(db: Db) -> set[str]:
            with db.transaction():
                db.execute("UPDATE leases SET expires_at = ? WHERE token = ?", (db.now() + ttl, token))
                return {row[0] for row in db.execute("SELECT session_id FROM leases WHERE token = ?", (token,)).fetchall()}

        if not self._held:
            return []
        still = await self.workers.all[0].call(op)
        lost = sorted(self._held - still)
        self._held -= set(lost)
        return lost

    async def ping(self) -> None:
        await asyncio.gather(*(worker.call(lambda db: db.execute("SELECT 1").fetchone()) for worker in self.workers.all))

    async def close(self) -> None:
        """Release this owner's leases, apply every queued write, close the connections."""
        if self._held:
            self._held.clear()
            await self.workers.all[0].call(lambda db: db.execute("DELETE FROM leases WHERE token = ?", (self.owner.token,)))
        await self.workers.stop()


def _statement(sql: str, args: tuple[Any, ...]) -> Callable[[Db], Any]:
    return lambda db: db.execute(sql, args)


def _dump(value: Any) -> str:
    return json.dumps(value)


def _row(session_id: str, entry: StoredMessage) -> tuple[Any, ...]:
    if entry.row_id is None:
        raise ValueError("a stored message needs its row_id (the session numbers its entries)")
    return (session_id, entry.row_id, session_id, _dump(entry.message), _dump(entry.meta.to_json()), int(entry.active))


INSERT = (
    "INSERT INTO messages (session_id, seq, pos, message, extra, active) VALUES "
    "(?, ?, (SELECT COALESCE(MAX(pos), 0) + 1 FROM messages WHERE session_id = ?), ?, ?, ?)"
)
TOUCH = "UPDATE sessions SET updated_at = ?, prompted = CASE WHEN ? = 1 THEN 1 ELSE prompted END WHERE id = ?"


def _insert(db: Db, row: tuple[Any, ...]) -> None:
    db.execute(INSERT, row)


def _record(row: Any) -> SessionRecord:
    sid, cwd, title, created, updated, data = row
    return SessionRecord(sid, cwd, title, created, updated, json.loads(data))
