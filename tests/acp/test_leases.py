"""One writer per session: two `crow acp` processes on one $CROW_HOME, and a reload while a turn runs."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, assert_strict_pairing, crow_env, echo_stdio, run_crow, text

from crow_acp.acp.sessions.leases import SESSION_BUSY
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def slow_call(call_id: str) -> Reply:
    return Reply(text="Running the slow one.", tool_calls=[ToolCall("echo__slow", {"seconds": 60}, id=call_id)])


async def test_two_processes_one_writer_and_a_crashed_owner_frees_at_once(crow_home, tmp_path):
    script = [Reply(text="first answer"), Reply(text="b's own session"), Reply(text="b continues a's session")]
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        first, second = RecordingClient(), RecordingClient()
        async with run_crow(first, env, "--agent", CORE_AGENT) as (a, a_proc):
            async with run_crow(second, env, "--agent", CORE_AGENT) as (b, _):
                with anyio.fail_after(60):
                    sid = (await a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await a.prompt(session_id=sid, prompt=[text("hello")])).stop_reason == "end_turn"
                    with pytest.raises(RequestError) as busy:
                        await b.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    assert busy.value.code == SESSION_BUSY and "another crow process" in str(busy.value)
                    with pytest.raises(RequestError) as busy_resume:
                        await b.resume_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    assert busy_resume.value.code == SESSION_BUSY
                    assert not second.of("user_message_chunk"), "a refused load replays nothing"
                    # Different sessions in the two processes work side by side.
                    own = (await b.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await b.prompt(session_id=own, prompt=[text("mine")])).stop_reason == "end_turn"
                    a_proc.kill()  # the owner crashes: same host, its pid is gone, so no waiting for expiry
                    await a_proc.wait()
                    await b.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    assert [u.content.text for u in second.of("user_message_chunk")] == ["hello"]
                    assert (await b.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"


async def test_closing_the_session_frees_it_for_the_other_process(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="one")]) as model:
        env = crow_env(crow_home, model.base_url)
        async with run_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (a, _):
            async with run_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (b, _):
                with anyio.fail_after(60):
                    sid = (await a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    await a.prompt(session_id=sid, prompt=[text("hello")])
                    await a.close_session(session_id=sid)
                    await b.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    with pytest.raises(RequestError) as busy:
                        await a.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    assert busy.value.code == SESSION_BUSY


async def test_reloading_a_session_while_its_turn_runs_cancels_it_and_keeps_what_it_did(crow_home, tmp_path):
    script = [slow_call("s1"), Reply(text="after the reload")]
    async with ScriptedModel(script) as model:
        client = RecordingClient()
        async with run_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                results: list[str] = []

                async def turn() -> None:
                    results.append((await conn.prompt(session_id=sid, prompt=[text("slow please")])).stop_reason)

                async with anyio.create_task_group() as group:
                    group.start_soon(turn)
                    await client.wait_for(lambda c: any(u.status == "in_progress" for u in c.tool_updates("s1")))
                    client.updates.clear()
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                assert results == ["cancelled"], "the running turn was cancelled first"
                replayed = [u for u in client.tool_updates("s1") if u.session_update == "tool_call"]
                assert replayed and replayed[-1].status == "failed", "its cancelled call was recorded, then replayed"
                assert (await conn.prompt(session_id=sid, prompt=[text("go on")])).stop_reason == "end_turn"
        assert_strict_pairing(model.requests[-1]["messages"])
    store = SqliteStore(crow_home / "sessions.db")
    try:
        entries: list[Any] = await store.load(sid)
        assert [e.message["role"] for e in entries] == ["user", "assistant", "tool", "user", "assistant"]
    finally:
        await store.close()
