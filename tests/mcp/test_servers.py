"""MCP servers for real: stdio, streamable HTTP, SSE, mcp-server-time, config.toml, and broken ones."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

import anyio
import pytest
from acp.schema import McpServerStdio
from support.helpers import (
    RecordingClient,
    crow_env,
    echo_remote,
    echo_stdio,
    text,
    time_server,
    tool_names,
    write_config,
)
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class TimedClient(RecordingClient):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.times: list[float] = []

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.times.append(time.monotonic())
        await super().session_update(session_id, update, **kw)

    def time_of(self, call_id: str, status: str) -> float:
        return next(
            t
            for t, u in zip(self.times, self.updates, strict=True)
            if getattr(u, "tool_call_id", None) == call_id and getattr(u, "status", None) == status
        )


def tool_messages(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def unavailable(client: RecordingClient, name: str) -> list[Any]:
    title = f"MCP server '{name}' is unavailable"
    return [u for u in client.of("tool_call") if u.title == title and u.status == "failed"]


async def test_tool_round_trip_over_every_transport(crow_home, tmp_path):
    calls = [
        ToolCall("echo__echo", {"text": "hi there"}, id="c-echo"),
        ToolCall("web__add", {"a": 2, "b": 3}, id="c-add"),
        ToolCall("sse_events__structured", {}, id="c-structured"),
        ToolCall("time__get_current_time", {"timezone": "UTC"}, id="c-time"),
        ToolCall("echo__image", {}, id="c-image"),
        ToolCall("web__resources", {}, id="c-resources"),
        ToolCall("echo__fail", {}, id="c-fail"),
        ToolCall("cfgsse__echo", {"text": "via config"}, id="c-cfg"),
    ]
    slow = [ToolCall("echo__slow", {"seconds": 0.5}, id="s1"), ToolCall("echo__slow", {"seconds": 0.5}, id="s2")]
    crash = [ToolCall("echo__crash", {}, id="crash"), ToolCall("web__echo", {"text": "still up"}, id="web")]
    script = [
        Reply(text="Working.", tool_calls=calls),
        Reply(text="All done."),
        Reply(tool_calls=slow),
        Reply(text="ok"),
        Reply(tool_calls=crash),
        Reply(text="the echo server died"),
    ]
    client = TimedClient()
    async with echo_remote("http") as web, echo_remote("sse", name="sse events") as events:
        write_config(
            crow_home,
            f"""
[mcp_servers.time]
command = {json.dumps(time_server()[0])}
args = {json.dumps(time_server()[1:])}

