"""Two `crow serve` processes on one PostgreSQL: a session follows an engineer from one to the other."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.serve_support import crow_serve, over_http, over_ws

from crow_acp.acp.sessions.leases import SESSION_BUSY
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_session_moves_between_two_servers_and_survives_a_dead_one(postgres, tmp_path):
    url = postgres.new_database()
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    for home in homes:
        home.mkdir()
        write_config(home, "[store]\nlease_ttl = 3\n")
    script = [
        Reply(text="answer from A"),
        Reply(text="answer from B"),
        Reply(text="still A"),
        Reply(text="B took over"),
    ]
    async with ScriptedModel(script) as model:
        env_a = crow_env(homes[0], model.base_url, CROW_DATABASE_URL=url, CROW_HOST_ID="machine-a")
        env_b = crow_env(homes[1], model.base_url, CROW_DATABASE_URL=url, CROW_HOST_ID="machine-b")
        async with crow_serve(env_a, "--agent", CORE_AGENT) as a, crow_serve(env_b, "--agent", CORE_AGENT) as b:
            with anyio.fail_after(120):
                async with over_http(RecordingClient(), a) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("hello A")])).stop_reason == "end_turn"
                # A's client went away, so A let the session go: B lists it and loads it over WebSocket.
                replay = RecordingClient()
                async with over_ws(replay, b) as conn:
                    listed = await conn.list_sessions(cwd=str(tmp_path))
                    assert [s.session_id for s in listed.sessions] == [sid]
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    assert [u.content.text for u in replay.of("user_message_chunk")] == ["hello A"]
                    assert replay.text() == "answer from A"
                    assert (await conn.prompt(session_id=sid, prompt=[text("hello B")])).stop_reason == "end_turn"
                # Back on A, which holds it while its client stays; then A dies mid-session.
                holder = RecordingClient()
                async with over_http(holder, a) as conn:
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    # Over HTTP the load's answer comes back on the POST and the replay on the SSE stream:
                    # two TCP connections, so the answer can arrive first; the replay follows.
                    await holder.wait_for(lambda c: c.text() == "answer from Aanswer from B", timeout=30)
                    assert (await conn.prompt(session_id=sid, prompt=[text("A again")])).stop_reason == "end_turn"
                    taker = RecordingClient()
                    async with over_ws(taker, b) as other:
                        with pytest.raises(RequestError) as busy:
                            await other.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                        assert busy.value.code == SESSION_BUSY and "machine-a" in str(busy.value)
                        a.proc.kill()  # A is gone without a word; B cannot see that: it waits for the lease
                        await a.proc.wait()
                        while True:
                            try:
                                await other.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                                break
                            except RequestError as exc:
                                assert exc.code == SESSION_BUSY
                                await anyio.sleep(0.5)
                        shown = [u.content.text for u in taker.of("user_message_chunk")]
                        assert shown == ["hello A", "hello B", "A again"], "the full history, with A's last turn"
                        assert (await other.prompt(session_id=sid, prompt=[text("B now")])).stop_reason == "end_turn"
                        assert taker.text().endswith("B took over")
