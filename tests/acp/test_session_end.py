"""end_session on close, eviction and shutdown (over stdio), and slash commands on the turn's error path."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import RequestError
from support.helpers import (
    HOOK_AGENT,
    RecordingClient,
    crow_env,
    in_process,
    run_crow,
    text,
    write_config,
)
from support.records import read_log

from crow_acp import AcpAgent, CrowCallbacks, SlashCommand, load_config
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_end_session_on_close_eviction_and_shutdown(crow_home, tmp_path):
    log = tmp_path / "hooks.jsonl"
    write_config(crow_home, "[sessions]\nmax_open = 2\n")
    async with ScriptedModel([Reply(text="back again")]) as model:
        env = crow_env(crow_home, model.base_url, HOOK_LOG=str(log))
        client = RecordingClient()
        async with run_crow(client, env, "--agent", f"{HOOK_AGENT}:build_ending") as (conn, proc):
            with anyio.fail_after(60):
                a, b, c = [(await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id for _ in range(3)]
                await conn.close_session(session_id=b)
                # A was evicted for room; a prompt opens it again from the store, without a replay.
                assert (await conn.prompt(session_id=a, prompt=[text("still there?")])).stop_reason == "end_turn"
                assert client.text() == "back again"
        assert proc.returncode == 0  # stdin closed: an orderly shutdown
    names = {a: "A", b: "B", c: "C"}
    events = [(e["hook"], names[e["session"]], e.get("reason", e.get("loaded"))) for e in read_log(log)]
    assert events[:6] == [
        ("begin_session", "A", False),
        ("begin_session", "B", False),
        ("begin_session", "C", False),
        ("end_session", "A", "evicted"),  # the least recently used, past max_open = 2
        ("end_session", "B", "closed"),
        ("begin_session", "A", True),
    ]
    assert sorted(events[6:]) == [("end_session", "A", "shutdown"), ("end_session", "C", "shutdown")]


async def test_a_raising_or_cancelled_slash_command_takes_the_turns_error_path(crow_home, tmp_path):
    ended: list[tuple[str, str | None, str | None]] = []
    started = anyio.Event()

    async def boom(session: Any, argument: str) -> str:
        raise RuntimeError(f"kaput {argument}")

    async def wait(session: Any, argument: str) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    async def end_turn(
        session: Any, *, hook: str, stop_reason: str, error: str | None, command: str | None, **_: Any
    ) -> None:
        assert hook == "end_turn"
        ended.append((stop_reason, error, command))

    class Commands:
        commands = (SlashCommand("boom", "Raises", boom), SlashCommand("wait", "Waits", wait))

        async def __call__(self, session: Any, **_: Any) -> None:
            pass

    client = RecordingClient()
    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        agent.on_connect(client)
        agent.set_callbacks(CrowCallbacks(begin_session=[Commands()], end_turn=[end_turn]))
        with anyio.fail_after(20):
            sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as raised:
                await agent.prompt(prompt=[{"type": "text", "text": "/boom now"}], session_id=sid)
            assert raised.value.code == -32603 and str(raised.value) == "/boom failed: RuntimeError: kaput now"

            async with anyio.create_task_group() as group:

                async def waiting() -> None:
                    response = await agent.prompt(prompt=[{"type": "text", "text": "/wait"}], session_id=sid)
                    assert response.stop_reason == "cancelled"

                group.start_soon(waiting)
                await started.wait()
                await agent.cancel(session_id=sid)
            assert (await agent.store.get(sid)).title is None  # commands name nothing; and unlisted: no prompt recorded
    assert ended == [("error", "/boom failed: RuntimeError: kaput now", "boom"), ("cancelled", None, "wait")]
    assert client.text() == ""


async def test_a_bridge_does_not_hand_over_after_a_slash_command(crow_home, tmp_path, monkeypatch):
    import crow.patterns.bridge as bridge_module

    handed: list[str] = []

    async def hand_off(session: Any, next_agent: Any, summary: str) -> None:
        handed.append(summary)

    monkeypatch.setattr(bridge_module, "hand_off", hand_off)

    async def hello(session: Any, argument: str) -> str:
        return "hello there"

    class Hello:
        commands = (SlashCommand("hello", "Greets", hello),)

        async def __call__(self, session: Any, **_: Any) -> None:
            pass

    async with ScriptedModel([Reply(text="the answer")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        nxt = AcpAgent(load_config(home=crow_home), name="next")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            callbacks = bridge_module.add_agent_callback(CrowCallbacks(begin_session=[Hello()]), nxt)
            agent.set_callbacks(callbacks)
            with anyio.fail_after(20):
                sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await agent.prompt(prompt=[{"type": "text", "text": "/hello"}], session_id=sid)
                assert handed == []
                await agent.prompt(prompt=[{"type": "text", "text": "a question"}], session_id=sid)
    assert handed == ["the answer"]


async def test_an_evicted_session_takes_options_and_a_closed_one_stays_closed(crow_home, tmp_path):
    write_config(crow_home, "[sessions]\nmax_open = 1\n")
    ends: list[tuple[str, str]] = []

    async def end_session(session: Any, *, reason: str, **_: Any) -> None:
        ends.append((session.session_id, reason))

    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        agent.set_callbacks(CrowCallbacks(end_session=[end_session]))
        with anyio.fail_after(20):
            a = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            b = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert list(agent.sessions) == [b]
            changed = await agent.set_config_option(config_id="mode", session_id=a, value="plan")  # reopens a
            assert [o.current_value for o in changed.config_options if o.id == "mode"] == ["plan"]
            assert list(agent.sessions) == [a] and agent.mode_of(a) == "plan"
            await agent.close_session(session_id=b)  # closed while evicted
            with pytest.raises(RequestError):
                await agent.prompt(prompt=[{"type": "text", "text": "hi"}], session_id=b)
    assert ends == [(a, "evicted"), (b, "evicted"), (a, "shutdown")]


async def test_a_raising_slash_command_over_stdio(crow_home, tmp_path):
    log = tmp_path / "hooks.jsonl"
    async with ScriptedModel([Reply(text="still fine")]) as model:
        env = crow_env(crow_home, model.base_url, HOOK_LOG=str(log))
        client = RecordingClient()
        async with run_crow(client, env, "--agent", f"{HOOK_AGENT}:build_broken_command") as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                with pytest.raises(RequestError) as raised:
                    await conn.prompt(session_id=sid, prompt=[text("/broken the build")])
                assert "/broken failed: ValueError: cannot the build" in str(raised.value)
                assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
    assert [(e["stop_reason"], e["error"]) for e in read_log(log)] == [
        ("error", "/broken failed: ValueError: cannot the build"),
        ("end_turn", None),
    ]
    assert client.text() == "still fine"


async def test_idle_sessions_are_evicted(crow_home, tmp_path):
    write_config(crow_home, "[sessions]\nidle_minutes = 0.001\n")  # 60 ms
    ends: list[tuple[str, str]] = []

    async def end_session(session: Any, *, reason: str, **_: Any) -> None:
        ends.append((session.session_id, reason))

    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        agent.set_callbacks(CrowCallbacks(end_session=[end_session]))
        with anyio.fail_after(20):
            a = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await anyio.sleep(0.3)  # idle well past the limit
            b = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert ends == [(a, "evicted")] and list(agent.sessions) == [b]


async def test_a_multi_agents_members_are_never_evicted_one_by_one(crow_home, tmp_path, monkeypatch):
    from crow.patterns.bridge import add_agent_callback
    from crow_acp import MultiAgent

    write_config(crow_home, "[sessions]\nmax_open = 1\n")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    first, second = (
        AcpAgent(load_config(home=crow_home), name="first"),
        AcpAgent(load_config(home=crow_home), name="second"),
    )
    first.set_callbacks(add_agent_callback(CrowCallbacks(), second))
    team = MultiAgent(entry_agent=first)
    try:
        with anyio.fail_after(20):
            sids = [(await team.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id for _ in range(3)]
            assert sorted(first.sessions) == sorted(sids) and len(second.sessions) == 3
            await team.close_session(session_id=sids[0])
            assert len(first.sessions) == 2 and len(second.sessions) == 2
    finally:
        await team.shutdown()
