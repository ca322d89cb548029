"""`crow run` drives the default agent from a terminal through a real ACP connection."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from helpers import ECHO_SERVER, crow_env, write_config

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_crow_run_prints_the_stream_and_tool_calls(crow_home, tmp_path):
    write_config(
        crow_home,
        f"[mcp_servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(ECHO_SERVER))}]\n",
    )
    script = [
        Reply(text="Adding them up.", tool_calls=[ToolCall("echo__add", {"a": 40, "b": 2}, id="sum")]),
        Reply(text="The sum is 42.", chunks=4),
    ]
    async with ScriptedModel(script) as model:
        command = [sys.executable, "-m", "crow", "run", "what is 40 + 2?", "--yes", "--cwd", str(tmp_path)]
        with anyio.fail_after(60):
            done = await anyio.run_process(command, env=crow_env(crow_home, model.base_url), check=False,
                                           stdin=subprocess.DEVNULL)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert out.splitlines() == [
        "Adding them up.",
        "⚙ add (echo) [pending]",
        "⚙ add (echo) [completed]",
        "  42",
        "The sum is 42.",
    ]
    assert "[end_turn · session " in err
    assert model.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "sum", "content": "42"}


async def test_crow_run_continues_a_session_without_reprinting_it(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="First answer."), Reply(text="Second answer.")]) as model:
        env = crow_env(crow_home, model.base_url)
        base = [sys.executable, "-m", "crow", "run", "--cwd", str(tmp_path)]
        with anyio.fail_after(60):
            first = await anyio.run_process([*base, "one"], env=env, check=False, stdin=subprocess.DEVNULL)
            sid = first.stderr.decode().split("session ")[-1].split("]")[0]
            second = await anyio.run_process([*base, "--session", sid, "two"], env=env, check=False, stdin=subprocess.DEVNULL)
    assert first.stdout.decode() == "First answer.\n"
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout.decode() == "Second answer.\n", "the replayed history is not printed again"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] != "system"] == [
        "one", "First answer.", "two"
    ]


async def test_crow_run_without_a_key_says_what_to_set(crow_home, tmp_path):
    env = {k: v for k, v in crow_env(crow_home, "unused").items() if not k.startswith("OPENAI_")}
    with anyio.fail_after(60):
        done = await anyio.run_process([sys.executable, "-m", "crow", "run", "hi", "--cwd", str(tmp_path)],
                                       env=env, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert "set OPENAI_API_KEY" in done.stderr.decode()
