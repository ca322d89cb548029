"""Hostile MCP servers (real processes; crow hosted in process over ACP, support/hosted.py): broken bytes,
malformed answers, oversized lines, floods, deaths mid-call and while idle, absurd tool lists. Whatever
the server does, the call ends at once with a repaired result or a clear error, the editor sees the call
end, the history stays valid and the session answers the next prompt.

No assertion waits out a timeout: `timeouts.mcp_call` is 60 s, so a regression that makes a call
wait for it shows as a hung test (pytest-timeout), never as a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer
from support.helpers import RecordingClient, crow_env, free_port, text, tool_names, write_config
from support.history_checks import assert_history_valid, assert_requests_valid
from support.hosted import hosted_crow
from support.matrix_support import report

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
WIRE = Path(__file__).resolve().parents[1] / "mcp_servers" / "wire_server.py"
WIRE_HTTP = WIRE.with_name("wire_http_server.py")
TOO_BIG = "crow accepts at most 16 MiB in one message, so it was dropped"


def wire(name: str = "wire", *args: str) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[str(WIRE), *args], env=[])


def patient(home: Path) -> None:
    write_config(home, "max_retries = 0\n[timeouts]\nmcp_call = 60\n")


def result_for(model: ScriptedModel, call_id: str) -> str:
    """The tool result the model was sent for a call."""
    for request in model.requests:
        for message in request["messages"]:
            if message.get("tool_call_id") == call_id:
                return message["content"]
    raise AssertionError(f"the model never saw a result for {call_id}")


def steps(client: RecordingClient, title: str) -> list[Any]:
    return [u for u in client.updates if getattr(u, "title", None) == title]


def calls(tool: str, mode: str, call_id: str) -> list[Any]:
    arguments = {"mode": mode} if mode else {}
    return [Reply(tool_calls=[ToolCall(tool, arguments, id=call_id)]), Reply(text=f"after {call_id}")]


async def run_modes(
    crow_home: Path, cwd: Path, expected: dict[str, tuple[str, str]], matrix_class: str, lost: str, *server_args: str
) -> None:
    """One session; each mode is one prompt whose tool call must end as expected (text, status)."""
    patient(crow_home)
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="still here")) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            sid = (await conn.new_session(cwd=str(cwd), mcp_servers=[wire("wire", *server_args)])).session_id
            for mode, (want, status) in expected.items():
                model.add(*calls("wire__hostile", mode, mode))
                reply = await conn.prompt(session_id=sid, prompt=[text(mode)])
                assert reply.stop_reason == "end_turn", mode
                seen = result_for(model, mode)
                assert want in seen, f"{mode}: the model saw {seen[:200]!r}"
                assert client.tool_updates(mode)[-1].status == status, mode
            await conn.prompt(session_id=sid, prompt=[text("still there?")])
            assert client.text().endswith("still here")
    assert_history_valid(crow_home, sid)
    assert_requests_valid(model.requests)
    report(matrix_class, len(expected), lost)


async def test_broken_bytes_are_repaired_at_the_boundary(crow_home, tmp_path):
    lists = tmp_path / "lists"
    await run_modes(crow_home, tmp_path, {
        "pair": ("pair \U0001f600 low \ufffd high \ufffd end \\ud800", "completed"),
        "control": ("nul \x00 bell \x07 end", "completed"),
        "bad_utf8": ("bad \ufffd\ufffd end", "completed"),
        "garbage": ("after garbage", "completed"),
        "duplicate": ("first", "completed"),
        "flood": ("after the flood", "completed"),
        "list_flood": ("after the list flood", "completed"),
    }, "MCP stdio: broken bytes, garbage lines, duplicate answers, notification floods",
       "nothing (bad bytes become U+FFFD)", "--lists", str(lists))  # fmt: skip
    assert len(lists.read_text().split()) < 100  # 1,000 list_changed notifications: a few listings, not 1,000


async def test_malformed_and_oversized_answers_fail_the_call_at_once(crow_home, tmp_path):
    await run_modes(crow_home, tmp_path, {
        "wrong_shape": ("the MCP server's answer was malformed (result: Input should be a valid dictionary)", "failed"),
        "bad_content": ("the MCP server's answer was malformed (content: Input should be a valid list)", "failed"),
        "bad_error": ("the MCP server's answer was malformed (error.code", "failed"),
        "truncated": ("the MCP server's answer could not be read (Invalid JSON: EOF while parsing", "failed"),
        "deep": ("the MCP server's answer could not be read (Invalid JSON: recursion limit exceeded", "failed"),
        "huge": (TOO_BIG, "failed"),
        "huge_tail": (TOO_BIG, "failed"),
    }, "MCP stdio: malformed answers (wrong shapes, cut short, nested 100,000 deep), 50 MB answers",
       "the broken answer itself (its call fails with what was wrong)")  # fmt: skip


async def test_a_server_that_dies_mid_call_fails_the_call_at_once_and_restarts_at_its_next_use(crow_home, tmp_path):
    patient(crow_home)
    deaths = {"exit": "a", "close_stdout": "b", "orphan": "c"}
    servers = [wire(name, "--starts", str(tmp_path / f"{name}.starts")) for name in deaths.values()]
    client = RecordingClient()
    try:
        async with ScriptedModel(default=Reply(text="still here")) as model:
            async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)).session_id
                for mode, name in deaths.items():
                    model.add(*calls(f"{name}__hostile", mode, mode))
                    await conn.prompt(session_id=sid, prompt=[text(mode)])
                    assert result_for(model, mode) == f"Tool error: MCP server {name!r} exited during the call"
                    assert client.tool_updates(mode)[-1].status == "failed"
                for name in deaths.values():  # each is back for its next use
                    model.add(*calls(f"{name}__ping", "", f"ping-{name}"))
                    await conn.prompt(session_id=sid, prompt=[text(f"ping {name}")])
                    pids = (tmp_path / f"{name}.starts").read_text().split()
                    assert len(pids) == 2, name
                    assert result_for(model, f"ping-{name}") == f"pong from {pids[1]}"
                    assert client.tool_updates(f"ping-{name}")[-1].status == "completed"
    finally:
        if (orphan := tmp_path / "orphan.pid").exists():
            with contextlib.suppress(ProcessLookupError):  # crow may have ended it already
                os.kill(int(orphan.read_text()), signal.SIGKILL)
    assert_history_valid(crow_home, sid)
    assert_requests_valid(model.requests)
    report(
        "MCP stdio: the server dies mid-call (exits, closes stdout, exits leaving an orphan on stdout)", 3, "nothing"
    )


async def test_a_server_that_died_while_idle_is_restarted_before_its_next_use_once(crow_home, tmp_path):
    patient(crow_home)
    starts = tmp_path / "starts"
    client = RecordingClient()
    down = "MCP server 'wire' is unavailable"
    async with ScriptedModel(default=Reply(text="still here")) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(100):
                sid = (
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[wire("wire", "--starts", str(starts))])
                ).session_id
                model.add(*calls("wire__hostile", "then_exit", "last-words"))
                await conn.prompt(session_id=sid, prompt=[text("answer, then die")])
                assert result_for(model, "last-words") == "answered; exiting now"
                await client.wait_for(lambda c: steps(c, down), timeout=60)  # noticed when it exits, between turns

                model.add(*calls("wire__ping", "", "ping"))
                await conn.prompt(session_id=sid, prompt=[text("ping")])
                pids = starts.read_text().split()
                assert len(pids) == 2
                assert result_for(model, "ping") == f"pong from {pids[1]}"  # the first use after the death just works
                assert client.tool_updates("ping")[-1].status == "completed"
                assert steps(client, "Restarted MCP server 'wire'")

                model.add(*calls("wire__hostile", "then_exit", "again"))
                await conn.prompt(session_id=sid, prompt=[text("and die again")])
                await client.wait_for(lambda c: len(steps(c, down)) == 2, timeout=60)
                model.add(*calls("wire__ping", "", "ping-again"))
                await conn.prompt(session_id=sid, prompt=[text("ping again")])
                assert client.tool_updates("ping-again")[-1].status == "failed"
                assert result_for(model, "ping-again") == (
                    "Tool error: MCP server 'wire' is not available: the server stopped again after crow restarted it"
                )
                await conn.prompt(session_id=sid, prompt=[text("still there?")])
    assert len(starts.read_text().split()) == 2  # restarted once, not in a loop
    assert not any(name.startswith("wire__") for name in tool_names(model.requests[-1]))
    assert_history_valid(crow_home, sid)
    assert_requests_valid(model.requests)
    report("MCP stdio: the server dies while idle (twice)", 2, "nothing")


async def test_absurd_tool_lists_are_bounded(crow_home, tmp_path):
    patient(crow_home)
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="still here")) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            server = wire("wire", "--tools", "10000", "--bad-schemas")
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
            model.add(*calls("wire__ping", "", "ping"))
            await conn.prompt(session_id=sid, prompt=[text("ping")])
            assert result_for(model, "ping").startswith("pong from ")
    offered = [name for name in tool_names(model.requests[0]) if name.startswith("wire__")]
    assert len(offered) == 128  # the first 128 of 10,005; the three with broken schemas are left out
    assert "wire__string_schema" not in offered and "wire__ping" in offered
    for tool in model.requests[0]["tools"]:
        assert tool["function"]["parameters"]["type"] == "object"
    assert_history_valid(crow_home, sid)
    assert_requests_valid(model.requests)
    report(
        "MCP stdio: 10,000 tools, input schemas that are not object schemas", 2, "the tools past 128 are not offered"
    )


@contextlib.asynccontextmanager
async def wire_http() -> Any:
    """wire_http_server.py on a free port; yields its ACP server entries (streamable HTTP, legacy SSE) once it is up."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WIRE_HTTP), str(port))
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    assert proc.returncode is None, "the HTTP server exited"
                    await anyio.sleep(0.05)
        yield [
            HttpMcpServer(type="http", name="web", url=f"http://127.0.0.1:{port}/mcp", headers=[]),
            SseMcpServer(type="sse", name="events", url=f"http://127.0.0.1:{port}/sse", headers=[]),
        ]
    finally:
        with contextlib.suppress(ProcessLookupError):  # a test may have made it exit
            proc.kill()
        await proc.wait()


