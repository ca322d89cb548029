"""Permission modes over ACP stdio: the config option, the older mode API, /mode, persistence, and what
each mode lets run (plan mode against tools that lie about being read-only), and a switch to plan mode
overtaking an open question (crow hosted in process)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.schema import McpServerStdio
from support import spawn
from support.answering import AnsweringClient, one_by_one, write
from support.helpers import (
    CORE_AGENT,
    TESTS,
    RecordingClient,
    crow_env,
    echo_stdio,
    in_process,
    run_crow,
    text,
    write_config,
)
from support.hosted import hosted_crow
from support.records import results

from crow_acp import AcpAgent, CrowCallbacks, load_config
from crow_acp.editor import editor_tools
from crow_acp.policy.modes import PLAN_OVER_NOTE, PLANNING_NOTE
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def hostile() -> McpServerStdio:
    return McpServerStdio(
        name="hostile", command=spawn.python(), args=[str(TESTS / "mcp_servers" / "hostile_server.py")], env=[]
    )


def option(options: list[Any], option_id: str) -> Any:
    return next(o for o in (getattr(o, "root", o) for o in options) if o.id == option_id)


def system_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


async def test_modes_over_stdio(crow_home, tmp_path):
    write_config(crow_home, '[permissions]\ndefault_mode = "plan"\n[permissions.tools]\n"echo__fail" = "deny"\n')
    marker, shell_marker = tmp_path / "deleted", tmp_path / "shell"
    script = [
        Reply(
            tool_calls=[
                ToolCall("hostile__delete_everything", {"path": str(marker)}, id="liar"),
                ToolCall("hostile__run_shell", {"command": "rm -rf ~", "path": str(shell_marker)}, id="shell"),
                ToolCall("echo__add", {"a": 1, "b": 2}, id="add-plan"),
                ToolCall("echo__echo", {"text": "look"}, id="read"),
            ]
        ),
        Reply(text="Here is the plan."),
        Reply(
            tool_calls=[ToolCall("echo__add", {"a": 2, "b": 2}, id="add-full"), ToolCall("echo__fail", {}, id="denied")]
        ),
        Reply(text="done"),
        Reply(tool_calls=[ToolCall("echo__add", {"a": 3, "b": 3}, id="add-ask")]),
        Reply(text="asked"),
    ]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, proc):
            with anyio.fail_after(60):
                created = await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio(), hostile()])
                sid = created.session_id
                mode = option(created.config_options, "mode")
                assert (mode.category, mode.current_value) == ("mode", "plan")
                assert [o.value for o in mode.options] == ["ask", "accept_edits", "auto", "plan", "full_access"]
                assert created.modes.current_mode_id == "plan"
                assert (await conn.prompt(session_id=sid, prompt=[text("plan it")])).stop_reason == "end_turn"

                changed = await conn.set_config_option(config_id="mode", session_id=sid, value="full_access")
                assert option(changed.config_options, "mode").current_value == "full_access"
                await client.wait_for(lambda c: c.of("config_option_update"))
                assert (await conn.prompt(session_id=sid, prompt=[text("do it")])).stop_reason == "end_turn"

                await conn.set_session_mode(session_id=sid, mode_id="ask")  # the older API
                await client.wait_for(lambda c: c.of("current_mode_update"))
                assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"

                command = await conn.prompt(session_id=sid, prompt=[text("/mode accept edits")])
                assert command.stop_reason == "end_turn" and client.text().endswith("Mode: accept_edits.")
                with pytest.raises(RequestError):
                    await conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
            proc.kill()

        async with run_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                loaded = await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                assert option(loaded.config_options, "mode").current_value == "accept_edits"
                assert loaded.modes.current_mode_id == "accept_edits"

    plan = results(model.requests[1])
    assert not marker.exists() and not shell_marker.exists()  # the liars never ran
    assert "has the word 'delete'" in plan["liar"] and "has the word 'run'" in plan["shell"]
    assert "is not marked read-only" in plan["add-plan"] and plan["read"] == "echo: look"
    # Told once, before the prompt at the end of the history (the start of every request stays as it was).
    assert (
        PLANNING_NOTE not in system_text(model.requests[0])
        and model.requests[0]["messages"][-2]["content"] == PLANNING_NOTE
    )
    assert model.requests[2]["messages"][-2]["content"] == PLAN_OVER_NOTE
    full = results(model.requests[3])
    assert full["add-full"] == "4" and "denied by the permission policy" in full["denied"]
    assert [r[0].tool_call_id for r in client.permission_requests] == ["add-ask"]  # only ask mode asked
    updates = client.of("config_option_update")
    assert [option(u.config_options, "mode").current_value for u in updates] == ["full_access", "ask", "accept_edits"]
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["full_access", "ask", "accept_edits"]


async def test_accept_edits_writes_inside_the_workspace_and_asks_for_commands(crow_home, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    calls = [
        ToolCall("write_file", {"path": "notes.txt", "content": "hello"}, id="inside"),
        ToolCall("write_file", {"path": str(outside), "content": "no"}, id="outside"),
        ToolCall("run_command", {"command": "true"}, id="command"),
    ]
    client = RecordingClient(permission="reject_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="ok")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.on_connect(client)
            agent.set_callbacks(CrowCallbacks(begin_session=[editor_tools()]))
            with anyio.fail_after(30):
                sid = (await agent.new_session(cwd=str(work), mcp_servers=[])).session_id
                await agent.set_session_mode(mode_id="accept_edits", session_id=sid)
                response = await agent.prompt(prompt=[{"type": "text", "text": "write"}], session_id=sid)
                assert response.stop_reason == "end_turn"
    told = results(model.requests[1])
    assert (work / "notes.txt").read_text() == "hello" and not outside.exists()
    assert "rejected" in told["command"]
    assert [r[0].tool_call_id for r in client.permission_requests] == ["command"]  # the edit inside was not asked
    assert "is outside the workspace" in told["outside"]  # refused by the tool itself, never asked


async def test_a_multi_agent_graph_shares_the_mode(crow_home, tmp_path, monkeypatch):
    from crow.patterns.bridge import add_agent_callback
    from crow_acp import MultiAgent

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    first, second = (
        AcpAgent(load_config(home=crow_home), name="first"),
        AcpAgent(load_config(home=crow_home), name="second"),
    )
    first.set_callbacks(add_agent_callback(CrowCallbacks(), second))
    team = MultiAgent(entry_agent=first)
    try:
        with anyio.fail_after(20):
            sid = (await team.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            [other] = list(second.sessions)
            assert second.mode_of(other) == "ask"
            await team.set_config_option(config_id="mode", session_id=sid, value="plan")
            assert (first.mode_of(sid), second.mode_of(other)) == ("plan", "plan")
            await team.prompt(prompt=[{"type": "text", "text": "/mode full_access"}], session_id=sid)
            assert second.mode_of(other) == "full_access"
            await team.set_session_mode(mode_id="accept_edits", session_id=sid)
            assert second.mode_of(other) == "accept_edits"
    finally:
        await team.shutdown()


async def test_a_mode_switch_to_plan_overtakes_an_open_question(crow_home, tmp_path):
    conn_box: list[Any] = []

    async def switch_to_plan() -> None:
        conn, sid = conn_box
        await conn.set_session_mode(session_id=sid, mode_id="plan")

    client = AnsweringClient(["allow_once"], on_ask=switch_to_plan)
    async with ScriptedModel(one_by_one([write("notes.txt", "late")])) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                conn_box[:] = [conn, sid]
                assert (await conn.prompt(session_id=sid, prompt=[text("write")])).stop_reason == "end_turn"
    assert [tool_call.tool_call_id for tool_call, _ in client.permission_requests] == ["late"]
    assert not (tmp_path / "notes.txt").exists()
    assert "The mode changed to plan while the question was open" in results(model.requests[-1])["late"]
