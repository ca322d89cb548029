"""A version-2 database (before owners), of each kind, migrates in place: its sessions become the local
user `default`'s, nothing else of them changes, and shares work on them at once."""

from __future__ import annotations

import sqlite3
import time

import pytest

from crow_acp.history import StoredMessage
from crow_acp.store import SessionRecord
from crow_acp.store.postgres import PostgresStore
from crow_acp.store.protocol import Caller
from crow_acp.store.schema import VERSION
from crow_acp.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

# What crow wrote at schema version 2, frozen here: the test must not follow the current schema.
V2 = [
    "CREATE TABLE crow_schema (version INTEGER NOT NULL)",
    "CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, title TEXT, created_at {real} NOT NULL,"
    " updated_at {real} NOT NULL, data TEXT NOT NULL DEFAULT '{{}}', prompted INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE messages (ord {serial}, session_id TEXT NOT NULL, seq {int} NOT NULL, pos {real} NOT NULL,"
    " message TEXT NOT NULL, extra TEXT NOT NULL DEFAULT '{{}}', active INTEGER NOT NULL DEFAULT 1,"
    " UNIQUE (session_id, seq))",
    "CREATE INDEX messages_by_session ON messages (session_id, pos)",
    "CREATE TABLE leases (session_id TEXT PRIMARY KEY, token TEXT NOT NULL, host TEXT NOT NULL,"
    " pid {int} NOT NULL, started TEXT NOT NULL, expires_at {real} NOT NULL)",
    "INSERT INTO crow_schema (version) VALUES (2)",
    "INSERT INTO sessions VALUES ('old1', '/w', 'First', 1.0, 2.0, '{{\"agent\": \"crow\"}}', 1)",
    "INSERT INTO sessions VALUES ('old2', '/w', 'Second', 1.0, 3.0, '{{}}', 1)",
    "INSERT INTO messages (session_id, seq, pos, message)"
    ' VALUES (\'old1\', 1, 1, \'{{"role": "user", "content": "hi"}}\')',
]
TYPES = {
    "sqlite": {"serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "int": "INTEGER"},
    "postgres": {"serial": "BIGSERIAL PRIMARY KEY", "real": "DOUBLE PRECISION", "int": "BIGINT"},
}


async def check_migrated(store) -> None:
    local, alice = Caller(), Caller("alice")
    assert [r.id for r in await store.list_sessions()] == ["old2", "old1"]
    assert [r.owner for r in await store.list_sessions()] == ["default", "default"]
    assert [r.id for r in await store.list_sessions(visible_to=local)] == ["old2", "old1"], (
        "nothing changes for default"
    )
    assert await store.list_sessions(visible_to=alice) == [] and await store.find_prefix("old", visible_to=alice) == []
    assert (await store.access("old1", local)).access == "full"
    assert await store.access("old1", alice) is None and await store.access("nope", alice) is None
    assert [e.message["content"] for e in await store.load("old1")] == ["hi"], "the history is kept"
    await store.share("old1", "alice", "read")
    assert [r.id for r in await store.list_sessions(visible_to=alice)] == ["old1"]
    assert (await store.access("old1", alice)).access == "read"
    assert await store.shares("old1") == {"alice": "read"}
    now = time.time()
    store.create(SessionRecord("new1", "/w", None, now, now, {}, owner="alice"))
    store.append("new1", StoredMessage({"role": "user", "content": "mine"}, row_id=1))
    await store.flush()
    assert [r.id for r in await store.list_sessions(visible_to=alice)] == ["new1", "old1"]
    assert [r.id for r in await store.list_sessions(visible_to=local)] == ["old2", "old1"]
    assert len(await store.list_sessions(visible_to=Caller("root", admin=True))) == 3, "an admin sees all"


async def test_a_version_2_sqlite_file_migrates_in_place(tmp_path):
    path = tmp_path / "home" / "sessions.db"
    path.parent.mkdir(mode=0o700)
    db = sqlite3.connect(path)
    for statement in V2:
        db.execute(statement.format(**TYPES["sqlite"]))
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        await check_migrated(store)
    finally:
        await store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM crow_schema").fetchall() == [(VERSION,)]
    await SqliteStore(path).close()  # opening it again changes nothing
    assert db.execute("SELECT COUNT(*) FROM sessions").fetchone() == (3,)


async def test_a_version_2_postgres_database_migrates_in_place(postgres):
    import psycopg

    url = postgres.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in V2:
            conn.execute(statement.format(**TYPES["postgres"]))
    store = PostgresStore(url)
    try:
        await check_migrated(store)
    finally:
        await store.close()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM crow_schema").fetchall() == [(VERSION,)]
    again = PostgresStore(url)
    try:
        assert len(await again.list_sessions()) == 3
    finally:
        await again.close()
