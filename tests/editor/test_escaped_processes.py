"""Nothing a command starts outlives it (issue 13 item 9), even a daemon that left its process group
and session: `setsid`, a double fork, `nohup`. Each command below starts four such escapees, one
of them holding the command's output pipe, and they must all be gone when the command ends, times
out, is cancelled, or crow gets SIGTERM or SIGKILL. Crow's MCP servers and the user's own
processes are left alone."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
from support.editor_support import drive, results
from support.helpers import ECHO_SERVER, RecordingClient, crow_env
from support.raw_wire import RawCrow, _stat, alive, eventually, raw_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
ECHO = {"name": "echo", "command": sys.executable, "args": [str(ECHO_SERVER)], "env": []}
NAMES = ("sleeper.pid", "deep.pid", "nohup.pid", "holder.pid")
ESCAPE = (
    "echo $$ > command.pid; "
    "setsid sh -c 'sleep 1000 & echo $! > deep.pid; echo $$ > sleeper.pid; wait' </dev/null >/dev/null 2>&1 & "
    "(setsid nohup sh -c 'echo $$ > nohup.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &); "
    "setsid sh -c 'echo $$ > holder.pid; exec sleep 1000' & "  # this one keeps the output pipe open
    "while [ ! -s deep.pid ] || [ ! -s sleeper.pid ] || [ ! -s nohup.pid ] || [ ! -s holder.pid ]; "
    "do sleep 0.05; done; "
    "echo started; "
)


def unsandboxed(tmp_path: Path, base_url: str) -> dict[str, str]:
    """The guard on its own, as for a command the user let out of the sandbox (test_sandbox.py has it inside)."""
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text("[sandbox]\nenabled = false\n")
    return crow_env(tmp_path / "home", base_url)


def pid_files_written(work: Path) -> bool:
    return all((work / name).exists() and (work / name).read_text().endswith("\n") for name in NAMES)


def escaped(work: Path) -> set[int]:
    """The escapees' pids, once each is checked to be alive in a session other than the command's."""
    session = lambda pid: (_stat(pid) or ["?"] * 4)[3]  # noqa: E731 (after "pid (name)": state, ppid, pgrp, session)
    command = int((work / "command.pid").read_text())
    pids = {int((work / name).read_text()) for name in NAMES}
    assert all(alive(pid) for pid in pids)
    assert all(session(pid) != session(command) for pid in pids)  # out of reach of a process group kill
    return pids


async def started(crow: RawCrow, work: Path, servers: list | None = None) -> tuple[str, int, set[int]]:
    """A new session's prompt, its command started; returns the session, the prompt's id and the escapees."""
    reply = await crow.call("session/new", {"cwd": str(work), "mcpServers": servers or []})
    session_id = reply["result"]["sessionId"]
    prompt = [{"type": "text", "text": "go"}]
    prompt_id = await crow.send("session/prompt", {"sessionId": session_id, "prompt": prompt})
    await crow.wait_for(
        lambda c: any(u.get("toolCallId") == "run" and u.get("status") == "in_progress" for u in c.updates)
    )
    await eventually(lambda: pid_files_written(work), 60)
    return session_id, prompt_id, escaped(work)


def run(command: str, timeout: int = 60) -> Reply:
    return Reply(tool_calls=[ToolCall("run_command", {"command": command, "timeout": timeout}, id="run")])


async def none_left(pids: set[int]) -> None:
    await eventually(lambda: not any(alive(pid) for pid in pids), 30)


async def test_when_the_command_ends(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    unrelated = await asyncio.create_subprocess_exec("setsid", "sleep", "300")  # the user's own: crow must not touch it
    script = [
        run(ESCAPE + "while [ ! -e go ]; do sleep 0.05; done"),
        Reply(tool_calls=[ToolCall("echo__echo", {"text": "hi"}, id="mcp")]),
    ]
    try:
        with ScriptedModel(script, default=Reply(text="done")) as model:
            async with raw_crow(unsandboxed(tmp_path, model.base_url)) as crow:
                _, prompt_id, pids = await started(crow, work, [ECHO])
                (work / "go").touch()
                answer = await crow.answer(prompt_id)
                assert answer["result"]["stopReason"] == "end_turn"
                await none_left(pids)
        results = {m["tool_call_id"]: m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"}
        assert results["run"] == "started\n\nExit code 0."
        assert results["mcp"] == "echo: hi"  # the MCP server crow started lived on
        assert alive(unrelated.pid)
    finally:
        unrelated.kill()
        await unrelated.wait()


async def test_when_the_command_times_out(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    # 3 s: long enough for the command to start its escapees first on a loaded machine (it says "started")
    with ScriptedModel([run(ESCAPE + "sleep 300", timeout=3)], default=Reply(text="done")) as model:
        async with raw_crow(unsandboxed(tmp_path, model.base_url)) as crow:
            _, prompt_id, pids = await started(crow, work)
            answer = await crow.answer(prompt_id)
            assert answer["result"]["stopReason"] == "end_turn"
            await none_left(pids)
    result = next(m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool")
    assert result == "started\n\nTimed out after 3 s; the command was killed."


async def test_when_the_call_is_cancelled(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with ScriptedModel([run(ESCAPE + "sleep 300")], default=Reply(text="done")) as model:
        async with raw_crow(unsandboxed(tmp_path, model.base_url)) as crow:
            session_id, prompt_id, pids = await started(crow, work)
            await crow.notify("session/cancel", {"sessionId": session_id})
            answer = await crow.answer(prompt_id)
            assert answer["result"]["stopReason"] == "cancelled"
            await none_left(pids)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_when_crow_is_stopped(tmp_path, how):
    work = tmp_path / "work"
    work.mkdir()
    with ScriptedModel([run(ESCAPE + "sleep 300")], default=Reply(text="done")) as model:
        async with raw_crow(unsandboxed(tmp_path, model.base_url)) as crow:
            _, _, pids = await started(crow, work)
            crow.signal(getattr(signal, how))
            status = await crow.drain_to_exit()
            assert status == (0 if how == "SIGTERM" else -signal.SIGKILL)
            await none_left(pids)


async def test_the_guard_reports_the_commands_own_status(tmp_path):
    """The guard exits as its command did, so crow still tells an exit code from a death by signal."""
    work = tmp_path / "work"
    work.mkdir()
    commands = {"exit": "exit 7", "term": "kill -TERM $$", "kill": "kill -KILL $$"}
    calls = [ToolCall("run_command", {"command": command}, id=name) for name, command in commands.items()]
    unsandboxed(tmp_path, "")  # inside the sandbox, bwrap (the namespace's init) reports a signal as 128 + n
    _, model = await drive(RecordingClient(), tmp_path, work, calls)
    got = results(model)
    assert got["exit"] == "(no output)\n\nExit code 7."
    assert got["term"] == "(no output)\n\nKilled by signal SIGTERM."
    assert got["kill"] == "(no output)\n\nKilled by signal SIGKILL."
