"""The store over SQL: one implementation for SQLite and PostgreSQL, which differ only in their `Db`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..history import EntryMeta, StoredMessage
from ..util.secrets import dumps, redact
from ..util.text import clean_text
from .leasing import SqlLeases
from .lookup import SESSION_COLUMNS, SqlLookup, record_of
from .owners import SqlOwners, visible
from .protocol import Caller, Db, Owner, SessionRecord
from .worker import Workers

T = TypeVar("T")


class SqlStore(SqlLeases, SqlLookup, SqlOwners):
    """A SessionStore over a Db; see crow_acp/store/__init__.py for the design, leasing.py for the fence."""

    def __init__(self, workers: Workers[Db], *, owner: Owner | None = None, lease_ttl: float = 30.0) -> None:
        self.workers = workers
        self.owner = owner or Owner.this_process()
        self.lease_ttl = lease_ttl
        self._init_leases()

    # Writes: each one transaction behind the lease fence (SqlLeases._write)
    def create(self, record: SessionRecord, entries: Sequence[StoredMessage] = ()) -> None:
        prompted = int(any(entry.message.get("role") == "user" for entry in entries))
        args = (
            record.id,
            record.cwd,
            record.title and redact(record.title),
            record.created_at,
            record.updated_at,
            _dump(record.data),
            record.owner,
            prompted,
        )
        rows = [_row(record.id, entry) for entry in entries]

        def op(db: Db) -> None:
            db.execute(f"INSERT INTO sessions ({SESSION_COLUMNS}, prompted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", args)
            for row in rows:
                db.execute(INSERT, row)

        self._write(record.id, op)

    def append(self, session_id: str, entry: StoredMessage) -> None:
        row = _row(session_id, entry)
        touch = (time.time(), int(entry.message.get("role") == "user"), session_id)

        def op(db: Db) -> None:
            db.execute(INSERT, row)
            db.execute(TOUCH, touch)

        def fused(db: Db) -> Any:  # one statement, one round trip, atomic on its own
            return db.execute(FENCED_APPEND, (session_id, self.owner.token, *row, *touch)).fetchone()

        self._write(session_id, op, fused)

    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None:
        sets: list[str] = ["updated_at = ?"]
        args: list[Any] = [time.time()]
        if title is not None:
            sets.append("title = ?")
            args.append(redact(title))
        if data is not None:
            sets.append("data = ?")
            args.append(_dump(data))
        sql = f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?"
        self._write(session_id, _statement(sql, (*args, session_id)))

    def update_message(
        self,
        session_id: str,
        row_id: int,
        *,
        message: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        changes = [
            (column, _dump(value)) for column, value in (("message", message), ("extra", extra)) if value is not None
        ]
        if changes:
            sets = ", ".join(f"{column} = ?" for column, _ in changes)
            args = (*(value for _, value in changes), session_id, row_id)
            self._write(session_id, _statement(f"UPDATE messages SET {sets} WHERE session_id = ? AND seq = ?", args))

    def move_first(self, session_id: str, row_id: int) -> None:
        sql = (
            "UPDATE messages SET pos = (SELECT MIN(pos) FROM messages WHERE session_id = ?) - 1"
            " WHERE session_id = ? AND seq = ?"
        )
        self._write(session_id, _statement(sql, (session_id, session_id, row_id)))

    def compact(self, session_id: str, archived: list[int], appended: list[StoredMessage]) -> None:
        rows = [_row(session_id, entry) for entry in appended]
        archive = [(session_id, seq) for seq in archived]

        def op(db: Db) -> None:
            for args in archive:
                db.execute("UPDATE messages SET active = 0 WHERE session_id = ? AND seq = ?", args)
            for row in rows:
                db.execute(INSERT, row)
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))

        self._write(session_id, op)

    def delete_rows(self, session_id: str, row_ids: list[int]) -> None:
        gone = [(session_id, seq) for seq in row_ids]

        def op(db: Db) -> None:
            for args in gone:
                db.execute("DELETE FROM messages WHERE session_id = ? AND seq = ?", args)
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))

        self._write(session_id, op)

    # Reads
    async def flush(self, session_id: str | None = None) -> None:
        await self.workers.flush()
        if session_id is not None and (lost := self.lease_lost(session_id)) is not None:
            raise lost

    async def get(self, session_id: str) -> SessionRecord | None:
        def op(db: Db) -> SessionRecord | None:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return record_of(row) if row else None

        return await self.workers.of(session_id).call(op)

    async def list_sessions(
        self, cwd: str | None = None, limit: int | None = None, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        condition, args = visible(visible_to)
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE prompted = 1{condition}"
        if cwd:
            sql, args = sql + " AND cwd = ?", (*args, cwd)
        sql += " ORDER BY updated_at DESC"
        if limit is not None:
            sql, args = sql + " LIMIT ?", (*args, limit)
        await self._barrier()  # this process's queued writes first, whichever worker holds them
        return await self.workers.all[0].call(lambda db: [record_of(row) for row in db.execute(sql, args).fetchall()])

    async def load(self, session_id: str) -> list[StoredMessage]:
        sql = "SELECT seq, ord, message, extra, active FROM messages WHERE session_id = ? ORDER BY pos, seq"
        rows = await self.workers.of(session_id).call(lambda db: db.execute(sql, (session_id,)).fetchall())
        return [
            StoredMessage(json.loads(m), EntryMeta.from_json(json.loads(e)), bool(a), row_id=s, order=o)
            for s, o, m, e, a in rows
        ]

    async def _barrier(self) -> None:
        await asyncio.gather(*(worker.call(lambda _: None) for worker in self.workers.all))

    async def ping(self) -> None:
        await asyncio.gather(
            *(worker.call(lambda db: db.execute("SELECT 1").fetchone()) for worker in self.workers.all)
        )

    async def close(self) -> None:
        """Release this owner's leases, apply every queued write, close the connections."""
        await self._release_all()
        await self.workers.stop()


