"""A long session/load through `crow serve` (HTTP and WebSocket) replays exactly what stdio replays, in order,
and all of it before the load response: crow sends the replay in batches there (crow_acp/web/outbound.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, run_crow
from support.serve_support import crow_serve, over_http, over_ws

from crow_acp.history import EntryMeta, StoredMessage, ToolDisplay
from crow_acp.store import SessionRecord
from crow_acp.store.sqlite import SqliteStore
from crow_acp.web.outbound import BATCH_BYTES, batches, encode_update

pytestmark = pytest.mark.anyio

TURNS = 300
"""1,200 messages, about 1,500 updates of varied kinds: several batches."""


async def write_session(home: Path, cwd: str) -> str:
    store = SqliteStore(home / "sessions.db")
    store.create(SessionRecord("long", cwd, "long", time.time(), time.time(), {"agent": "crow"}))
    rows = 0

    def add(message: dict[str, Any], meta: EntryMeta | None = None) -> None:
        nonlocal rows
        rows += 1
        store.append("long", StoredMessage(message, meta or EntryMeta(), row_id=rows))

    for i in range(TURNS):
        add(
            {"role": "user", "content": f"question {i}"},
            EntryMeta("prompt", blocks=[{"type": "text", "text": f"question {i} é☃𝄞"}]),
        )
        add(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": '{"x": 1.5e300}'}}
                ],
            }
        )
        tool = ToolDisplay("lookup", f"Look up {i}", "read", raw_input={"x": 1.5e300, "i": i, "s": "naïve"})
        add({"role": "tool", "tool_call_id": f"c{i}", "content": "result " * (40 + i % 7)}, EntryMeta(tool=tool))
        add(
            {"role": "assistant", "content": f"answer {i} " * 30},
            EntryMeta(reasoning=f"thinking {i}" if i % 2 else None),
        )
    await store.close()
    return "long"


def dumped(updates: list[Any]) -> list[dict[str, Any]]:
    return [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates]


async def load(client: RecordingClient, conn: Any, cwd: str, sid: str) -> list[dict[str, Any]]:
    await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
    return dumped(client.updates)  # what arrived before the response


async def test_a_long_replay_is_the_same_over_stdio_http_and_websocket(crow_home, tmp_path):
    cwd = str(tmp_path)
    sid = await write_session(crow_home, cwd)
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    seen: dict[str, list[dict[str, Any]]] = {}
    with anyio.fail_after(120):
        client = RecordingClient()
        async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
            seen["stdio"] = await load(client, conn, cwd, sid)
        async with crow_serve(env, "--agent", CORE_AGENT) as served:
            for name, transport in (("http", over_http), ("ws", over_ws)):
                client = RecordingClient()
                async with transport(client, served) as conn:
                    seen[name] = await load(client, conn, cwd, sid)
    stdio = seen["stdio"]
    users = [u["content"]["text"] for u in stdio if u["sessionUpdate"] == "user_message_chunk"]
    assert users == [f"question {i} é☃𝄞" for i in range(TURNS)], "every turn, in order, before the response"
    assert stdio[-1] == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": f"answer {TURNS - 1} " * 30},
    }
    assert len(stdio) == TURNS * 4 - TURNS // 2
    assert seen["http"] == stdio
    assert seen["ws"] == stdio


def test_batches_hold_the_sdks_own_notifications_in_order():
    from acp.schema import AgentMessageChunk, TextContentBlock

    updates = [
        AgentMessageChunk(
            session_update="agent_message_chunk", content=TextContentBlock(type="text", text=f"{i} ☃" * 500)
        )
        for i in range(400)
    ]
    cut = list(batches("s1", updates))
    assert len(cut) > 1 and all(sum(map(len, b.frames)) < BATCH_BYTES + 20_000 for b in cut)
    assert [frame for batch in cut for frame in batch.frames] == [encode_update("s1", u) for u in updates]
    first = cut[0].sse().split(b"\n\n")
    assert first[0] == b"data: " + encode_update("s1", updates[0]).encode() and first[-1] == b""
    assert list(batches("s1", [])) == []
