"""/rewind over ACP (issue 31 item 2): the conversation and the files back to before a user message.

Crow hosted in process over its real wire, the scripted model, the editor tools and a real bubblewrap
sandbox (the workspace below a temporary HOME, as tests/editor/test_sandbox.py has it).
"""

from __future__ import annotations

import subprocess

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_command, text
from support.hosted import hosted_crow
from support.rewind_support import edit, said, session, turn, users, write
from support.sandbox_home import Home, run

from crow_acp.testing import Reply

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


def packed(home: Home) -> bytes:
    """Every content the session's checkpoints hold."""
    return b"".join(p.read_bytes() for p in (home.crow / "checkpoints").rglob("*.pack"))


async def await_commands(live) -> str:
    await live.client.wait_for(lambda c: c.of("available_commands_update"))
    return " ".join(cmd.name for cmd in live.client.of("available_commands_update")[-1].available_commands)


@pytest.mark.parametrize(
    ("mode", "answer"), [("ask", "overwrite"), ("ask", "leave"), ("auto", None)], ids=["ask-yes", "ask-no", "auto"]
)
async def test_a_file_changed_outside_crow_is_asked_about_in_ask_mode_and_left_alone_otherwise(tmp_path, mode, answer):
    home = Home(tmp_path)
    work = home.work
    client = RecordingClient()
    script = [
        *turn(write("a.txt", "one\n", "w1")),
        *turn(edit("a.txt", "one", "two", "e2"), write("b.txt", "b\n", "w2")),
    ]
    async with session(home, script, mode=mode, client=client) as live:
        await live.say("first")
        await live.say("second")
        (work / "a.txt").write_text("mine\n")  # the user, between the turn and the rewind
        (work / "notes.txt").write_text("my notes\n")
        asked_before = len(client.permission_requests)
        client.permission = answer or "allow_once"
        summary = await live.say("/rewind 2")
        questions = client.permission_requests[asked_before:]
    assert not (work / "b.txt").exists()  # crow's own change is undone in every mode
    if mode == "ask":
        assert len(questions) == 1 and sorted(questions[0][0].raw_input["files"]) == ["a.txt", "notes.txt"]
    else:
        assert questions == []
    if answer == "overwrite":
        assert (work / "a.txt").read_text() == "one\n" and not (work / "notes.txt").exists()
        assert "Left alone" not in summary
    else:
        assert (work / "a.txt").read_text() == "mine\n" and (work / "notes.txt").read_text() == "my notes\n"
        assert "Left alone (changed outside crow since): a.txt, notes.txt." in summary


