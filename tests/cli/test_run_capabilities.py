"""`crow run` is an honest ACP client: it advertises neither `fs` nor `terminal`, which it does not serve,
so crow writes files and runs commands on the local disk itself (a command runs below crow's own
command guard, not in some client terminal), each behind `crow run`'s permission answer."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from support.helpers import TESTS, crow_command, crow_env

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_crow_run_advertises_no_fs_or_terminal_and_crow_works_locally(crow_home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    caps = tmp_path / "caps.json"
    script = [
        Reply(tool_calls=[ToolCall("write_file", {"path": "note.txt", "content": "local\n"}, id="write")]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "tr '\\0' ' ' < /proc/$PPID/cmdline"}, id="run")]),
        Reply(text="done", chunks=1),
    ]
    agent = f"{TESTS / 'agents' / 'caps_agent.py'}:build"
    with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url, CAPS_FILE=str(caps))
        command = crow_command("run", "go", "--yes", "--agent", agent, "--cwd", str(work))
        with anyio.fail_after(90):
            done = await anyio.run_process(command, env=env, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr.decode()
    offered = json.loads(caps.read_text())
    assert offered["fs"] == {"readTextFile": False, "writeTextFile": False, "_meta": None}
    assert offered["terminal"] is False
    assert (work / "note.txt").read_text() == "local\n"  # written by crow itself
    results = {m["tool_call_id"]: m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"}
    assert "bwrap" in results["run"]  # the shell's parent: the sandbox crow runs every local command in
