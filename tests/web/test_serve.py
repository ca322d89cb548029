"""`crow serve` driven by the ACP SDK's own HTTP and WebSocket clients, as a team's editors would."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys

import anyio
import httpx
import pytest
from acp import RequestError
from acp.http.client import AcpHttpStatusError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, text
from support.serve_support import crow_serve, over_http, over_ws
from websockets.exceptions import InvalidStatus

from crow_acp.core.session import INTERRUPTED
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def echo_turn(call_id: str) -> list[Reply]:
    return [
        Reply(text="Echoing.", tool_calls=[ToolCall("echo__echo", {"text": "round trip"}, id=call_id)]),
        Reply(text="Echoed."),
    ]


def slow_turn(call_id: str, seconds: float = 60) -> Reply:
    return Reply(text="Slow.", tool_calls=[ToolCall("echo__slow", {"seconds": seconds}, id=call_id)])


def running(call_id: str):
    return lambda c: any(getattr(u, "status", None) == "in_progress" for u in c.tool_updates(call_id))


@pytest.mark.parametrize("transport", [over_http, over_ws], ids=["http", "ws"])
async def test_tool_round_trip_cancel_and_load(crow_home, tmp_path, transport):
    script = [*echo_turn("e1"), slow_turn("s1"), Reply(text="after the load")]
    async with ScriptedModel(script) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as served:
            first = RecordingClient()
            with anyio.fail_after(90):
                async with transport(first, served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("echo please")])).stop_reason == "end_turn"
                    assert first.text() == "Echoing.Echoed."
                    result = [u for u in first.tool_updates("e1") if u.status == "completed"]
                    assert result, "the tool ran on the server and its result came back"
                    assert model.requests[1]["messages"][-1] == {
                        "role": "tool",
                        "tool_call_id": "e1",
                        "content": "echo: round trip",
                    }
                    stops: list[str] = []

                    async def slow() -> None:
                        stops.append((await conn.prompt(session_id=sid, prompt=[text("slow please")])).stop_reason)

                    async with anyio.create_task_group() as group:
                        group.start_soon(slow)
                        await first.wait_for(running("s1"))
                        await conn.cancel(session_id=sid)
                    assert stops == ["cancelled"]
                second = RecordingClient()
                async with transport(second, served) as conn:  # a new connection, as after an editor restart
                    listed = await conn.list_sessions(cwd=str(tmp_path))
                    assert [s.session_id for s in listed.sessions] == [sid]
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                    assert [u.content.text for u in second.of("user_message_chunk")] == ["echo please", "slow please"]
                    # The SDK gives a loaded session no stream: crow registers it, so this prompt is not a 404.
                    assert (await conn.prompt(session_id=sid, prompt=[text("go on")])).stop_reason == "end_turn"
                    assert second.text().endswith("after the load")
                    await conn.close_session(session_id=sid)  # unstable methods are enabled
                    with pytest.raises(RequestError):
                        await conn.prompt(session_id=sid, prompt=[text("closed")])
                    await conn.resume_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])


async def test_a_second_connection_loading_a_running_session_cancels_its_turn_first(crow_home, tmp_path):
    async with ScriptedModel([slow_turn("s1"), Reply(text="taken over")]) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as served:
            first, second = RecordingClient(), RecordingClient()
            with anyio.fail_after(90):
                async with over_http(first, served) as a, over_ws(second, served) as b:
                    sid = (await a.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                    stops: list[str] = []

                    async def slow() -> None:
                        stops.append((await a.prompt(session_id=sid, prompt=[text("slow")])).stop_reason)

                    async with anyio.create_task_group() as group:
                        group.start_soon(slow)
                        await first.wait_for(running("s1"))
                        await b.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                    assert stops == ["cancelled"], "the turn on the other connection was cancelled first"
                    replayed = [u for u in second.tool_updates("s1") if u.session_update == "tool_call"]
                    assert replayed and replayed[-1].status == "failed", "and it recorded its cancelled call"
                    assert (await b.prompt(session_id=sid, prompt=[text("mine now")])).stop_reason == "end_turn"
                    with pytest.raises(RequestError):
                        await a.prompt(session_id=sid, prompt=[text("still mine?")])


async def test_no_token_is_refused_beyond_loopback_and_the_token_is_enforced(crow_home, tmp_path):
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    refused = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crow",
        "serve",
        "--host",
        "0.0.0.0",
        "--no-token",
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await refused.communicate()
    assert refused.returncode == 3 and b"loopback only" in err and b"Traceback" not in err
    async with crow_serve(env, "--agent", CORE_AGENT, token="s3cret") as served:
        async with httpx.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
                response = await http.post(served.acp, json=body, headers=headers)
                assert response.status_code == 401, headers
            assert (await http.get(served.url + "/health")).json()["ready"] is True, "health needs no token"
        with pytest.raises(InvalidStatus) as upgrade:
            async with over_ws(RecordingClient(), served, token=None):
                pass
        assert upgrade.value.response.status_code == 403, "the upgrade is refused"
        with pytest.raises(AcpHttpStatusError) as initialize:
            async with over_http(RecordingClient(), served, token=None):
                pass
        assert initialize.value.status_code == 401
        async with over_ws(RecordingClient(), served, token="s3cret") as conn:
            assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        async with over_http(RecordingClient(), served, token="s3cret") as conn:
            assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id


async def test_connection_request_and_size_limits_hold(crow_home, tmp_path):
    script = [slow_turn("s1")]
    async with ScriptedModel(script) as model:
        args = ("--agent", CORE_AGENT, "--max-connections", "1", "--max-requests", "2", "--max-body", "100000")
        async with crow_serve(crow_env(crow_home, model.base_url), *args) as served:
            client = RecordingClient()
            with anyio.fail_after(90):
                async with over_http(client, served) as conn:
                    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {served.token}"}) as http:
                        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
                        assert (await http.post(served.acp, json=body)).status_code == 503, "one connection at most"
                        big = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x" * 200_000}}
                        assert (await http.post(served.acp, json=big)).status_code == 413
                    with pytest.raises(InvalidStatus):
                        async with over_ws(RecordingClient(), served):
                            pass
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                    outcomes: list[str] = []

                    async def ask(words: str) -> None:
                        try:
                            outcomes.append((await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason)
                        except RequestError as exc:
                            outcomes.append(f"refused: {exc}")

                    async with anyio.create_task_group() as group:
                        group.start_soon(ask, "first")
                        await client.wait_for(running("s1"))
                        group.start_soon(ask, "second")  # waits behind the first: two in flight
                        await anyio.sleep(0.5)
                        await ask("third")
                        assert outcomes and outcomes[0].startswith("refused") and "Too many requests" in outcomes[0]
                        await conn.cancel(session_id=sid)
                    assert sorted(outcomes[1:]) == ["cancelled", "cancelled"]


async def test_sigterm_lets_turns_finish_then_cancels_answers_and_releases(crow_home, tmp_path):
    script = [slow_turn("long"), slow_turn("quick", 1), Reply(text="finished in the grace period")]
    async with ScriptedModel(script) as model:
        # The grace period: quick's last second of its tool call and its last reply, and 3 s to spare on a
        # loaded machine.
        async with crow_serve(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT, "--grace", "4") as served:
            first, second = RecordingClient(), RecordingClient()
            with anyio.fail_after(90):
                async with over_http(first, served) as a, over_ws(second, served) as b:
                    quick = (await a.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                    long = (await b.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                    stops: dict[str, str] = {}

                    async def turn(conn, sid: str, name: str) -> None:
                        stops[name] = (await conn.prompt(session_id=sid, prompt=[text(name)])).stop_reason

                    async with anyio.create_task_group() as group:
                        group.start_soon(turn, b, long, "long")
                        await second.wait_for(running("long"))
                        group.start_soon(turn, a, quick, "quick")
                        await first.wait_for(running("quick"))
                        async with httpx.AsyncClient() as http:  # one kept-alive connection, opened before
                            assert (await http.get(served.url + "/health")).status_code == 200
                            served.proc.send_signal(signal.SIGTERM)
                            for _ in range(200):
                                health = await http.get(served.url + "/health")
                                if health.status_code == 503:
                                    break
                                await anyio.sleep(0.05)
                            assert health.status_code == 503 and health.json()["draining"] is True
                            with pytest.raises(httpx.ConnectError):  # no new connections
                                await httpx.AsyncClient().get(served.url + "/health")
                    assert stops == {"quick": "end_turn", "long": "cancelled"}, "every open call got its answer"
            with anyio.fail_after(60):
                assert await served.proc.wait() == 0
    db = sqlite3.connect(crow_home / "sessions.db")
    assert db.execute("SELECT COUNT(*) FROM leases").fetchone() == (0,), "the leases were released"
    rows = db.execute(
        "SELECT json_extract(message, '$.role'), json_extract(message, '$.content') FROM messages"
        " WHERE session_id = ? ORDER BY pos",
        (long,),
    ).fetchall()
    assert [role for role, _ in rows] == ["user", "assistant", "tool"], "the cancelled call was recorded before exit"
    assert rows[-1][1] == INTERRUPTED, "cut by crow's stop, not the user's: a load marks it and /continue resumes it"