[mcp_servers.cfgsse]
url = "{events.url}"
transport = "sse"
""",
        )
        broken = McpServerStdio(name="broken", command="/nonexistent/mcp-server", args=[], env=[])
        async with (
            ScriptedModel(script) as model,
            hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _),
        ):
            with anyio.fail_after(40):
                sid = (
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio(), web, events, broken])
                ).session_id
                assert client.updates == []  # nothing for the session before its session/new response
                await client.wait_for(lambda c: unavailable(c, "broken"))
                assert "not found" in unavailable(client, "broken")[0].content[0].content.text

                response = await conn.prompt(session_id=sid, prompt=[text("use every tool")])
                assert response.stop_reason == "end_turn" and client.text() == "Working.All done."

                assert (await conn.prompt(session_id=sid, prompt=[text("two slow ones")])).stop_reason == "end_turn"

                # a server that dies later only loses its own tools, and the user is told once
                assert not unavailable(client, "echo")
                assert (await conn.prompt(session_id=sid, prompt=[text("crash it")])).stop_reason == "end_turn"
                await client.wait_for(
                    lambda c: unavailable(c, "echo")
                )  # told as the SDK's cleanup ends, maybe after the turn
                assert len(unavailable(client, "echo")) == 1
                assert client.tool_updates("crash")[-1].status == "failed"
                assert client.tool_updates("web")[-1].status == "completed"

    offered = tool_names(model.requests[0])
    assert all(OPENAI_NAME.match(name) for name in offered)
    for name in ("echo__echo", "web__add", "sse_events__structured", "time__get_current_time", "cfgsse__echo"):
        assert name in offered
    assert not any(name.startswith("broken") for name in offered)

    results = tool_messages(model.requests[1])
    assert results["c-echo"] == "echo: hi there"
    assert results["c-add"] == "5"
    assert json.loads(results["c-structured"]) == {"city": "Oslo", "celsius": -3.5}
    assert json.loads(results["c-time"])["timezone"] == "UTC"
    assert re.fullmatch(r"\[image: image/png, \d+ bytes\]", results["c-image"])
    assert results["c-resources"].splitlines() == [
        "two resources follow",
        "[resource memo://notes]",
        "NOTE BODY",
        "[resource link: readme file:///srv/README.md text/markdown]",
    ]
    assert results["c-fail"].startswith("Tool error:") and "failed on purpose" in results["c-fail"]
    assert results["c-cfg"] == "echo: via config"

    # the editor's view of the first response's calls
    # only the calls of tools not marked read-only ask
    assert sorted(p[0].tool_call_id for p in client.permission_requests) == ["c-add", "c-fail", "crash"]
    started = {u.tool_call_id: u for u in client.of("tool_call") if u.tool_call_id.startswith("c-")}
    assert started["c-echo"].status == "pending" and started["c-echo"].kind == "read"
    assert started["c-echo"].title == "echo (echo)" and started["c-echo"].raw_input == {"text": "hi there"}
    assert started["c-add"].raw_input == {"a": 2, "b": 3}
    finals = {}
    for call in calls:
        statuses = [u.status for u in client.tool_updates(call.id or "")]
        assert statuses[:2] == ["pending", "in_progress"], (call.id, statuses)
        finals[call.id] = client.tool_updates(call.id or "")[-1]
    assert {k: v.status for k, v in finals.items()} == {
        "c-echo": "completed",
        "c-add": "completed",
        "c-structured": "completed",
        "c-time": "completed",
        "c-image": "completed",
        "c-resources": "completed",
        "c-fail": "failed",
        "c-cfg": "completed",
    }
    assert finals["c-add"].content[0].content.text == "5"
    assert finals["c-structured"].raw_output == {"city": "Oslo", "celsius": -3.5}

    # calls from one response run concurrently
    ran = client.time_of("s2", "completed") - min(
        client.time_of("s1", "in_progress"), client.time_of("s2", "in_progress")
    )
    assert ran < 0.9, ran
    slow_results = tool_messages(model.requests[3])
    assert slow_results["s1"] == slow_results["s2"] == "slept 0.5s"

    after_crash = model.requests[5]
    assert tool_messages(after_crash)["crash"].startswith("Tool error:")
    assert tool_messages(after_crash)["web"] == "echo: still up"
    # a stdio server that died stays on offer: its next use restarts it (mcp/test_live.py)
    assert "echo__echo" in tool_names(after_crash) and "web__echo" in tool_names(after_crash)


async def test_broken_servers_never_fail_the_session_or_the_turn(crow_home, tmp_path):
    write_config(crow_home, "[timeouts]\nmcp_connect = 2\n")
    hang = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # reads requests, never answers; ends at EOF
    garbage = [sys.executable, "-c", "print('this is not JSON-RPC'); print('{\"jsonrpc\": nonsense')"]
    servers = [
        McpServerStdio(name="hang1", command=hang[0], args=hang[1:], env=[]),
        McpServerStdio(name="hang2", command=hang[0], args=hang[1:], env=[]),
        McpServerStdio(name="garbage", command=garbage[0], args=garbage[1:], env=[]),
        McpServerStdio(name="missing", command="/nonexistent/mcp-server", args=[], env=[]),
    ]
    client = RecordingClient()
    async with ScriptedModel([Reply(text="fine without tools")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)).session_id
                assert client.updates == []  # the response came first: session/new does not wait for servers
                names = ("hang1", "hang2", "garbage", "missing")
                await client.wait_for(lambda c: all(unavailable(c, n) for n in names))
                assert "did not start within 2 s" in unavailable(client, "hang1")[0].content[0].content.text
                assert (await conn.prompt(session_id=sid, prompt=[text("hello")])).stop_reason == "end_turn"
    assert not any(name.startswith(names) for name in tool_names(model.requests[0]))
    assert all(len(unavailable(client, n)) == 1 for n in names)  # each reported once
