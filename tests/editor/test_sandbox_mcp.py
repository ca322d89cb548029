"""A stdio MCP server that opts in (`sandbox = true`) runs in the command sandbox (issue 22, item 6).

The server is exec'd for real (sys.executable, not the fork server, whose children would start
outside bwrap), started by crow under its guard, and asked to read a planted key and write around.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import weakref
from pathlib import Path

import pytest
from support.sandbox_home import SECRET, Home, drive, told

from crow_acp.testing import ToolCall

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"),
]
SNOOP = Path(__file__).parents[1] / "mcp_servers" / "snoop_server.py"


def snoop_toml(*lines: str) -> str:
    table = f"[mcp_servers.snoop]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SNOOP))}]\n"
    return table + "".join(f"{line}\n" for line in lines)


def call(tool: str, call_id: str, **args: str) -> ToolCall:
    return ToolCall(f"snoop__{tool}", args, id=call_id)


async def test_a_sandboxed_server_answers_but_reaches_no_secret_and_writes_only_its_paths(tmp_path):
    home = Home(tmp_path)
    allowed = home.home / "cache"
    allowed.mkdir()
    outside = Path("/var/tmp") / f"crow-mcp-{os.getpid()}-{time.monotonic_ns()}"
    (home.work / "notes.md").write_text("readable\n")
    (home.work / "sub").mkdir()  # below the session's directory, where commands write: never bound for a server
    writable = json.dumps([str(allowed), str(home.work / "sub")])
    home.config(snoop_toml("sandbox = true", f"writable = {writable}"))
    calls = [
        call("read", "notes", path=str(home.work / "notes.md")),
        call("read", "key", path="~/.ssh/id_ed25519"),
        call("read", "db", path=str(home.crow / "sessions.db")),
        call("write", "outside", path=str(outside), text="x"),
        call("write", "workspace", path=str(home.work / "made.txt"), text="x"),
        call("write", "allowed", path=str(allowed / "ok.txt"), text="x"),
        call("write", "nested", path=str(home.work / "sub" / "x.txt"), text="x"),
    ]
    _, model = await drive(home, calls, mode="full_access")
    got = told(model)
    assert got["notes"] == "readable\n"  # it works: the call answers
    assert SECRET not in got["key"] and "No such file or directory" in got["key"]
    assert "No such file or directory" in got["db"] and (home.crow / "sessions.db").exists()
    assert "Read-only file system" in got["outside"] and not outside.exists()
    assert "Read-only file system" in got["workspace"] and not (home.work / "made.txt").exists()
    assert got["allowed"] == "written" and (allowed / "ok.txt").read_text() == "x"
    assert "Read-only file system" in got["nested"] and not (home.work / "sub" / "x.txt").exists()


async def test_without_sandbox_the_server_reads_the_key(tmp_path):
    """The control: the same server, not opted in, reads what the sandbox hides."""
    home = Home(tmp_path)
    home.config(snoop_toml())
    _, model = await drive(home, [call("read", "key", path="~/.ssh/id_ed25519")], mode="full_access")
    assert told(model)["key"] == SECRET


async def test_a_server_that_asks_for_a_sandbox_never_starts_without_one(tmp_path):
    home = Home(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    home.config(snoop_toml("sandbox = true"))
    calls = [call("read", "key", path="~/.ssh/id_ed25519")]
    client, model = await drive(home, calls, mode="full_access", PATH=str(bin_dir))
    assert SECRET not in told(model)["key"] and "Unknown tool 'snoop__read'" in told(model)["key"]
    [failed] = [u for u in client.updates if "'snoop' is unavailable" in str(getattr(u, "title", ""))]
    assert "asks for a sandbox (sandbox = true), and bubblewrap (bwrap) is not installed" in str(failed.content)


async def test_a_server_whose_program_lives_below_tmp_still_starts_and_tmp_stays_private(tmp_path):
    """A checkout (or venv) below /tmp is where the private /tmp would hide the server's own program: the
    paths its command line names are shown again, read-only, and nothing else of the real /tmp."""
    home = Home(tmp_path)
    program = Path(tempfile.mkdtemp(prefix="crow-mcp-program-", dir="/tmp"))
    weakref.finalize(home, shutil.rmtree, program, True)
    shutil.copy(SNOOP, program / "snoop_server.py")
    (program / "neighbour.txt").write_text("beside the program\n")
    elsewhere = Path(tempfile.mkdtemp(prefix="crow-mcp-other-", dir="/tmp"))
    (elsewhere / "private.txt").write_text("another user's file\n")
    table = f"[mcp_servers.snoop]\ncommand = {json.dumps(sys.executable)}\n"
    home.config(table + f"args = [{json.dumps(str(program / 'snoop_server.py'))}]\nsandbox = true\n")
    calls = [
        call("read", "neighbour", path=str(program / "neighbour.txt")),
        call("read", "other", path=str(elsewhere / "private.txt")),
        call("write", "program", path=str(program / "x.txt"), text="x"),
    ]
    _, model = await drive(home, calls, mode="full_access")
    got = told(model)
    shutil.rmtree(elsewhere)
    assert got["neighbour"] == "beside the program\n"  # it started, and reads its own directory
    assert "No such file or directory" in got["other"]  # the rest of /tmp stays private
    assert "Read-only file system" in got["program"] and not (program / "x.txt").exists()
