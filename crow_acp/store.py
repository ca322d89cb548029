"""The session store: SQLite under $CROW_HOME, written as soon as anything exists.

WAL mode with synchronous=NORMAL survives a killed process (SIGKILL) without an fsync per message.
The SessionStore protocol is small so that a server database can replace SQLite later.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

from .history import EntryMeta, StoredMessage  # StoredMessage is re-exported: stores hold it

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    title TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    data TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    message TEXT NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}',
    active INTEGER NOT NULL DEFAULT 1,
    pos REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages (session_id, pos);
"""


@dataclass
class SessionRecord:
    id: str
    cwd: str
    title: str | None
    created_at: float
    updated_at: float
    data: dict[str, Any]
    """additional_directories, mcp_servers, context, allowed_tools, agent name."""


class SessionStore(Protocol):
    def create(self, record: SessionRecord) -> None: ...
    def get(self, session_id: str) -> SessionRecord | None: ...
    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None: ...
    def list(self, cwd: str | None = None) -> list[SessionRecord]: ...
    def append(self, session_id: str, entry: StoredMessage) -> int: ...
    def messages(self, session_id: str) -> list[StoredMessage]: ...
    def update_extra(self, row_id: int, extra: dict[str, Any]) -> None: ...  # extra: an EntryMeta.to_json()
    def replace(self, row_id: int, message: dict[str, Any]) -> None: ...
    def move_first(self, session_id: str, row_id: int) -> None: ...
    def archive(self, row_ids: list[int]) -> None: ...
    def atomic(self) -> AbstractContextManager[None]: ...
    def delete(self, session_id: str) -> None: ...  # the session and its whole history, at once


class SqliteStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def create(self, record: SessionRecord) -> None:
        self.db.execute(
            "INSERT INTO sessions (id, cwd, title, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?)",
            (record.id, record.cwd, record.title, record.created_at, record.updated_at, json.dumps(record.data)),
        )

    def get(self, session_id: str) -> SessionRecord | None:
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _record(row) if row else None

    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None:
        sets, args = ["updated_at = ?"], [time.time()]
        if title is not None:
            sets.append("title = ?")
            args.append(title)
        if data is not None:
            sets.append("data = ?")
            args.append(json.dumps(data))
        self.db.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*args, session_id))

    def list(self, cwd: str | None = None) -> list[SessionRecord]:
        query, args = "SELECT * FROM sessions", ()
        if cwd:
            query, args = query + " WHERE cwd = ?", (cwd,)
        return [_record(row) for row in self.db.execute(query + " ORDER BY updated_at DESC", args)]

    def append(self, session_id: str, entry: StoredMessage) -> int:
        cursor = self.db.execute(
            "INSERT INTO messages (session_id, message, extra, active, pos) VALUES (?, ?, ?, ?, "
            "(SELECT COALESCE(MAX(pos), 0) + 1 FROM messages WHERE session_id = ?))",
            (session_id, json.dumps(entry.message), json.dumps(entry.meta.to_json()), int(entry.active), session_id),
        )
        self.db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))
        return cursor.lastrowid or 0

    def messages(self, session_id: str) -> list[StoredMessage]:
        rows = self.db.execute(
            "SELECT id, message, extra, active FROM messages WHERE session_id = ? ORDER BY pos", (session_id,)
        )
        return [StoredMessage(json.loads(m), EntryMeta.from_json(json.loads(e)), bool(a), row_id=i) for i, m, e, a in rows]

    def update_extra(self, row_id: int, extra: dict[str, Any]) -> None:
        self.db.execute("UPDATE messages SET extra = ? WHERE id = ?", (json.dumps(extra), row_id))

    def replace(self, row_id: int, message: dict[str, Any]) -> None:
        self.db.execute("UPDATE messages SET message = ? WHERE id = ?", (json.dumps(message), row_id))

    def move_first(self, session_id: str, row_id: int) -> None:
        self.db.execute(
            "UPDATE messages SET pos = (SELECT MIN(pos) FROM messages WHERE session_id = ?) - 1 WHERE id = ?",
            (session_id, row_id),
        )

    def archive(self, row_ids: list[int]) -> None:
        self.db.executemany("UPDATE messages SET active = 0 WHERE id = ?", [(i,) for i in row_ids])

    def delete(self, session_id: str) -> None:
        with self.atomic():
            self.db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            self.db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Everything inside lands together or not at all (a kill mid-compaction loses nothing)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


def _record(row: tuple) -> SessionRecord:
    sid, cwd, title, created, updated, data = row
    return SessionRecord(sid, cwd, title, created, updated, json.loads(data))