def storable(args: Iterable[Any]) -> tuple[Any, ...]:
    """A statement's arguments as both databases take them, the one rule for every column.

    PostgreSQL refuses a NUL in text and neither backend encodes a lone surrogate: both become
    U+FFFD, on SQLite too, so the two stores hold the same text. Messages, displays and session
    data are JSON with ASCII escapes, so a NUL in them never gets here and is kept exactly."""
    return tuple(_storable_text(arg) if isinstance(arg, str) else arg for arg in args)


def _storable_text(text: str) -> str:
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text if text.isascii() else clean_text(text)


def _statement(sql: str, args: tuple[Any, ...]) -> Callable[[Db], Any]:
    return lambda db: db.execute(sql, args)


def _dump(value: Any) -> str:
    return dumps(value)  # no model key reaches the database, whatever a message or its display holds


def _row(session_id: str, entry: StoredMessage) -> tuple[Any, ...]:
    if entry.row_id is None:
        raise ValueError("a stored message needs its row_id (the session numbers its entries)")
    return (session_id, entry.row_id, session_id, _dump(entry.message), _dump(entry.meta.to_json()), int(entry.active))


INSERT = (
    "INSERT INTO messages (session_id, seq, pos, message, extra, active) VALUES "
    "(?, ?, (SELECT COALESCE(MAX(pos), 0) + 1 FROM messages WHERE session_id = ?), ?, ?, ?)"
)
TOUCH = "UPDATE sessions SET updated_at = ?, prompted = CASE WHEN ? = 1 THEN 1 ELSE prompted END WHERE id = ?"


# PostgreSQL: the fence (this store's token in the locked lease row), the insert and the touch in one
# statement. It returns the lease row it read, so the caller tells a refused append from an applied one.
FENCED_APPEND = (
    "WITH lease AS (SELECT token, host, pid FROM leases WHERE session_id = ? FOR UPDATE), "
    "ok AS (SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM lease WHERE token = ?)), "
    "added AS (INSERT INTO messages (session_id, seq, pos, message, extra, active) "
    "SELECT ?, ?, (SELECT COALESCE(MAX(pos), 0) + 1 FROM messages WHERE session_id = ?), ?, ?, ? FROM ok RETURNING 1), "
    "touched AS (" + TOUCH + " AND EXISTS (SELECT 1 FROM ok) RETURNING 1) "
    "SELECT token, host, pid FROM lease"
)
