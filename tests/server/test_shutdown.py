"""Nothing outlives `crow acp` (issue 13 item 9): real signals, and stdin closing, sent to a real
process while it is idle, streaming a reply, or running a command and an MCP tool. Each time crow
answers every open request, records a result for every started tool call, leaves no process of
its own behind, and exits 0."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from support.helpers import ECHO_SERVER, crow_env
from support.history_checks import assert_history_valid
from support.raw_wire import RawCrow, alive, descendants, eventually, raw_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
ECHO = {"name": "echo", "command": sys.executable, "args": [str(ECHO_SERVER)], "env": []}
STOPS = ["SIGTERM", "SIGINT", "SIGHUP", "stdin closed"]


async def stop(crow: RawCrow, how: str) -> None:
    if how == "stdin closed":
        assert crow.proc.stdin is not None
        crow.proc.stdin.close()
    else:
        crow.signal(getattr(signal, how))


async def none_left(pids: set[int]) -> None:
    """The processes crow started are gone (the kernel may take a moment to reap a killed group)."""
    await eventually(lambda: not any(alive(p) for p in pids))


@pytest.mark.parametrize("how", STOPS)
async def test_idle(crow_home, tmp_path, how):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [ECHO]})
            await crow.prompt(reply["result"]["sessionId"], "hello")
            started = descendants(crow.proc.pid)
            assert started, "the MCP server should be running"
            await stop(crow, how)
            assert await crow.drain_to_exit() == 0
            await none_left(started)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "stdin closed"])
async def test_mid_stream(crow_home, tmp_path, how):
    slow = Reply(text="word " * 2000, chunks=2000, delay=0.05)
    with ScriptedModel([slow], default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            session_id = await crow.new_session(str(tmp_path))
            prompt_id = await crow.send(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            )
            await crow.wait_for(
                lambda c: len([u for u in c.updates if u["sessionUpdate"] == "agent_message_chunk"]) >= 3
            )
            await stop(crow, how)
            assert await crow.drain_to_exit() == 0
            answer = [m for m in crow.received if m.get("id") == prompt_id and "method" not in m]
            assert len(answer) == 1 and answer[0]["result"]["stopReason"] == "cancelled", answer
            shown = "".join(u["content"]["text"] for u in crow.updates if u["sessionUpdate"] == "agent_message_chunk")
    messages = assert_history_valid(crow_home, session_id)
    assert messages[-1] == {"role": "assistant", "content": shown}  # what was shown is what was kept


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin closed"])
async def test_mid_tool(crow_home, tmp_path, how):
    (crow_home / "config.toml").write_text("[sandbox]\nenabled = false\n")  # host pids: the guard on its own
    pids = tmp_path / "pids"
    command = f"sleep 301 & echo $! >> {pids}; echo $$ >> {pids}; sleep 300"
    calls = [
        ToolCall("run_command", {"command": command}, id="cmd"),
        ToolCall("echo__slow", {"seconds": 300}, id="mcp"),
    ]
    with ScriptedModel([Reply(tool_calls=calls)], default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [ECHO]})
            session_id = reply["result"]["sessionId"]
            prompt_id = await crow.send(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            )
            running = lambda c: sum(u.get("status") == "in_progress" for u in c.updates) >= 2  # noqa: E731
            await crow.wait_for(running)
            await eventually(lambda: len(pids.read_text().split() if pids.exists() else []) >= 2, 30)
            started = descendants(crow.proc.pid)
            commands = {int(p) for p in pids.read_text().split()}
            assert commands <= started
            await stop(crow, how)
            assert await crow.drain_to_exit() == 0
            answer = [m for m in crow.received if m.get("id") == prompt_id and "method" not in m]
            assert len(answer) == 1 and answer[0]["result"]["stopReason"] == "cancelled", answer
            await none_left(started)
    messages = assert_history_valid(crow_home, session_id)
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert set(results) == {"cmd", "mcp"}  # every started call got exactly one recorded result


async def test_two_signals_at_once(crow_home, tmp_path):
    """A second signal during shutdown only hurries it: the prompt is still answered once, and crow exits 0."""
    with ScriptedModel([Reply(text="word " * 2000, chunks=2000, delay=0.05)], default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            session_id = await crow.new_session(str(tmp_path))
            prompt_id = await crow.send(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            )
            await crow.wait_for(lambda c: any(u["sessionUpdate"] == "agent_message_chunk" for u in c.updates))
            crow.signal(signal.SIGTERM)
            crow.signal(signal.SIGTERM)
            assert await crow.drain_to_exit() == 0
            answers = [m for m in crow.received if m.get("id") == prompt_id and "method" not in m]
            assert len(answers) == 1  # cancelled, or the shutdown error: answered once either way
    assert_history_valid(crow_home, session_id)


def test_descendants_sees_children():
    """The helper itself: it finds this process's own child."""
    import subprocess

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert not alive(child.pid)
