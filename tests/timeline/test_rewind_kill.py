"""SIGKILL in the middle of a rewind: on restart the rewind is finished, and crow says so.

A real `crow acp` process over stdio, the scripted model, a real bubblewrap sandbox. The rewind puts
back 1,000 files; the test kills crow once its journal is written and the first files are back, so the
workspace is half rewound when crow dies.
"""

from __future__ import annotations

import os
import signal

import anyio
import pytest
from support.helpers import RecordingClient, run_crow, text
from support.sandbox_home import Home, run

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
FILES = 1000


async def test_sigkill_mid_rewind_leaves_a_journal_that_the_next_load_finishes(tmp_path):
    home = Home(tmp_path)
    work = home.work
    for n in range(FILES):
        (work / f"f{n}.txt").write_text("old\n")
    script = [Reply(tool_calls=[run("for f in f*.txt; do echo new > $f; done", "cmd")]), Reply(text="done")]
    async with ScriptedModel(script, default=Reply(text="ok")) as model:
        env = home.env(model.base_url)
        async with run_crow(RecordingClient(), env, cwd=str(work)) as (conn, proc):
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="auto")
            await conn.prompt(session_id=sid, prompt=[text("make everything new")])
            assert {(work / f"f{n}.txt").read_text() for n in range(FILES)} == {"new\n"}
            journal = home.crow / "checkpoints" / sid / "rewind-journal.json"
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_rewind_until_killed, conn, sid)
                with anyio.fail_after(60):
                    while not (journal.exists() and _some_old(work)):  # noqa: ASYNC110 (files changing signal nothing)
                        await anyio.sleep(0.01)
                os.kill(proc.pid, signal.SIGKILL)
            assert journal.exists()
            contents = {(work / f"f{n}.txt").read_text() for n in range(FILES)}
            assert contents == {"old\n", "new\n"}  # killed half way: some put back, some not yet

        client = RecordingClient()
        async with run_crow(client, env, cwd=str(work)) as (conn, _):
            await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
            assert {(work / f"f{n}.txt").read_text() for n in range(FILES)} == {"old\n"}  # after, not half
            assert not journal.exists()
            assert [u.content.text for u in client.of("user_message_chunk")] == []  # the turn is rewound
            await client.wait_for(lambda c: any(u.title == "Rewind finished" for u in c.of("tool_call")))
            told = next(u for u in client.of("tool_call") if u.title == "Rewind finished")
            assert "as they were before message 1" in told.content[0].content.text
            listed = (await conn.list_sessions(cwd=str(work))).sessions
            assert len(listed) == 2  # the rewound turn is kept in its fork


async def _rewind_until_killed(conn, sid: str) -> None:
    try:
        await conn.ext_method("crow/rewind", {"sessionId": sid, "messageIndex": 1})
    except Exception:  # the connection dies with crow
        return
    raise AssertionError("the rewind finished before crow was killed")


def _some_old(work) -> bool:
    return any((work / f"f{n}.txt").read_text() == "old\n" for n in range(0, FILES, 50))