async def test_remote_answers_with_lone_surrogate_escapes_are_repaired(crow_home, tmp_path):
    patient(crow_home)
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="still here")) as model, wire_http() as servers:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)).session_id
            # streamable HTTP: a JSON body, and an event stream; then the legacy SSE transport
            for tool, body in (("web__hostile", "json"), ("web__hostile", "sse"), ("events__hostile", "legacy")):
                model.add(*calls(tool, body, body))
                await conn.prompt(session_id=sid, prompt=[text(body)])
                assert result_for(model, body) == "lone \ufffd half, pair \U0001f600"
                assert client.tool_updates(body)[-1].status == "completed"
            model.add(*calls("web__hostile", "exit", "exit"))  # the server process dies mid-call
            await conn.prompt(session_id=sid, prompt=[text("exit")])
            assert result_for(model, "exit") == "Tool error: MCP server 'web' went away during the call"
            assert client.tool_updates("exit")[-1].status == "failed"
            await conn.prompt(session_id=sid, prompt=[text("still there?")])
            assert client.text().endswith("still here")
    assert_history_valid(crow_home, sid)
    assert_requests_valid(model.requests)
    report(
        "MCP over HTTP: lone surrogate escapes (streamable HTTP JSON and event-stream bodies, legacy SSE), "
        "death mid-call",
        4,
        "nothing",
    )
