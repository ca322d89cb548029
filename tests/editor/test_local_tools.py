"""Editor tools without client fs/terminal capabilities (as under `crow run`): local disk and processes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.editor_support import EditorClient, asked, drive, final, results, started
from support.helpers import RecordingClient, running

from crow_acp.editor.common import MAX_OUTPUT
from crow_acp.testing import ToolCall


@pytest.fixture
def work(tmp_path):
    work = tmp_path / "work"
    (work / "src" / "pkg").mkdir(parents=True)
    (work / "src" / "x.py").write_text("def f():\n    return 1\n")
    (work / "src" / "pkg" / "y.py").write_text("# needle here\nvalue = f('Needle')\n")
    (work / "data.bin").write_bytes(b"needle\0\1\2")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("needle\n")
    return work


@pytest.mark.anyio
async def test_files_are_read_and_edited_on_disk(tmp_path, work):
    # The client implements fs methods but does not advertise them: crow must not call them.
    client = EditorClient({str(work / "src" / "x.py"): "BUFFER\n"})
    calls = [
        ToolCall("read_file", {"path": "src/x.py", "line": 2, "limit": 1}, id="read"),
        ToolCall("edit_file", {"path": "src/x.py", "old_string": "return 1", "new_string": "return 2"}, id="edit"),
        ToolCall("write_file", {"path": "new/dir/z.txt", "content": "z\n"}, id="write"),
    ]
    _, model = await drive(client, tmp_path, work, calls)
    got = results(model)
    assert got["read"] == "    return 1\n"
    assert (work / "src" / "x.py").read_text() == "def f():\n    return 2\n"
    assert (work / "new" / "dir" / "z.txt").read_text() == "z\n"
    assert client.calls == []
    [diff] = final(client, "edit").content
    assert (diff.old_text, diff.new_text) == ("def f():\n    return 1\n", "def f():\n    return 2\n")
    assert final(client, "write").content[0].old_text is None
    assert asked(client) == ["Edit src/x.py", "Write new/dir/z.txt"]


@pytest.mark.anyio
async def test_list_and_search_stay_in_text_files_of_the_workspace(tmp_path, work):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("needle outside\n")
    (work / "src" / "escape.txt").symlink_to(outside / "leak.txt")
    calls = [
        ToolCall("list_files", {}, id="top"),
        ToolCall("list_files", {"path": "src", "recursive": True}, id="tree"),
        ToolCall("search_files", {"pattern": "needle", "ignore_case": True}, id="search"),
        ToolCall("search_files", {"pattern": "f('Needle'", "path": "src"}, id="literal"),
        ToolCall("search_files", {"pattern": "needle", "path": "../outside"}, id="escape"),
    ]
    client, model = await drive(RecordingClient(), tmp_path, work, calls)
    got = results(model)
    assert got["top"].splitlines() == [".git/", "data.bin", "src/"]
    assert got["tree"].splitlines() == ["src/escape.txt", "src/pkg/", "src/pkg/y.py", "src/x.py"]
    # .git, the binary file and the symlink that leads outside are skipped.
    assert got["search"].splitlines() == ["src/pkg/y.py:1: # needle here", "src/pkg/y.py:2: value = f('Needle')"]
    assert got["literal"] == "src/pkg/y.py:2: value = f('Needle')"  # not a valid regex: matched literally
    assert "outside the workspace" in got["escape"]
    assert [started(client, c).title for c in ("tree", "search")] == ["List src", "Search 'needle'"]
    assert started(client, "search").kind == "search"
    assert asked(client) == []  # read-only tools never ask


@pytest.mark.anyio
async def test_local_command_output_exit_code_and_cwd(tmp_path, work):
    calls = [ToolCall("run_command", {"command": "pwd; echo err >&2; exit 4", "cwd": "src"}, id="run")]
    client, model = await drive(RecordingClient(), tmp_path, work, calls)
    assert results(model)["run"] == f"{work / 'src'}\nerr\n\nExit code 4."
    done = final(client, "run")
    assert done.status == "failed" and done.raw_output == {"exit_code": 4, "signal": None, "timed_out": False}
    assert "Exit code 4." in done.content[0].content.text
    assert asked(client) == ["`pwd; echo err >&2; exit 4` (sandboxed: the workspace writable, no network)"]


@pytest.mark.anyio
async def test_local_timeout_kills_the_whole_process_group(tmp_path, work):
    mark = f"300.{os.getpid()}{time.monotonic_ns() % 10**6}"  # the child's pid is its sandbox's: find it by this
    command = f"sleep {mark} & echo started; wait"
    calls = [ToolCall("run_command", {"command": command, "timeout": 1}, id="slow")]
    begun = time.monotonic()
    client, model = await drive(RecordingClient(), tmp_path, work, calls)
    assert time.monotonic() - begun < 20
    text = results(model)["slow"]
    assert text == "started\n\nTimed out after 1 s; the command was killed."
    assert final(client, "slow").status == "failed"
    assert not [pid for pid in running(mark) if _alive(pid)]  # the background child died too


@pytest.mark.anyio
async def test_local_output_is_truncated_with_a_marker(tmp_path, work):
    script = "import sys; sys.stdout.write('HEAD' + 'x' * 200000 + 'TAIL')"
    calls = [ToolCall("run_command", {"command": f'python3 -c "{script}"'}, id="big")]
    _, model = await drive(RecordingClient(), tmp_path, work, calls)
    text = results(model)["big"]
    assert len(text) < MAX_OUTPUT + 200
    assert text.startswith("HEAD") and text.endswith("TAIL\n\nExit code 0.")
    assert f"[... {200008 - MAX_OUTPUT} bytes truncated ...]" in text


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting for a reaper counts as dead)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
