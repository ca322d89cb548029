"""The store's schema, versioned, and the steps that migrate an older database forward in place.

Version 1 is what crow 0.1.0 wrote (no version table): messages numbered by one global id.
Version 2 numbers each session's messages itself (so a write needs no round trip for its id), keeps a
store-wide `ord` for the order across sessions, marks sessions that got a prompt, and adds leases.
Version 3 records each session's owner (a `crow serve --users` user; sessions from before belong to
`default`, the single local user) and the users it is shared with (`shares`, read or full access).
The same SQL serves SQLite and PostgreSQL; `{serial}`, `{real}` and `{bool}` name the types that differ.
"""

from __future__ import annotations

VERSION = 3

TYPES = {
    "sqlite": {"serial": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL", "bool": "INTEGER", "int": "INTEGER"},
    "postgres": {"serial": "BIGSERIAL PRIMARY KEY", "real": "DOUBLE PRECISION", "bool": "INTEGER", "int": "BIGINT"},
}

SHARES = """CREATE TABLE IF NOT EXISTS shares (
        session_id TEXT NOT NULL,
        user_name TEXT NOT NULL,
        access TEXT NOT NULL,
        PRIMARY KEY (session_id, user_name)
    )"""

CREATE = [
    """CREATE TABLE IF NOT EXISTS crow_schema (version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT,
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL,
        data TEXT NOT NULL DEFAULT '{{}}',
        prompted {bool} NOT NULL DEFAULT 0,
        owner TEXT NOT NULL DEFAULT 'default'
    )""",
    """CREATE TABLE IF NOT EXISTS messages (
        ord {serial},
        session_id TEXT NOT NULL,
        seq {int} NOT NULL,
        pos {real} NOT NULL,
        message TEXT NOT NULL,
        extra TEXT NOT NULL DEFAULT '{{}}',
        active {bool} NOT NULL DEFAULT 1,
        UNIQUE (session_id, seq)
    )""",
    """CREATE INDEX IF NOT EXISTS messages_by_session ON messages (session_id, pos)""",
    """CREATE TABLE IF NOT EXISTS leases (
        session_id TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        host TEXT NOT NULL,
        pid {int} NOT NULL,
        started TEXT NOT NULL,
        expires_at {real} NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner, updated_at)""",
    SHARES,
]

# Version 1 → 2 (SQLite only: PostgreSQL support starts at version 2). One transaction.
V1_TO_V2 = [
    "ALTER TABLE messages RENAME TO messages_v1",
    "DROP INDEX IF EXISTS messages_by_session",
    *CREATE[2:5],  # messages, their index, leases
    "INSERT INTO messages (ord, session_id, seq, pos, message, extra, active) "
    "SELECT id, session_id, id, pos, message, extra, active FROM messages_v1 ORDER BY id",
    "DROP TABLE messages_v1",
    "ALTER TABLE sessions ADD COLUMN prompted INTEGER NOT NULL DEFAULT 0",
    "UPDATE sessions SET prompted = 1 WHERE EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id "
    "AND json_extract(m.message, '$.role') = 'user')",
    CREATE[0],
]

# Version 2 → 3, both backends: every session so far is the single local user's.
V2_TO_V3 = [
    "ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'default'",
    "CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner, updated_at)",
    SHARES,
]


def steps_from(version: int) -> list[str]:
    """The statements that bring a database of schema `version` (0: empty) to VERSION."""
    if version == 0:
        return CREATE
    return (V1_TO_V2 if version == 1 else []) + V2_TO_V3


def statements(dialect: str, sql: list[str]) -> list[str]:
    return [statement.format(**TYPES[dialect]) for statement in sql]


def newer_than_known(version: int) -> str:
    return (
        f"the session database has schema version {version}, newer than this crow knows ({VERSION}): "
        "upgrade crow, or point it at another database"
    )
