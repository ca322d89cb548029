"""Live MCP over ACP: sessions that open before their servers, tool lists that change,
a server that dies and is restarted once, MCP prompts as slash commands, MCP resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import McpServerStdio, ResourceContentBlock
from support import spawn
from support.helpers import RecordingClient, crow_env, text, tool_names
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
LIVE = Path(__file__).resolve().parents[1] / "mcp_servers" / "live_server.py"
CONNECTING = "Connecting to MCP servers"


def live(*args: str, name: str = "live") -> McpServerStdio:
    return McpServerStdio(name=name, command=spawn.python(), args=[str(LIVE), *args], env=[])


def steps(client: RecordingClient, title: str) -> list[Any]:
    return [u for u in client.updates if getattr(u, "title", None) == title]


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_session_opens_before_its_server_and_the_first_prompt_waits_for_it(crow_home, tmp_path):
    gate = tmp_path / "gate"
    client = RecordingClient()
    async with ScriptedModel([Reply(text="hello")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                # The server cannot be up: it waits for a file nobody has written yet.
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[live("--gate", str(gate))])).session_id
                async with anyio.create_task_group() as group:
                    group.start_soon(conn.prompt, sid, [text("hi")])
                    await client.wait_for(lambda c: steps(c, CONNECTING))
                    assert not model.requests  # the model call waits for the server
                    gate.touch()
                await client.wait_for(lambda c: c.text() == "hello")
        # session/load answers while a server still cannot be up (its gate is never opened), replay included.
        replay = RecordingClient()
        async with hosted_crow(replay, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                await conn.load_session(
                    cwd=str(tmp_path), session_id=sid, mcp_servers=[live("--gate", str(tmp_path / "never"))]
                )
                assert [u.content.text for u in replay.of("user_message_chunk")] == ["hi"]
    connecting = [
        u for u in client.updates if getattr(u, "tool_call_id", "") == steps(client, CONNECTING)[0].tool_call_id
    ]
    assert [u.status for u in connecting] == ["in_progress", "completed"]
    first_text = next(i for i, u in enumerate(client.updates) if u.session_update == "agent_message_chunk")
    assert client.updates.index(connecting[-1]) < first_text
    assert "live__ping" in tool_names(model.requests[0])


async def test_tool_list_changes_and_a_dead_server_restarts_once(crow_home, tmp_path):
    starts = tmp_path / "starts"
    script = [
        Reply(tool_calls=[ToolCall("live__grow", {}, id="grow")]),
        Reply(tool_calls=[ToolCall("live__extra", {"text": "new"}, id="extra")]),
        Reply(text="grew"),
        Reply(tool_calls=[ToolCall("live__die", {}, id="die1")]),
        Reply(text="it died"),
        Reply(tool_calls=[ToolCall("live__ping", {}, id="ping")]),
        Reply(text="it is back"),
        Reply(tool_calls=[ToolCall("live__die", {}, id="die2")]),
        Reply(text="died again"),
        Reply(text="without it"),
    ]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(90):
                sid = (
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[live("--starts", str(starts))])
                ).session_id
                await conn.prompt(session_id=sid, prompt=[text("grow")])
                # notifications/tools/list_changed during the call: the very next model call has the new tool
                assert "live__extra" not in tool_names(model.requests[0])
                assert "live__extra" in tool_names(model.requests[1])
                assert client.tool_updates("extra")[-1].status == "completed"

                await conn.prompt(session_id=sid, prompt=[text("die")])
                assert client.tool_updates("die1")[-1].status == "failed"
                await client.wait_for(
                    lambda c: steps(c, "MCP server 'live' is unavailable")
                )  # may follow the turn's end
                [down] = steps(client, "MCP server 'live' is unavailable")
                assert "restarts it once" in down.content[0].content.text
                await conn.prompt(session_id=sid, prompt=[text("ping")])
                assert "live__ping" in tool_names(model.requests[5])  # still on offer: its next use restarts it
                assert steps(client, "Restarting MCP server 'live'") and steps(client, "Restarted MCP server 'live'")
                pids = starts.read_text().split()
                assert len(pids) == 2
                result = next(m for m in model.requests[6]["messages"] if m.get("tool_call_id") == "ping")["content"]
                assert result == f"pong from {pids[1]}"

                await conn.prompt(session_id=sid, prompt=[text("die again")])
                await client.wait_for(lambda c: len(steps(c, "MCP server 'live' is unavailable")) >= 2)
                await conn.prompt(session_id=sid, prompt=[text("and now?")])
    assert not any(name.startswith("live__") for name in tool_names(model.requests[-1]))  # restarted only once
    assert len(starts.read_text().split()) == 2
    assert len(steps(client, "MCP server 'live' is unavailable")) == 2  # each death told once


async def test_mcp_prompts_are_slash_commands_and_resource_links_are_read(crow_home, tmp_path):
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="ok")) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[live()])).session_id

                def offered(c: RecordingClient) -> dict[str, Any]:
                    updates = c.of("available_commands_update")
                    return {cmd.name: cmd for cmd in updates[-1].available_commands} if updates else {}

                await client.wait_for(lambda c: "live:review" in offered(c))
                review = offered(client)["live:review"]
                assert review.input.root.hint == "topic [tone]"

                await conn.prompt(session_id=sid, prompt=[text('/live:review topic="the parser" tone=dry')])
                assert user_texts(model.requests[-1])[-1] == (
                    "[user] Review the parser in a dry tone.\n\n[assistant] Which parts first?\n\n[user] All of it."
                )
                asked = len(model.requests)
                await conn.prompt(session_id=sid, prompt=[text("/live:review tone=dry")])
                assert len(model.requests) == asked  # refused before the model: a message says what is missing
                assert "missing topic" in client.text()

                link = ResourceContentBlock(type="resource_link", name="notes", uri="memo://notes/today")
                await conn.prompt(session_id=sid, prompt=[text("summarize"), link])
                assert "NOTES FROM THE LIVE SERVER" in user_texts(model.requests[-1])[-1]
                other = ResourceContentBlock(type="resource_link", name="x", uri="memo://not/listed")
                await conn.prompt(session_id=sid, prompt=[text("and this"), other])
                assert "[resource link: x memo://not/listed (not read" in user_texts(model.requests[-1])[-1]


async def test_cancel_stops_the_wait_and_a_server_that_comes_up_later_adds_its_tools(crow_home, tmp_path):
    gate = tmp_path / "gate"
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="ok")) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[live("--gate", str(gate))])).session_id
                stops: list[str] = []

                async def first() -> None:
                    stops.append((await conn.prompt(session_id=sid, prompt=[text("one")])).stop_reason)

                async with anyio.create_task_group() as group:
                    group.start_soon(first)
                    await client.wait_for(lambda c: steps(c, CONNECTING))
                    await conn.cancel(session_id=sid)
                assert stops == ["cancelled"] and not model.requests  # the wait ended without a model call
                waited = [
                    u
                    for u in client.updates
                    if getattr(u, "tool_call_id", "") == steps(client, CONNECTING)[0].tool_call_id
                ]
                assert waited[-1].status == "failed" and waited[-1].content[0].content.text.startswith("Cancelled")
                gate.touch()  # the server comes up after the turn that waited for it
                await conn.prompt(session_id=sid, prompt=[text("two")])
    assert "live__ping" in tool_names(model.requests[0])
