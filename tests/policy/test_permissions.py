"""Permission policy: ask for tools not marked read-only, allow/deny/per-tool config, allow_always persisted."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, in_process, run_crow, text, write_config
from support.records import results

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, load_config
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def add_call(call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCall("echo__add", {"a": 1, "b": 2}, id=call_id)])


async def test_ask_reject_allow_once_and_allow_always_survives_a_restart(crow_home, tmp_path):
    script = [
        Reply(tool_calls=[ToolCall("echo__echo", {"text": "free"}, id="read"), *add_call("rejected").tool_calls]),
        Reply(text="ok"),
        add_call("once"),
        Reply(text="ok"),
        add_call("always"),
        Reply(text="ok"),
        add_call("remembered"),
        Reply(text="ok"),
        add_call("after-restart"),
        Reply(text="ok"),
    ]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, proc):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                answers = [("reject_once", "a"), ("allow_once", "b"), ("allow_always", "c"), ("reject_once", "d")]
                for answer, words in answers:
                    client.permission = answer
                    assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
            proc.kill()  # allow_always must already be on disk

        restarted = RecordingClient(permission="reject_once")
        async with run_crow(restarted, env, "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                assert (await conn.prompt(session_id=sid, prompt=[text("e")])).stop_reason == "end_turn"

    asked = [request[0] for request in client.permission_requests]
    assert [tool_call.tool_call_id for tool_call in asked] == ["rejected", "once", "always"]
    assert asked[0].title == "add (echo)" and asked[0].raw_input == {"a": 1, "b": 2}
    options = client.permission_requests[0][1]
    assert {option.kind for option in options} == {"allow_once", "allow_always", "reject_once"}
    assert restarted.permission_requests == []

    assert results(model.requests[1]) == {"read": "echo: free", "rejected": "The user rejected this tool call."}
    assert client.tool_updates("rejected")[-1].status == "failed"
    assert [u.status for u in client.tool_updates("once")] == ["pending", "in_progress", "completed"]
    finals = {
        call_id: results(model.requests[n])[call_id]
        for call_id, n in [("once", 3), ("always", 5), ("remembered", 7), ("after-restart", 9)]
    }
    assert finals == {"once": "3", "always": "3", "remembered": "3", "after-restart": "3"}


async def test_config_policies_and_per_tool_overrides(crow_home, tmp_path):
    write_config(
        crow_home,
        """
[permissions]
default = "deny"

[permissions.tools]
"echo__add" = "allow"
"echo__ech*" = "ask"
""",
    )
    calls = [
        ToolCall("echo__add", {"a": 2, "b": 2}, id="allowed"),
        ToolCall("echo__fail", {}, id="denied"),
        ToolCall("echo__echo", {"text": "asked"}, id="asked"),
    ]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="ok")]) as model:
        async with run_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"

    # a pattern override beats read_only; the default no longer asks
    assert [request[0].tool_call_id for request in client.permission_requests] == ["asked"]
    told = results(model.requests[1])
    assert told["allowed"] == "4" and told["asked"] == "echo: asked"
    assert told["denied"] == "The tool 'echo__fail' is denied by the permission policy."
    assert client.tool_updates("denied")[-1].status == "failed"
    assert "in_progress" not in [u.status for u in client.tool_updates("denied")]


async def test_default_allow_and_ask_without_an_editor(crow_home, tmp_path, monkeypatch):
    """In process, with no editor attached to ask: `allow` runs the tool, `ask` refuses and says why."""

    async def shout(arguments: dict[str, Any], context: Any) -> str:
        return arguments["text"].upper()

    tool = FunctionTool(
        "shout", "Shout the text.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout
    )

    def add_tool(session: Any, **_: Any) -> None:
        session.add_tool(tool)

    script = [Reply(tool_calls=[ToolCall("shout", {"text": "hi"}, id="c")]), Reply(text="ok")] * 2
    async with ScriptedModel(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        told = []
        for policy in ("allow", "ask"):
            write_config(crow_home, f'[permissions]\ndefault = "{policy}"\n')
            async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
                agent.set_callbacks(CrowCallbacks(begin_session=[add_tool]))
                with anyio.fail_after(20):
                    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    response = await agent.prompt(prompt=[{"type": "text", "text": "shout"}], session_id=sid)
            assert response.stop_reason == "end_turn"
            told.append(results(model.requests[-1])["c"])
    assert told == ["HI", "The tool 'shout' needs permission, and no editor is attached to ask."]
