"""/rewind over ACP (issue 31 item 2): the conversation and the files back to before a user message.

Crow hosted in process over its real wire, the scripted model, the editor tools and a real bubblewrap
sandbox (the workspace below a temporary HOME, as tests/editor/test_sandbox.py has it).
"""

from __future__ import annotations

import anyio
import pytest
from support.helpers import RecordingClient
from support.hosted import hosted_crow
from support.rewind_support import edit, session, turn, users, write
from support.sandbox_home import Home, run

pytestmark = pytest.mark.anyio


async def test_rewind_2_puts_back_the_files_and_the_next_request_lacks_turn_2(tmp_path):
    home = Home(tmp_path)
    work = home.work
    (work / "d.txt").write_text("d before\n")
    script = [
        *turn(write("a.txt", "one\n", "w1")),
        *turn(
            edit("a.txt", "one", "two", "e2"),
            write("b.txt", "bee\n", "w2"),
            run("echo sea > c.txt && rm d.txt", "cmd"),
        ),
    ]
    async with session(home, script) as live:
        commands = await_commands(live)
        await live.say("first: write a")
        await live.say("second: change things")
        assert (work / "a.txt").read_text() == "two\n" and (work / "c.txt").read_text() == "sea\n"
        assert not (work / "d.txt").exists()
        asked = len(live.model.requests)

        listed = await live.say("/rewind")
        assert "1. first: write a" in listed and "2. second: change things" in listed
        assert "a.txt" in listed.split("2. ")[1] and "c.txt" in listed.split("2. ")[1]

        summary = await live.say("/rewind 2")
        assert len(live.model.requests) == asked  # a command: no model call
        assert (work / "a.txt").read_text() == "one\n"
        assert not (work / "b.txt").exists() and not (work / "c.txt").exists()
        assert (work / "d.txt").read_text() == "d before\n"
        assert "Rewound the conversation and the files to before message 2" in summary
        assert "session_info_update" in live.client.kinds()

        await live.say("third, after the rewind")
        assert users(live.model.requests[-1]) == ["first: write a", "third, after the rewind"]
        tool_ids = [m.get("tool_call_id") for m in live.model.requests[-1]["messages"] if m["role"] == "tool"]
        assert tool_ids == ["w1"]

        listed_sessions = (await live.conn.list_sessions(cwd=str(work))).sessions
        fork = next(s.session_id for s in listed_sessions if s.session_id != live.sid)
        assert fork in summary and "rewind" in await commands

    replay = RecordingClient()
    async with hosted_crow(replay, home.env("http://127.0.0.1:9")) as (conn, _):
        await conn.load_session(cwd=str(work), session_id=fork, mcp_servers=[])
        shown = [u.content.text for u in replay.of("user_message_chunk")]
        assert shown == ["first: write a", "second: change things"]  # the fork holds turn 2
        again = RecordingClient()
    async with hosted_crow(again, home.env("http://127.0.0.1:9")) as (conn, _):
        await conn.load_session(cwd=str(work), session_id=live.sid, mcp_servers=[])
        shown = [u.content.text for u in again.of("user_message_chunk")]
        assert shown == ["first: write a", "third, after the rewind"]  # a client that reloads gets the kept history


async def await_commands(live) -> str:  # noqa: ANN001
    await live.client.wait_for(lambda c: c.of("available_commands_update"))
    return " ".join(cmd.name for cmd in live.client.of("available_commands_update")[-1].available_commands)
