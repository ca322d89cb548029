"""session/delete over ACP: the session, its history and its lease go; a running turn is cancelled
first; a session another crow process has open is refused with that process named. The first hosts crow
in process (support/hosted.py); the others run `crow acp` processes."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, run_crow, text
from support.hosted import hosted_crow

from crow_acp.acp.sessions.leases import SESSION_BUSY
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def delete(conn: Any, session_id: str) -> Any:
    """session/delete: the Python SDK's client (0.12.1) has no method for it, so through its connection."""
    return await conn._conn.send_request("session/delete", {"sessionId": session_id})


async def stored(home: Any, session_id: str) -> tuple[Any, list[Any]]:
    store = SqliteStore(home / "sessions.db")
    try:
        return await store.get(session_id), await store.load(session_id)
    finally:
        await store.close()


async def test_delete_removes_the_session_and_load_then_fails(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="hello back")]) as model:
        async with hosted_crow(RecordingClient(), crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                caps = (await conn.initialize(protocol_version=1)).agent_capabilities.session_capabilities
                assert caps.delete is not None, "advertised as the spec says: sessionCapabilities.delete = {}"
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("hello")])
                fork = (await conn.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])).session_id
                assert [s.session_id for s in (await conn.list_sessions()).sessions] == [fork, sid]
                assert await delete(conn, sid) == {}
                assert [s.session_id for s in (await conn.list_sessions()).sessions] == [fork]
                with pytest.raises(RequestError) as gone:
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                assert gone.value.code == -32002
                assert await delete(conn, sid) == {}, "deleting it again succeeds silently"
                assert await delete(conn, "never-existed") == {}
    record, entries = await stored(crow_home, sid)
    assert record is None and entries == []
    fork_record, fork_entries = await stored(crow_home, fork)
    assert fork_record is not None and "forked_from" not in fork_record.data, "the fork stays, unlinked"
    assert [e.message["content"] for e in fork_entries if e.message["role"] == "user"] == ["hello"]


async def test_delete_while_a_turn_runs_cancels_it_first(crow_home, tmp_path):
    slow = Reply(text="Running the slow one.", tool_calls=[ToolCall("echo__slow", {"seconds": 60}, id="s1")])
    async with ScriptedModel([slow]) as model:
        client = RecordingClient()
        async with run_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                events: list[str] = []

                async def turn() -> None:
                    events.append((await conn.prompt(session_id=sid, prompt=[text("slow please")])).stop_reason)

                async with anyio.create_task_group() as group:
                    group.start_soon(turn)
                    await client.wait_for(lambda c: any(u.status == "in_progress" for u in c.tool_updates("s1")))
                    events.append(f"deleted {await delete(conn, sid)}")
                assert events == ["cancelled", "deleted {}"], "the turn ends cancelled before the delete answers"
                with pytest.raises(RequestError) as gone:
                    await conn.prompt(session_id=sid, prompt=[text("still there?")])
                assert gone.value.code == -32002
    record, entries = await stored(crow_home, sid)
    assert record is None and entries == [], "nothing the cancelled turn recorded outlives the delete"


async def test_delete_of_a_session_open_in_another_process_is_refused_naming_it(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="first answer"), Reply(text="still mine")]) as model:
        env = crow_env(crow_home, model.base_url)
        async with run_crow(RecordingClient(), env) as (a, a_proc), run_crow(RecordingClient(), env) as (b, _):
            with anyio.fail_after(60):
                sid = (await a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await a.prompt(session_id=sid, prompt=[text("hello")])
                with pytest.raises(RequestError) as busy:
                    await delete(b, sid)
                assert busy.value.code == SESSION_BUSY and f"pid {a_proc.pid}" in str(busy.value)
                assert busy.value.data["pid"] == a_proc.pid and busy.value.data["sessionId"] == sid
                reply = await a.prompt(session_id=sid, prompt=[text("again")])
                assert reply.stop_reason == "end_turn", "the owner goes on"
    record, entries = await stored(crow_home, sid)
    assert record is not None and [e.message["content"] for e in entries if e.message["role"] == "user"] == [
        "hello",
        "again",
    ]
