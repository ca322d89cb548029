"""Editor tools through a client that implements fs/* and terminal/* (what Zed does).

`crow acp` is hosted in this process (support/hosted.py); the model is scripted; the client records every call.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from support.editor_support import EDITOR_CAPS, EditorClient, asked, drive, final, results, started, updates_for
from support.helpers import crow_env, text
from support.hosted import hosted_crow

from crow_acp.editor.common import MAX_OUTPUT
from crow_acp.editor.terminal import SHELL
from crow_acp.testing import Reply, ScriptedModel, ToolCall

BUFFER = "def f():\n    return 1\n"


@pytest.fixture
def work(tmp_path):
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "x.py").write_text("saved on disk\n")
    return work


@pytest.mark.anyio
async def test_read_sees_the_buffer_and_edits_take_the_review_path(tmp_path, work):
    path = str(work / "src" / "x.py")
    client = EditorClient({path: BUFFER})
    calls = [
        ToolCall("read_file", {"path": "src/x.py"}, id="read"),
        ToolCall("edit_file", {"path": "src/x.py", "old_string": "return 1", "new_string": "return 2"}, id="edit"),
        ToolCall("write_file", {"path": "notes/new.md", "content": "# hi\n"}, id="write"),
        ToolCall("read_file", {"path": "src/x.py", "line": 2, "limit": 1}, id="part"),
    ]
    _, model = await drive(client, tmp_path, work, calls, capabilities=EDITOR_CAPS)
    got = results(model)

    assert got["read"] == BUFFER  # the unsaved buffer, not "saved on disk"
    assert got["part"] == "    return 2\n"
    assert client.called("read_text_file")[-1] == {"path": path, "line": 2, "limit": 1}

    # Both edits went to the editor (its review panel), none to the disk.
    new_path = str(work / "notes" / "new.md")
    assert client.called("write_text_file") == [
        {"path": path, "content": "def f():\n    return 2\n"},
        {"path": new_path, "content": "# hi\n"},
    ]
    assert (work / "src" / "x.py").read_text() == "saved on disk\n"
    assert not (work / "notes").exists()

    # The diffs carry the real old text (the buffer), and None for the new file.
    [diff] = final(client, "edit").content
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", path, BUFFER, "def f():\n    return 2\n")
    [created] = final(client, "write").content
    assert (created.type, created.path, created.old_text, created.new_text) == ("diff", new_path, None, "# hi\n")
    assert final(client, "edit").status == "completed"

    # What Zed shows: titles relative to the cwd, kinds, locations to follow the agent.
    shown = {cid: started(client, cid) for cid in ("read", "edit", "write")}
    assert [(s.title, s.kind) for s in shown.values()] == [
        ("Read src/x.py", "read"),
        ("Edit src/x.py", "edit"),
        ("Write notes/new.md", "edit"),
    ]
    assert [loc.path for loc in shown["edit"].locations] == [path]

    # Edits ask permission; reads do not. The question shows the diff the edit would make.
    assert asked(client) == ["Edit src/x.py", "Write notes/new.md"]
    [edit_question, write_question] = [tool_call for tool_call, _ in client.permission_requests]
    [preview] = edit_question.content
    assert (preview.type, preview.old_text, preview.new_text) == ("diff", BUFFER, "def f():\n    return 2\n")
    assert write_question.content[0].old_text is None


@pytest.mark.anyio
async def test_edit_errors_are_clear_and_write_nothing(tmp_path, work):
    path = str(work / "src" / "x.py")
    client = EditorClient({path: "a = 1\na = 1\n"})
    calls = [
        ToolCall("edit_file", {"path": "src/x.py", "old_string": "b = 2", "new_string": "c"}, id="missing"),
        ToolCall("edit_file", {"path": "src/x.py", "old_string": "a = 1", "new_string": "a = 2"}, id="twice"),
        ToolCall("edit_file", {"path": "src/none.py", "old_string": "a", "new_string": "b"}, id="nofile"),
    ]
    _, model = await drive(client, tmp_path, work, calls, capabilities=EDITOR_CAPS)
    got = results(model)
    assert "old_string was not found in src/x.py" in got["missing"]
    assert "old_string occurs 2 times in src/x.py" in got["twice"] and "replace_all" in got["twice"]
    assert "src/none.py does not exist" in got["nofile"]
    assert [final(client, cid).status for cid in ("missing", "twice", "nofile")] == ["failed"] * 3
    assert client.called("write_text_file") == []


@pytest.mark.anyio
async def test_escapes_from_the_workspace_are_refused(tmp_path, work):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (work / "link").symlink_to(outside)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "ok.txt").write_text("allowed\n")
    client = EditorClient({str(outside / "secret.txt"): "secret\n", str(extra / "ok.txt"): "allowed\n"})
    calls = [
        ToolCall("read_file", {"path": "../outside/secret.txt"}, id="dotdot"),
        ToolCall("read_file", {"path": str(outside / "secret.txt")}, id="absolute"),
        ToolCall("read_file", {"path": "link/secret.txt"}, id="symlink"),
        ToolCall("write_file", {"path": "link/planted.txt", "content": "x"}, id="symlink_write"),
        ToolCall("run_command", {"command": "pwd", "cwd": ".."}, id="command_cwd"),
        ToolCall("read_file", {"path": str(extra / "ok.txt")}, id="additional"),
    ]
    _, model = await drive(client, tmp_path, work, calls, capabilities=EDITOR_CAPS, additional=[str(extra)])
    got = results(model)
    for cid in ("dotdot", "absolute", "symlink", "symlink_write", "command_cwd"):
        assert "outside the workspace" in got[cid], (cid, got[cid])
        assert str(work) in got[cid] and str(extra) in got[cid]  # the allowed roots are named
        assert final(client, cid).status == "failed"
    assert "symbolic link" in got["symlink"]
    assert got["additional"] == "allowed\n"
    # Nothing outside was read, written or run.
    assert [c["path"] for c in client.called("read_text_file")] == [str(extra / "ok.txt")]
    assert client.called("write_text_file") == [] and client.called("create_terminal") == []
    assert not (outside / "planted.txt").exists()
    assert asked(client) == [], "a call that cannot run is refused without asking the user"


@pytest.mark.anyio
async def test_run_command_in_an_embedded_terminal(tmp_path, work):
    client = EditorClient()
    command = "echo hello; echo oops >&2; exit 3"
    _, model = await drive(
        client, tmp_path, work, [ToolCall("run_command", {"command": command}, id="run")], capabilities=EDITOR_CAPS
    )
    [created] = client.called("create_terminal")
    # env -u: ACP cannot unset a variable, and the command must not see crow's model key.
    unset = ["-u", "OPENAI_API_KEY"]
    assert (created["command"], created["cwd"], created["limit"]) == ("env", str(work), 4 * MAX_OUTPUT)
    # then the sandbox (editor/test_sandbox_terminal.py), the command its last argument
    assert created["args"][:2] == unset and "bwrap" in created["args"] and created["args"][-2:] == [SHELL, command]
    terminal_id = "term-1"
    assert client.called("release_terminal") == [{"terminal_id": terminal_id}]

    shown = started(client, "run")
    assert (shown.title, shown.kind) == (f"`{command}`", "execute")
    # The terminal is attached while the command runs (Zed shows it live), and stays in the result.
    running = [u for u in updates_for(client, "run") if u.session_update == "tool_call_update" and u.status is None]
    assert [[c.terminal_id for c in u.content] for u in running] == [[terminal_id]]
    done = final(client, "run")
    # A non-zero exit fails the call (the editor marks it), and the model still reads the output.
    assert done.status == "failed" and [c.terminal_id for c in done.content] == [terminal_id]
    assert done.raw_output == {"exit_code": 3, "signal": None, "timed_out": False}
    assert results(model)["run"] == "hello\noops\n\nExit code 3."
    assert asked(client) == [f"`{command}` (sandboxed: the workspace writable, no network)"]


@pytest.mark.anyio
async def test_command_timeout_kills_and_releases_the_terminal(tmp_path, work):
    client = EditorClient()
    call = ToolCall("run_command", {"command": "echo started; sleep 30; echo never", "timeout": 1}, id="slow")
    begun = time.monotonic()
    _, model = await drive(client, tmp_path, work, [call], capabilities=EDITOR_CAPS)
    assert time.monotonic() - begun < 20
    assert client.called("kill_terminal") == [{"terminal_id": "term-1"}]
    assert client.called("release_terminal") == [{"terminal_id": "term-1"}]
    text = results(model)["slow"]
    assert text.startswith("started") and "never" not in text
    assert text.endswith("Timed out after 1 s; the command was killed.")
    done = final(client, "slow")
    assert done.status == "failed" and done.raw_output["timed_out"] is True
    assert done.content[0].terminal_id == "term-1"


@pytest.mark.anyio
async def test_large_output_is_truncated_with_a_marker(tmp_path, work):
    client = EditorClient()
    script = "import sys; sys.stdout.write('HEAD' + 'x' * 200000 + 'TAIL')"
    call = ToolCall("run_command", {"command": f'python3 -c "{script}"'}, id="big")
    _, model = await drive(client, tmp_path, work, [call], capabilities=EDITOR_CAPS)
    text = results(model)["big"]
    assert len(text) < MAX_OUTPUT + 200
    assert text.startswith("[... earlier output truncated ...]")  # the client kept only its byte limit
    assert "characters truncated ...]" in text and text.rstrip().endswith("TAIL\n\nExit code 0.")
    assert client.called("release_terminal")


@pytest.mark.anyio
async def test_cancel_during_a_command_still_releases_the_terminal(tmp_path, work):
    client = EditorClient()
    call = ToolCall("run_command", {"command": "sleep 30"}, id="cancelled")
    with ScriptedModel([Reply(tool_calls=[call])], default=Reply(text="done")) as model:
        async with hosted_crow(
            client, crow_env(tmp_path / "home", model.base_url), cwd=str(work), capabilities=EDITOR_CAPS
        ) as (conn, _):
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text("go")]))
            while not client.called("wait_for_terminal_exit"):  # noqa: ASYNC110  # a request from crow
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
            # Released before the turn ended, and with it the process killed.
            assert client.called("release_terminal") == [{"terminal_id": "term-1"}]
            assert not client.terminals
