"""Commands in the editor's terminal run in the same sandbox (issue 22, item 2).

The client serves terminal/* with real processes (editor_support.EditorClient), so the line crow
sends to `terminal/create` really runs: in bubblewrap, with the paths the editor's machine sees.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.editor_support import EDITOR_CAPS, EditorClient
from support.sandbox_home import SECRET, Home, drive, run, told

from crow_acp.editor.terminal import SHELL

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"),
]


async def test_the_editor_terminal_runs_the_sandboxed_line_and_auto_does_not_ask(tmp_path):
    home = Home(tmp_path)
    outside = home.home / "beside.txt"
    command = f"echo hi > inside.txt && cat ~/.ssh/id_ed25519; echo x > {outside}"
    client = EditorClient()
    _, model = await drive(home, [run(command, "write")], mode="auto", client=client, capabilities=EDITOR_CAPS)
    [created] = client.called("create_terminal")
    args = created["args"]
    assert created["command"] == "env" and args[:2] == ["-u", "OPENAI_API_KEY"]  # crow's key stays out
    line = args[2:]
    assert line[:2] == ["/bin/sh", "-c"] and line[4] == "bwrap"  # the prelude, then bubblewrap
    assert ["--crow-bind", str(home.work)] == line[line.index("--crow-bind") :][:2]  # the root the editor named
    assert "--unshare-net" in line and "--unshare-pid" in line and ["--crow-hide", "~/.ssh"] in pairs(line)
    assert line[-2:] == [SHELL, command] and line[-6] == "--"  # the command: one argument, after bwrap's --
    assert created["cwd"] == str(home.work)

    got = told(model)["write"]
    assert (home.work / "inside.txt").read_text() == "hi\n"  # it ran for real, the root writable
    assert SECRET not in got and "Read-only file system" in got and not outside.exists()
    assert '"sandbox": "off"' in got  # the way out, named as for a local command
    assert client.permission_requests == []


async def test_plan_runs_ls_in_the_editor_terminal_but_not_touch(tmp_path):
    home = Home(tmp_path)
    (home.work / "tracked").write_text("x")
    client = EditorClient()
    calls = [run("ls", "ls"), run("touch made", "touch")]
    _, model = await drive(home, calls, mode="plan", client=client, capabilities=EDITOR_CAPS)
    got = told(model)
    assert "tracked" in got["ls"] and "Read-only file system" in got["touch"]
    assert not (home.work / "made").exists()
    assert len(client.called("create_terminal")) == 2 and client.permission_requests == []


async def test_without_bubblewrap_on_the_editors_machine_it_fails_visibly_then_asks(tmp_path):
    home = Home(tmp_path)
    bin_dir = Path(tmp_path) / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "cat"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    client = EditorClient(terminal_env={"PATH": str(bin_dir)}, permission="reject_once")
    calls = [run("echo first > first.txt", "first"), run("echo second", "second")]
    _, model = await drive(home, calls, mode="auto", client=client, capabilities=EDITOR_CAPS)
    got = told(model)
    assert "bubblewrap (bwrap) is not installed on this machine" in got["first"]  # the terminal's own output
    assert "The command did not run" in got["first"] and not (home.work / "first.txt").exists()
    assert len(client.called("create_terminal")) == 1  # the second command asked first, and was rejected
    [(asked, _)] = client.permission_requests
    assert asked.tool_call_id == "second" and "outside the sandbox: the editor's machine cannot" in asked.title
    assert "rejected" in got["second"]


def pairs(line: list[str]) -> list[list[str]]:
    return [line[i : i + 2] for i in range(len(line) - 1)]
