"""A sessions.db written by crow 0.1.0 opens after the upgrade, with its full history; new files open safely."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import anyio
import pytest
from support import spawn
from support.helpers import RecordingClient, assert_strict_pairing, crow_env, text
from support.hosted import hosted_crow

from crow_acp.store.schema import VERSION
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sessions-v1.db"
FIRST, SECOND, NEVER = (
    "cb89e17c898f481da4754bab6d837b10",
    "18d663f9d9e746f4ad8cc2d87bc8085c",
    "2fc7b75ffdd245eab1868cc1dc26eaeb",
)


def old_db(home: Path) -> Path:
    home.mkdir(exist_ok=True)
    shutil.copy(FIXTURE, home / "sessions.db")
    return home / "sessions.db"


async def test_the_store_migrates_a_version_1_file_in_place(tmp_path):
    path = old_db(tmp_path / "home")
    store = SqliteStore(path)
    try:
        listed = await store.list_sessions()
        assert [r.id for r in listed] == [SECOND, FIRST], "both prompted sessions, newest first; never-prompted hidden"
        record = await store.get(FIRST)
        assert record.title == "What do the notes say?"
        assert record.data["additional_directories"] == ["/tmp/crow-fixture/docs"]
        assert record.data["context"]["compactions"] == 1
        entries = await store.load(FIRST)
        assert len(entries) == 17 and [e.row_id for e in entries] == list(range(1, 18))
        assert [e.active for e in entries] == [True] + [False] * 8 + [True] * 8, "the compaction archive is kept"
        assert entries[0].message["role"] == "system", "the system prompt stays first"
        assert entries[2].message["tool_calls"][0]["function"]["name"] == "read_file"
        assert entries[2].meta.reasoning == "I should read it."
        assert entries[3].message == {"role": "tool", "tool_call_id": "r1", "content": "hello from the notes\n"}
        assert entries[9].meta.kind == "summary" and entries[9].meta.replaced == 4
        assert entries[10].meta.hidden and entries[11].meta.copy
        assert_strict_pairing([e.message for e in entries if e.active])
        assert [e.order for e in entries] == sorted(e.order for e in entries)
        assert len(await store.load(NEVER)) == 1
    finally:
        await store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM crow_schema").fetchall() == [(VERSION,)]
    assert db.execute("SELECT DISTINCT owner FROM sessions").fetchall() == [("default",)], (
        "old sessions: the local user's"
    )
    SqliteStore(path)  # opening a migrated file again changes nothing
    assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (21,)


async def test_crow_loads_and_continues_a_session_from_the_old_release(tmp_path):
    home = tmp_path / "home"
    old_db(home)
    await anyio.Path("/tmp/crow-fixture/project").mkdir(parents=True, exist_ok=True)
    async with ScriptedModel([Reply(text="Continuing the old session.")]) as model:
        client = RecordingClient()
        async with hosted_crow(client, crow_env(home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                listed = await conn.list_sessions(cwd="/tmp/crow-fixture/project")
                assert [s.session_id for s in listed.sessions] == [SECOND, FIRST]
                await conn.load_session(cwd="/tmp/crow-fixture/project", session_id=FIRST, mcp_servers=[])
                shown = [u.content.text for u in client.of("user_message_chunk")]
                assert shown == ["What do the notes say?", "Write done to out.txt", "Still there?"]
                assert (
                    "It says hello from the notes." in client.text()
                    and "After the compaction, still here." in client.text()
                )
                assert any(getattr(u, "tool_call_id", None) == "r1" for u in client.updates), "tool calls replay"
                reply = await conn.prompt(session_id=FIRST, prompt=[text("one more")])
                assert reply.stop_reason == "end_turn"
        sent = model.requests[-1]["messages"]
        assert sent[-1] == {"role": "user", "content": "one more"}
        assert any("The user read notes.txt" in str(m.get("content")) for m in sent), (
            "the compacted history reaches the model"
        )
    store = SqliteStore(home / "sessions.db")
    try:
        entries = await store.load(FIRST)
        assert [e.row_id for e in entries][-2:] == [18, 19], "new entries continue the session's numbering"
    finally:
        await store.close()


OPEN_AND_WRITE = """
import asyncio, sys, time
from pathlib import Path
from crow_acp.history import StoredMessage
from crow_acp.store import SessionRecord
from crow_acp.store.schema import VERSION
from crow_acp.store.sqlite import SqliteStore

async def main():
    store = SqliteStore(Path(sys.argv[1]))
    sid = sys.argv[2]
    store.create(SessionRecord(sid, "/", None, time.time(), time.time(), {}))
    store.append(sid, StoredMessage({"role": "user", "content": sid}, row_id=1))
    await store.flush()
    await store.close()

asyncio.run(main())
"""


def test_processes_opening_a_new_file_at_once_do_not_fail(tmp_path):
    for attempt in range(3):
        path = tmp_path / f"new-{attempt}" / "sessions.db"
        procs = [
            subprocess.Popen([spawn.python(), "-c", OPEN_AND_WRITE, str(path), f"s{n}"], stderr=subprocess.PIPE)
            for n in range(6)
        ]
        errors = [proc.communicate(timeout=60)[1].decode() for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 6, errors
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (6,)
