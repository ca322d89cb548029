"""PostgreSQL: sessions in the database a team already runs and backs up.

psycopg 3's synchronous connections, each on a store worker thread (see crow_acp/store/__init__.py):
the event loop only awaits futures, so a slow or distant server never blocks it. Sessions spread
over a few connections; one session's writes always use the same one, so they stay in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

from .protocol import Owner, StoreError
from .schema import CREATE, VERSION, newer_than_known, statements, steps_from
from .sql import SqlStore, storable
from .worker import Workers

CONNECTIONS = 4
MIGRATION_LOCK = 0x63726F77  # "crow": servers starting together migrate one at a time
STALL_FLOOR = 5.0


class PostgresDb:
    lock_rows = " FOR UPDATE"
    dml_in_cte = True
    # A write to a session with no lease row cannot lock a row that a concurrent acquire is inserting:
    # both take this per-session lock, so one waits for the other's commit.
    lock_session = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"

    def __init__(self, url: str, stall_limit: float = 30.0) -> None:
        import psycopg

        self.url = url
        self.stall_limit = stall_limit
        self.errors = (psycopg.OperationalError, psycopg.InterfaceError)
        self.conn = self._connect()
        with self.conn.transaction():
            migrate(self)

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            # As SQLite's WAL with synchronous=NORMAL: a commit does not wait for the server's disk flush,
            # so a killed crow loses nothing it wrote; only a crash of the database server itself may
            # lose its last fraction of a second (wal_writer_delay). A message costs no fsync.
            conn.execute("SET synchronous_commit = off")
            # A crow that stalls inside a write transaction (SIGSTOP, asleep, partitioned) holds its lease
            # row's lock, and a takeover would wait for it forever: the server ends such a transaction
            # once it has stalled as long as a lease lasts (5 s at least: a busy process's thread may pause
            # between two statements). Its write is rolled back; the fence refuses the rest.
            conn.execute(f"SET idle_in_transaction_session_timeout = {int(max(self.stall_limit, STALL_FLOOR) * 1000)}")
            return conn
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to the session database: {exc}") from exc

    def execute(self, sql: str, args: Iterable[Any] = ()) -> Any:
        if self.conn.broken or self.conn.closed:  # the server restarted: reconnect before the next statement
            self.conn = self._connect()
        return self.conn.execute(sql.replace("?", "%s"), storable(args))

    def transaction(self) -> AbstractContextManager[Any]:
        if self.conn.broken or self.conn.closed:
            self.conn = self._connect()
        return self.conn.transaction()

    def now(self) -> float:
        return float(self.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])

    def close(self) -> None:
        self.conn.close()


def migrate(db: PostgresDb) -> None:
    db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
    db.execute(CREATE[0])
    version = db.execute("SELECT MAX(version) FROM crow_schema").fetchone()[0] or 0
    if version > VERSION:
        raise StoreError(newer_than_known(version))
    if version == VERSION:
        return
    for statement in statements("postgres", steps_from(version)):
        db.execute(statement)
    db.execute("DELETE FROM crow_schema")
    db.execute("INSERT INTO crow_schema (version) VALUES (?)", (VERSION,))


class PostgresStore(SqlStore):
    """`PostgresStore("postgresql://user@host/db")`."""

    def __init__(
        self, url: str, *, owner: Owner | None = None, lease_ttl: float = 30.0, connections: int = CONNECTIONS
    ) -> None:
        self.url = url
        workers: Workers[Any] = Workers(
            lambda: PostgresDb(url, lease_ttl), PostgresDb.close, connections, "crow-postgres"
        )
        super().__init__(workers, owner=owner, lease_ttl=lease_ttl)
