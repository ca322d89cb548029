"""Local commands: their output tail shows live, and nothing they started outlives crow, even a SIGKILL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, run_crow, text

from crow_acp.testing import Reply, ScriptedModel, ToolCall


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting for a reaper counts as dead)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def shown(client: RecordingClient, call_id: str) -> str:
    """Everything the editor was shown in the call's progress updates (before it finished)."""
    return "\n".join(
        str(getattr(getattr(item, "content", None), "text", ""))
        for update in client.tool_updates(call_id)
        if update.session_update == "tool_call_update" and update.status not in ("completed", "failed")
        for item in update.content or []
    )


@pytest.mark.anyio
async def test_a_running_command_shows_its_output_tail_live(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    command = "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"
    client = RecordingClient()
    with ScriptedModel([Reply(tool_calls=[ToolCall("run_command", {"command": command}, id="run")])],
                       default=Reply(text="done")) as model:  # fmt: skip
        async with run_crow(client, crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (conn, _):
            session = await conn.new_session(cwd=str(work), mcp_servers=[])
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: conn.prompt(session_id=session.session_id, prompt=[text("go")]))
                await client.wait_for(lambda c: "first" in shown(c, "run"), timeout=60)
                assert "second" not in shown(client, "run")  # it really is the command still running
                (work / "go").touch()
    final = [u for u in client.tool_updates("run") if u.status == "completed"]
    assert len(final) == 1 and "second" in final[0].content[0].content.text


@pytest.mark.anyio
async def test_sigkill_of_crow_kills_the_command_and_its_grandchildren(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[sandbox]\nenabled = false\n")  # host pids: the guard alone
    command = "sleep 300 & echo $! > grandchild.pid; echo $$ > child.pid; echo started; wait"
    client = RecordingClient()
    with ScriptedModel([Reply(tool_calls=[ToolCall("run_command", {"command": command}, id="run")])],
                       default=Reply(text="done")) as model:  # fmt: skip
        with contextlib.suppress(Exception):  # the connection dies with crow: only the processes matter here
            async with run_crow(client, crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (conn, proc):
                session = await conn.new_session(cwd=str(work), mcp_servers=[])
                prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text("go")]))
                await client.wait_for(lambda c: "started" in shown(c, "run"), timeout=60)
                pids = [int((work / name).read_text()) for name in ("child.pid", "grandchild.pid")]
                assert all(alive(pid) for pid in pids)
                os.kill(proc.pid, signal.SIGKILL)
                await proc.wait()
                prompt.cancel()
    with anyio.fail_after(30):
        while any(alive(pid) for pid in pids):  # noqa: ASYNC110 (a process's death is polled: no event to wait on)
            await anyio.sleep(0.05)
