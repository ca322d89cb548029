"""Typed history metadata: every kind round-trips, and rows written before it existed still load and replay."""

from __future__ import annotations

import json
import sqlite3

import pytest

from crow_acp.acp.updates.notices import COMPACTED_MARKER
from crow_acp.acp.updates.shapes import replay_updates
from crow_acp.history import EntryMeta, Handoff, StoredMessage, ToolDisplay
from crow_acp.store import SessionRecord
from crow_acp.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

# The schema crow 0.1.0 created (version 1); the store migrates it when it opens the file.
V1_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, title TEXT, created_at REAL NOT NULL,
    updated_at REAL NOT NULL, data TEXT NOT NULL DEFAULT '{}');
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message TEXT NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}', active INTEGER NOT NULL DEFAULT 1, pos REAL NOT NULL);
"""

# What crow wrote in the messages.extra column before the metadata was typed, one row per kind.
LEGACY_ROWS = [
    ({"role": "system", "content": "You are crow."}, {}),
    ({"role": "user", "content": "SUMMARY"}, {"kind": "compaction", "replaced": 7}),
    ({"role": "assistant", "content": "Understood."}, {"hidden": True}),
    ({"role": "user", "content": "hi"}, {"blocks": [{"type": "text", "text": "hi"}]}),
    ({"role": "user", "content": "<skill_content>"}, {"hidden": True, "skill": "pdf"}),
    (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        {"message_id": "m1", "reasoning": "let me look"},
    ),
    (
        {"role": "tool", "tool_call_id": "c1", "content": "body"},
        {
            "tool": {
                "title": "Read a.py",
                "kind": "read",
                "locations": ["/w/a.py"],
                "status": "completed",
                "name": "read",
                "raw_input": {"path": "a.py"},
                "content": None,
            }
        },
    ),
    (
        {"role": "user", "content": "review this"},
        {"blocks": [{"type": "text", "text": "review this"}], "handoff": {"from": "coder"}},
    ),
    ({"role": "user", "content": "hi"}, {"blocks": [{"type": "text", "text": "hi"}], "copy": True}),
    ({"role": "user", "content": "note"}, {"mine": {"a": 1}, "kind": "plugin-thing"}),
]


async def legacy_entries(tmp_path) -> list[StoredMessage]:
    db = sqlite3.connect(tmp_path / "sessions.db")
    db.executescript(V1_SCHEMA)
    db.execute("INSERT INTO sessions VALUES ('s', '/w', NULL, 0, 0, '{}')")
    for pos, (message, extra) in enumerate(LEGACY_ROWS, 1):
        db.execute(
            "INSERT INTO messages (session_id, message, extra, active, pos) VALUES ('s', ?, ?, 1, ?)",
            (json.dumps(message), json.dumps(extra), pos),
        )
    db.commit()
    db.close()
    store = SqliteStore(tmp_path / "sessions.db")
    try:
        return await store.load("s")
    finally:
        await store.close()


async def test_rows_written_before_typed_metadata_load_as_typed_records(tmp_path):
    metas = [entry.meta for entry in await legacy_entries(tmp_path)]
    assert [m.kind for m in metas] == [
        "message",
        "summary",
        "injected",
        "prompt",
        "injected",
        "message",
        "message",
        "prompt",
        "prompt",
        "message",
    ]
    assert metas[1].replaced == 7 and metas[2].hidden and not metas[2].replayed
    assert metas[3].blocks == [{"type": "text", "text": "hi"}]
    assert metas[4].skill == "pdf"
    assert (metas[5].message_id, metas[5].reasoning) == ("m1", "let me look")
    assert metas[6].tool == ToolDisplay("read", "Read a.py", "read", "completed", ["/w/a.py"], {"path": "a.py"}, None)
    assert metas[7].handoff == Handoff("coder")
    assert metas[8].copy and not metas[8].replayed
    assert metas[9].other == {"mine": {"a": 1}, "kind": "plugin-thing"}, "a plugin's keys are kept as written"


async def test_legacy_rows_are_written_back_exactly_as_they_were(tmp_path):
    """An old row that is loaded and saved again keeps its JSON: older crow versions can still read it."""
    for entry, (_, extra) in zip(await legacy_entries(tmp_path), LEGACY_ROWS, strict=True):
        assert entry.meta.to_json() == extra


async def test_every_kind_round_trips_through_the_store(tmp_path):
    store = SqliteStore(tmp_path / "sessions.db")
    store.create(SessionRecord("s", "/w", None, 0.0, 0.0, {}))
    metas = [
        EntryMeta(),
        EntryMeta("prompt", blocks=[]),
        EntryMeta("prompt", blocks=[{"type": "image", "data": "AAAA", "mimeType": "image/png"}], handoff=Handoff(None)),
        EntryMeta("injected", skill="s", other={"why": "reminder"}),
        EntryMeta("summary", replaced=3),
        EntryMeta("ack"),
        EntryMeta(message_id="m", reasoning="r"),
        EntryMeta(
            tool=ToolDisplay(
                "t", "T", "execute", "failed", ["/a"], {"_raw": "{"}, [{"type": "terminal", "terminalId": "x"}]
            )
        ),
        EntryMeta("prompt", blocks=[], copy=True),
    ]
    for row, meta in enumerate(metas, 1):
        store.append("s", StoredMessage({"role": "user", "content": "x"}, meta, row_id=row))
    assert [entry.meta for entry in await store.load("s")] == metas
    await store.close()


def test_malformed_metadata_loads_without_an_error():
    """A hand-edited or foreign row must not make a session unloadable."""
    for junk in [
        None,
        [],
        "text",
        3,
        {"tool": "x", "blocks": "y", "handoff": 1, "replaced": "2", "reasoning": 5},
        {"tool": {"kind": "nonsense", "status": 9, "locations": "a", "content": {"x": 1}}},
    ]:
        meta = EntryMeta.from_json(junk)
        assert isinstance(meta, EntryMeta)
        json.dumps(meta.to_json())
    tool = EntryMeta.from_json({"tool": {"kind": "nonsense", "status": 9}}).tool
    assert tool is not None and (tool.kind, tool.status, tool.name) == ("other", "completed", "tool")


async def test_legacy_rows_replay_as_they_did(tmp_path):
    entries = await legacy_entries(tmp_path)
    updates = list(replay_updates(entries))
    kinds = [(u.session_update, getattr(u, "title", None)) for u in updates]
    assert kinds == [
        ("tool_call", COMPACTED_MARKER),
        ("user_message_chunk", None),
        ("agent_thought_chunk", None),
        ("tool_call", "Read a.py"),
        ("user_message_chunk", None),
        ("user_message_chunk", None),
    ], "hidden entries and copies are not shown; the summary is a marker"
    tool = updates[3]
    assert (tool.kind, tool.status, tool.raw_input) == ("read", "completed", {"path": "a.py"})
    assert [loc.path for loc in tool.locations] == ["/w/a.py"]
