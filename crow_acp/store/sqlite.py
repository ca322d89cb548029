"""SQLite: the embedded default, one file under $CROW_HOME.

WAL mode with synchronous=NORMAL survives a killed process (SIGKILL) without an fsync per message.
Several crow processes may share the file (two editor windows): writers wait for each other
(busy_timeout) on the store's own thread, never on the event loop.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config.private import private_dir, private_file, tighten_existing
from .protocol import Owner, StoreError
from .schema import VERSION, newer_than_known, statements, steps_from
from .sql import SqlStore, storable
from .worker import Workers

BUSY_MS = 30_000


class SqliteDb:
    lock_rows = ""  # BEGIN IMMEDIATE already holds the write lock for the whole transaction
    dml_in_cte = False
    lock_session = ""  # BEGIN IMMEDIATE: one writer at a time, lease changes included

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_MS / 1000)
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")

    def execute(self, sql: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, storable(args))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside lands together or not at all (a kill mid-compaction loses nothing)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:  # not a catch: whatever ends the transaction (a cancel too) rolls it back, re-raised
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def now(self) -> float:
        return time.time()

    def close(self) -> None:
        self.conn.close()


def open_db(path: Path) -> SqliteDb:
    """The store at `path`, its user's alone: $CROW_HOME 0700, the file 0600 before SQLite opens it (its
    -wal and -shm take the database's mode), and ones an older crow left open to others tightened."""
    private_dir(path.parent)
    private_file(path)
    for suffix in ("-wal", "-shm"):
        tighten_existing(path.with_name(path.name + suffix))
    db = SqliteDb(path)
    _wal(db)
    db.execute("PRAGMA synchronous=NORMAL")
    with db.transaction():  # two processes opening a new file at once: the second waits, then sees the current version
        migrate(db)
    return db


def _wal(db: SqliteDb) -> None:
    """Switch to WAL. The switch takes an exclusive lock without waiting on busy_timeout, so a second
    process opening a brand-new file at the same moment gets "database is locked": retry it."""
    deadline = time.monotonic() + BUSY_MS / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def migrate(db: SqliteDb) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "crow_schema" in tables:
        version = db.execute("SELECT MAX(version) FROM crow_schema").fetchone()[0] or 0
    else:
        version = 1 if "sessions" in tables else 0
    if version > VERSION:
        raise StoreError(newer_than_known(version))
    if version == VERSION:
        return
    for statement in statements("sqlite", steps_from(version)):
        db.execute(statement)
    db.execute("DELETE FROM crow_schema")
    db.execute("INSERT INTO crow_schema (version) VALUES (?)", (VERSION,))


class SqliteStore(SqlStore):
    """The default store: `SqliteStore(config.db_path)`."""

    def __init__(self, path: Path, *, owner: Owner | None = None, lease_ttl: float = 30.0) -> None:
        self.path = Path(path)
        # One worker: SQLite takes one writer at a time anyway, and one queue keeps every write in order.
        workers: Workers[Any] = Workers(lambda: open_db(self.path), SqliteDb.close, 1, "crow-sqlite")
        super().__init__(workers, owner=owner, lease_ttl=lease_ttl)
