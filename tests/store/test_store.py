"""The session store's behaviour, once per backend: SQLite and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from crow_acp.history import EntryMeta, StoredMessage
from crow_acp.store import Owner, SessionBusy, SessionRecord
from crow_acp.store.postgres import PostgresStore
from crow_acp.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

OTHER_HOST = Owner("another-machine", 1, "1", "")


@pytest.fixture(params=["sqlite", "postgres"])
async def stores(request, tmp_path) -> Any:
    """A factory of stores on one database (as separate processes would open it); all closed after."""
    if request.param == "sqlite":
        open_one: Callable[..., Any] = lambda **kw: SqliteStore(tmp_path / "sessions.db", **kw)  # noqa: E731
    else:
        url = request.getfixturevalue("postgres").new_database()
        open_one = lambda **kw: PostgresStore(url, **kw)  # noqa: E731
    opened: list[Any] = []

    def make(host: str | None = None, **options: Any) -> Any:
        if host:
            options["owner"] = Owner(host, 1, "1", f"token-{host}-{len(opened)}")
        opened.append(open_one(**options))
        return opened[-1]

    yield make
    for store in opened:
        try:
            await store.close()
        except RuntimeError:
            pass  # closed by the test itself


def session(sid: str, cwd: str = "/work") -> SessionRecord:
    return SessionRecord(sid, cwd, None, time.time(), time.time(), {"agent": "crow"})


def entry(row: int, role: str, content: str, **meta: Any) -> StoredMessage:
    return StoredMessage({"role": role, "content": content}, EntryMeta(**meta), row_id=row)


async def test_append_load_update_and_order(stores):
    store = stores()
    store.create(session("s1"))
    store.append(
        "s1",
        entry(
            1, "user", "hello \ud800 surrogate and \x00 nul", kind="prompt", blocks=[{"type": "text", "text": "hello"}]
        ),
    )
    store.append("s1", entry(2, "assistant", "hi", reasoning="thinking"))
    store.append("s1", entry(3, "system", "the prompt"))
    store.move_first("s1", 3)
    store.update_message("s1", 2, extra=EntryMeta(reasoning="changed", other={"plugin": 1}).to_json())
    store.update_message("s1", 3, message={"role": "system", "content": "new prompt"})
    loaded = await store.load("s1")  # reads wait for the writes queued before them
    assert [(e.row_id, e.message["role"]) for e in loaded] == [(3, "system"), (1, "user"), (2, "assistant")]
    assert loaded[0].message["content"] == "new prompt"
    assert loaded[1].message["content"] == "hello \ud800 surrogate and \x00 nul"
    assert loaded[1].meta == EntryMeta("prompt", blocks=[{"type": "text", "text": "hello"}])
    assert loaded[2].meta == EntryMeta(reasoning="changed", other={"plugin": 1})
    assert loaded[1].order < loaded[2].order < loaded[0].order, "the store-wide order is the order of appends"
    assert all(e.active for e in loaded)
    assert await store.get("nope") is None and await store.load("nope") == []


async def test_compaction_archives_and_appends_in_one_transaction(stores):
    store = stores()
    store.create(session("s1"))
    for row in range(1, 5):
        store.append("s1", entry(row, "user" if row % 2 else "assistant", f"m{row}"))
    # A duplicate row id makes the transaction fail halfway: nothing of it may land.
    store.compact("s1", [1, 2], [entry(5, "user", "summary"), entry(3, "user", "duplicate")])
    with pytest.raises((sqlite3.IntegrityError, psycopg.IntegrityError)):
        await store.flush()
    assert [(e.row_id, e.active) for e in await store.load("s1")] == [(1, True), (2, True), (3, True), (4, True)]
    store.compact(
        "s1", [1, 2, 3, 4], [entry(5, "user", "summary"), entry(6, "assistant", "ok"), entry(7, "user", "m3")]
    )
    await store.flush()
    loaded = await store.load("s1")
    assert [(e.row_id, e.active) for e in loaded] == [
        (1, False),
        (2, False),
        (3, False),
        (4, False),
        (5, True),
        (6, True),
        (7, True),
    ]


async def test_list_shows_prompted_sessions_newest_first(stores):
    store = stores()
    for sid, cwd in (("a", "/one"), ("b", "/one"), ("c", "/two"), ("never", "/one")):
        store.create(session(sid, cwd))
    store.append("never", entry(1, "system", "a system prompt is not a prompt"))
    for sid in ("a", "c", "b"):
        store.append(sid, entry(1, "user", f"prompt {sid}"))
        await store.flush()
        await asyncio.sleep(0.01)  # updated_at must differ between them
    store.update("a", title="Title A", data={"agent": "crow", "context": {"k": [1, 2]}})
    listed = await store.list_sessions()
    assert [r.id for r in listed] == ["a", "b", "c"]
    assert listed[0].title == "Title A" and listed[0].data["context"] == {"k": [1, 2]}
    assert [r.id for r in await store.list_sessions("/one")] == ["a", "b"]
    assert (await store.get("never")).cwd == "/one", "unlisted, but still stored"


async def test_a_live_owner_elsewhere_holds_the_lease_until_it_expires(stores):
    first, second = stores(host="machine-a", lease_ttl=0.5), stores(host="machine-b", lease_ttl=0.5)
    first.create(session("s1"))
    await first.acquire("s1")
    await first.acquire("s1")  # taking it again is fine for its owner
    with pytest.raises(SessionBusy) as busy:
        await second.acquire("s1")
    assert busy.value.host == "machine-a" and "machine-a" in str(busy.value)
    await asyncio.sleep(1.0)  # machine-a stopped renewing: its lease runs out
    await second.acquire("s1")
    assert await first.renew() == ["s1"], "the old owner learns it lost the session"
    with pytest.raises(SessionBusy):
        await first.acquire("s1")
    assert await second.renew() == []


async def test_renewal_keeps_the_lease(stores):
    first, second = stores(host="machine-a", lease_ttl=1.0), stores(host="machine-b", lease_ttl=1.0)
    await first.acquire("s1")
    for _ in range(4):
        await asyncio.sleep(0.3)
        assert await first.renew() == []
        with pytest.raises(SessionBusy):
            await second.acquire("s1")
    await first.release("s1")
    await second.acquire("s1")  # released: free at once


async def test_a_visibly_dead_owner_on_this_host_frees_at_once(stores):
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(30)")
    from crow_acp.store.protocol import process_started

    started = process_started(child.pid)
    dead = Owner(Owner.this_process().host, child.pid, started or "", "dead-owner")
    first = stores(owner=dead, lease_ttl=3600)
    await first.acquire("s1")
    second = stores(lease_ttl=3600)
    with pytest.raises(SessionBusy):
        await second.acquire("s1")  # alive: busy
    child.kill()
    await child.wait()
    await second.acquire("s1")  # gone: no need to wait an hour


async def test_a_reused_pid_is_not_the_owner(stores):
    me = Owner.this_process()
    impostor = Owner(me.host, me.pid, "12345", "old-owner")  # our pid, another start time: a dead owner
    await stores(owner=impostor, lease_ttl=3600).acquire("s1")
    await stores(lease_ttl=3600).acquire("s1")


async def test_two_writers_racing_for_sessions(stores):
    first, second = stores(host="machine-a"), stores(host="machine-b")

    async def take(store: Any, sid: str) -> str | None:
        try:
            await store.acquire(sid)
            return store.owner.host
        except SessionBusy:
            return None

    for index in range(20):
        sid = f"race-{index}"
        winners = [w for w in await asyncio.gather(take(first, sid), take(second, sid)) if w]
        assert len(winners) == 1, f"{sid}: {winners}"


async def test_closing_releases_leases_and_refuses_more_work(stores):
    first, second = stores(host="machine-a"), stores(host="machine-b")
    first.create(session("s1"))
    first.append("s1", entry(1, "user", "queued right before close"))
    await first.acquire("s1")
    await first.close()
    await second.acquire("s1")
    assert [e.message["content"] for e in await second.load("s1")] == ["queued right before close"]
    with pytest.raises(RuntimeError):
        first.append("s1", entry(2, "user", "too late"))


async def test_delete_removes_everything_but_never_under_a_live_writer(stores):
    first, second = stores(host="machine-a"), stores(host="machine-b")
    first.create(session("s1"))
    first.append("s1", entry(1, "user", "hello"))
    await first.acquire("s1")
    with pytest.raises(SessionBusy):
        await second.delete("s1")
    assert len(await second.load("s1")) == 1
    await first.release("s1")
    await second.delete("s1")
    assert await first.get("s1") is None and await first.load("s1") == []
    await first.acquire("s1")  # no lease row left behind


async def test_delete_unlinks_its_forks_and_an_unknown_session_is_no_error(stores):
    store = stores()
    store.create(session("s1"))
    store.append("s1", entry(1, "user", "hello"))
    fork = SessionRecord("f1", "/work", None, time.time(), time.time(), {"agent": "crow", "forked_from": "s1"})
    store.create(fork, [entry(1, "user", "hello")])
    other = SessionRecord("f2", "/work", None, time.time(), time.time(), {"agent": "crow", "forked_from": "s9"})
    store.create(other)
    await store.delete("s1")
    assert await store.get("s1") is None and await store.load("s1") == []
    forked = await store.get("f1")
    assert forked is not None and forked.data == {"agent": "crow"}, "the fork stays, without its link"
    assert [e.message["content"] for e in await store.load("f1")] == ["hello"]
    unrelated = await store.get("f2")
    assert unrelated is not None and unrelated.data["forked_from"] == "s9"
    await store.delete("never-existed")  # as session/delete wants: silently nothing
    await store.acquire("never-existed")  # and no lease row is left behind


async def test_delete_rows_removes_a_rewound_tail_and_keeps_the_rest(stores):
    store = stores()
    store.create(session("s1"))
    for row in range(1, 6):
        store.append("s1", entry(row, "user" if row % 2 else "assistant", f"m{row}"))
    store.append("s1", entry(6, "system", "the prompt"))
    store.move_first("s1", 6)  # a system prompt added later, first in order: not part of the tail
    store.delete_rows("s1", [3, 4, 5])
    await store.flush()
    assert [e.row_id for e in await store.load("s1")] == [6, 1, 2]
    other = stores()
    assert [e.row_id for e in await other.load("s1")] == [6, 1, 2]  # durable, seen by another process
