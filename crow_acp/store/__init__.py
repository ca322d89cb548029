"""The session store: one small typed interface (protocol.py), SQLite and PostgreSQL behind it.

Why writes are synchronous, and run on a thread
-----------------------------------------------
A session's history is written from many places that are synchronous today and must stay so: the
loop records a reply, compaction swaps the history, and users' callbacks call
`SessionAccess.add_message` / `set_context` without awaiting. Making the store async would make all
of those async, and users' code with them. But a network database must never block the event loop.

So a store write is a non-blocking submission: the caller updates memory, the store queues the write
and returns. Each store has worker threads (worker.py), each with its own connection and a FIFO
queue; a session's writes always go to the same worker, so they apply in the order they were made.
The session numbers its own entries (`row_id`), so an append needs no round trip for its id.
Reads, lease changes and `flush()` are coroutines that await the worker's future.

The guarantees of the embedded store hold on both backends:
- every message is written as soon as it exists: queued at once, committed within one round trip;
- compaction archives and appends in one transaction (`compact`), so a kill leaves old or new;
- a turn's answer goes to the editor only after `flush()`: what the editor was told is durable.

One writer per session: `acquire` takes a lease (owner = host, pid, pid start time, token); the
owner renews it; a lease whose owner is visibly gone (same host, process not running) frees at once,
and one held from another machine frees when it expires. Every write is fenced by the lease: it
applies only while the lease row still holds this store's token, checked in the write's own
transaction, so an owner that stalled past its lease and was taken over writes nothing (leasing.py).

May import: crow_acp.history, errors, util and config, and psycopg (lazily, for PostgreSQL).

Also in this room:

    lookup.py    Reads for the `crow` command: sessions by id prefix, and the store's state (schema version, leases)
    owners.py    Whose a session is: the owner recorded with it, the users it is shared with, and what a caller may see
    postgres.py  PostgreSQL: sessions in the database a team already runs and backs up
    read_only.py A store as a session shared read-only sees it: every read the store's, every write kept from it
    schema.py    The store's schema, versioned, and the steps that migrate an older database forward in place
    sql.py       The store over SQL: one implementation for SQLite and PostgreSQL, which differ only in their `Db`
    sqlite.py    SQLite: the embedded default, one file under $CROW_HOME
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .protocol import (
    LOCAL_USER,
    Access,
    Caller,
    Grant,
    LeaseLost,
    Owner,
    SessionBusy,
    SessionRecord,
    SessionStore,
    StoredMessage,
    StoreError,
)

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "LOCAL_USER",
    "Access",
    "Caller",
    "Grant",
    "LeaseLost",
    "Owner",
    "SessionBusy",
    "SessionRecord",
    "SessionStore",
    "StoreError",
    "StoredMessage",
    "open_store",
    "store_url",
]


def store_url(config: Config) -> str | None:
    """The database URL: CROW_DATABASE_URL over [store] url; None means SQLite under $CROW_HOME."""
    return os.environ.get("CROW_DATABASE_URL") or config.store.url


def open_store(config: Config, **options: Any) -> SessionStore:
    """The store the config names. Opening never blocks: connection errors surface at first use."""
    url = store_url(config)
    options.setdefault("lease_ttl", config.store.lease_ttl)
    if url is None:
        from .sqlite import SqliteStore

        return SqliteStore(config.db_path, **options)
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url, **options)
    raise StoreError(f"unsupported session database URL {url.split('://')[0]!r}://…: use postgresql://…")