async def test_ignored_files_are_not_kept_and_a_file_over_the_limit_is_named_not_restored(tmp_path):
    home = Home(tmp_path)
    work = home.work
    home.config("[checkpoints]\nmax_file_bytes = 1000\n")
    (work / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (work / "big.bin").write_bytes(b"b" * 5000)
    (work / "keep.log").write_text("kept\n")
    command = (
        "mkdir -p build && echo ignored-out > build/out.o && echo ignored-log > run.log && echo changed > keep.log && "
        "head -c 3000 /dev/zero > big.bin && echo t > tracked.txt"
    )
    async with session(home, turn(run(command, "cmd"))) as live:
        await live.say("build it")
        summary = await live.say("/rewind 1")
    assert not (work / "tracked.txt").exists()
    assert (work / "keep.log").read_text() == "kept\n"  # re-included by `!keep.log`: kept and put back
    assert (work / "build" / "out.o").read_text() == "ignored-out\n"  # ignored: left as the turn made it
    assert (work / "run.log").read_text() == "ignored-log\n"
    assert (work / "big.bin").read_bytes() == b"\0" * 3000  # over the limit: never kept, so left as it is
    assert "Not restored (the checkpoint could not keep them: over a limit, or holding a key): big.bin." in summary
    kept = packed(home)
    assert b"ignored-" not in kept and b"bbbb" not in kept and b"kept\n" in kept


async def test_symlinks_are_kept_as_links_and_nothing_is_read_or_written_outside_the_roots(tmp_path):
    home = Home(tmp_path)
    work, outside = home.work, home.home / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    (work / "link").symlink_to(outside / "secret.txt")
    (work / "dirlink").symlink_to(outside)
    (work / "sub").mkdir()
    (work / "sub" / "f.txt").write_text("orig\n")
    command = (
        "rm link && echo replaced > link && rm dirlink && mkdir dirlink && echo x > dirlink/f.txt && "
        f"rm -r sub && ln -s {outside} sub"
    )
    async with session(home, turn(run(command, "cmd"))) as live:
        await live.say("swap things")
        assert (work / "sub").is_symlink()
        await live.say("/rewind 1")
    assert (work / "link").is_symlink() and (work / "link").readlink() == outside / "secret.txt"
    assert (work / "dirlink").is_symlink() and (work / "dirlink").readlink() == outside
    assert not (work / "sub").is_symlink() and (work / "sub" / "f.txt").read_text() == "orig\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written through a link
    assert (outside / "secret.txt").read_text() == "outside secret\n"
    assert b"outside secret" not in packed(home)  # the link was recorded, its target never read


async def test_a_rewind_during_a_running_turn_is_refused_and_changes_nothing(tmp_path):
    home = Home(tmp_path)
    work = home.work
    script = [*turn(write("a.txt", "one\n", "w1")), Reply(text="thinking it over slowly", hold_after=3)]
    async with session(home, script) as live:
        await live.say("first")
        running = anyio.Event()

        async def second() -> None:
            response = await live.conn.prompt(session_id=live.sid, prompt=[text("second, slow")])
            assert response.stop_reason == "cancelled"
            running.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(second)
            await live.client.wait_for(lambda c: "thinking" in said(c))
            with pytest.raises(RequestError) as refused:
                await live.conn.ext_method("crow/rewind", {"sessionId": live.sid, "messageIndex": 1})
            assert refused.value.code == -32000 and "A turn is running" in str(refused.value)
            assert (work / "a.txt").read_text() == "one\n"
            await live.conn.cancel(session_id=live.sid)
            await running.wait()

        with pytest.raises(RequestError) as unknown:
            await live.conn.ext_method("crow/rewind", {"sessionId": live.sid, "messageIndex": 9})
        assert unknown.value.code == -32602 and "There is no message 9" in str(unknown.value.data)
        done = await live.conn.ext_method("crow/rewind", {"sessionId": live.sid, "messageIndex": 1, "chat": False})
        assert done["restored"] == ["a.txt"] and done["forkSessionId"] is None and not (work / "a.txt").exists()
        await live.say("after")
        assert users(live.model.requests[-1]) == ["first", "second, slow", "after"]  # --files: the chat stays


async def test_rewind_is_advertised_in_the_initialize_answer(tmp_path):
    home = Home(tmp_path)
    async with hosted_crow(RecordingClient(), home.env("http://127.0.0.1:9")) as (conn, _):
        answer = await conn.initialize(protocol_version=1)
    assert answer.field_meta["crow"]["rewind"] == {"method": "_crow/rewind"}


async def test_deleting_a_session_deletes_its_checkpoints_over_acp_and_from_the_terminal(tmp_path):
    home = Home(tmp_path)
    script = [*turn(write("a.txt", "one\n", "w1")), *turn(write("b.txt", "two\n", "w2"))]
    async with session(home, script) as live:
        await live.say("first")
        forked = await live.conn.fork_session(session_id=live.sid, cwd=str(home.work), mcp_servers=[])
        await live.conn.prompt(session_id=forked.session_id, prompt=[text("in the fork")])
        assert (home.crow / "checkpoints" / live.sid).is_dir()
        assert (home.crow / "checkpoints" / forked.session_id).is_dir()
        await live.conn._conn.send_request("session/delete", {"sessionId": live.sid})  # the SDK client has no method
        assert not (home.crow / "checkpoints" / live.sid).exists()
    command = crow_command("sessions", "delete", forked.session_id)
    done = await anyio.run_process(command, env=home.env("http://127.0.0.1:9"), check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr.decode()
    assert not (home.crow / "checkpoints" / forked.session_id).exists()


class SilentEditor(RecordingClient):
    """It allows the tools, but asked whether a rewind may overwrite, it never answers (a hung client)."""

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        if not tool_call.tool_call_id.startswith("rewind-"):
            return await super().request_permission(session_id, tool_call, options, **kwargs)
        self.rewind_questions += 1
        await anyio.sleep_forever()

    rewind_questions = 0


async def test_an_unanswered_question_leaves_the_files_alone_after_the_permission_timeout(tmp_path):
    home = Home(tmp_path)
    home.config("[permissions]\ntimeout = 0.5\n")
    work = home.work
    client = SilentEditor()
    async with session(home, [*turn(write("a.txt", "one\n", "w1")), *turn(write("b.txt", "b\n", "w2"))],
                       mode="ask", client=client) as live:  # fmt: skip
        await live.say("first")
        await live.say("second")
        (work / "a.txt").write_text("mine\n")
        with anyio.fail_after(60):
            summary = await live.say("/rewind 2")
    assert client.rewind_questions == 1
    assert (work / "a.txt").read_text() == "mine\n" and not (work / "b.txt").exists()
    assert "Left alone (changed outside crow since): a.txt." in summary
