"""Local commands in bubblewrap (issue 22): what a sandboxed command cannot do, and how the modes use it.

Real bubblewrap, crow hosted in process over ACP with the scripted model. HOME is a temporary
directory with planted secrets; the workspace is below it, as a project in $HOME would be.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import anyio
import pytest
from support.helpers import RecordingClient, running
from support.sandbox_home import SECRET, Home, drive, run, told, without_bwrap

from crow_acp.testing import Reply, ScriptedModel

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"),
]


async def test_a_sandboxed_command_reaches_only_the_workspace(tmp_path):
    home = Home(tmp_path)
    outside = Path("/var/tmp") / f"crow-sandbox-{os.getpid()}-{time.monotonic_ns()}"  # not below the private /tmp
    calls = [
        run(f"echo hi > inside.txt && echo x > {home.home / 'beside.txt'} && echo x > {outside}", "write"),
        run("cat ~/.ssh/id_ed25519; ls -A ~/.ssh | wc -l; cat ~/.netrc ~/.git-credentials ~/.npmrc", "secrets"),
        run(f"wc -c < {home.crow / 'sessions.db'}; ls -A {home.crow} | wc -l", "database"),
        run("env | grep -c sk-model-key-123; echo $TMPDIR; touch /tmp/private && echo tmp ok", "keys"),
    ]
    client, model = await drive(home, calls, mode="auto")
    got = told(model)
    assert (home.work / "inside.txt").read_text() == "hi\n" and not outside.exists()
    assert not (home.home / "beside.txt").exists()  # beside the workspace: read-only
    assert "Read-only file system" in got["write"] and '"sandbox": "off"' in got["write"]  # the way out, named
    assert SECRET not in got["secrets"] and got["secrets"].startswith("cat: ")  # not there at all
    assert "\n0\n" in got["secrets"] and "hunter2" not in got["secrets"]
    assert "ghp_gitcred" not in got["secrets"] and "npm_token" not in got["secrets"]
    assert (home.crow / "sessions.db").stat().st_size > 0  # crow's own database, there and in use
    assert "No such file or directory" in got["database"] and "\n0\n" in got["database"]
    assert got["keys"].startswith("0\n/tmp\ntmp ok\n")
    assert client.permission_requests == []  # auto: sandboxed commands run without a question


async def test_the_network_is_off_unless_allowed(tmp_path):
    home = Home(tmp_path)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\""
    try:
        _, model = await drive(home, [run(probe, "off")], mode="auto")
        home.config("[sandbox]\nnetwork = true\n")
        _, allowed = await drive(home, [run(probe, "on")], mode="auto")
    finally:
        listener.close()
    assert "connected" not in told(model)["off"] and "Connection refused" in told(model)["off"]
    assert told(allowed)["on"].startswith("connected\n")


async def test_nothing_outlives_the_timeout_even_setsid_and_forked(tmp_path):
    home = Home(tmp_path)
    mark = f"400.{os.getpid()}{time.monotonic_ns() % 10**6}"
    command = f"setsid sleep {mark} & (setsid nohup sleep {mark} &); sleep {mark} & echo started; wait"
    _, model = await drive(home, [run(command, "slow", timeout=2)], mode="auto")
    assert told(model)["slow"] == "started\n\nTimed out after 2 s; the command was killed."
    assert running(mark) == []


async def test_a_fork_bomb_and_a_memory_hog_stop_at_their_limits(tmp_path):
    home = Home(tmp_path)
    home.config("[sandbox]\nmax_processes = 40\nmemory_mb = 256\n")
    bomb = "b() { b | b & }; b; sleep 1; echo bombed"
    hog = "python3 -c \"x = bytearray(1024 * 1024 * 1024); print('allocated')\""
    _, model = await drive(home, [run(bomb, "bomb", timeout=5), run(hog, "hog")], mode="auto")
    got = told(model)
    assert "fork" in got["bomb"] and ("Resource temporarily unavailable" in got["bomb"] or "retry" in got["bomb"])
    assert "MemoryError" in got["hog"] and "allocated" not in got["hog"]
    assert model.requests[-1]["messages"][-1]["content"] == "again"  # and crow answered the next prompt


async def test_auto_asks_before_leaving_the_sandbox_and_plan_explores_read_only(tmp_path):
    home = Home(tmp_path)
    client = RecordingClient(permission="reject_once")
    calls = [run("echo in", "inside"), run("echo net", "network", sandbox="network")]
    calls.append(run("echo out", "out", sandbox="off"))
    _, model = await drive(home, calls, mode="auto", client=client)
    assert told(model)["inside"].startswith("in\n") and "rejected" in told(model)["network"]
    asked = [request[0] for request in client.permission_requests]
    assert [a.tool_call_id for a in asked] == ["network", "out"]
    assert "with network" in asked[0].title and "outside the sandbox" in asked[1].title

    (home.work / "tracked").write_text("x")
    git = "git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m first"
    await anyio.run_process(["sh", "-c", git], cwd=str(home.work))
    plan = [run("git log --oneline", "log"), run("ls", "ls"), run("touch made", "touch")]
    client, model = await drive(home, plan, mode="plan")
    got = told(model)
    assert "first" in got["log"] and "tracked" in got["ls"]
    assert "Read-only file system" in got["touch"], got
    assert not (home.work / "made").exists()
    assert client.permission_requests == []


async def test_ask_shows_the_sandbox_and_runs_outside_only_when_chosen(tmp_path):
    home = Home(tmp_path)
    outside = tmp_path / "outside.txt"
    client = RecordingClient(permission="allow_unsandboxed")
    calls = [run(f"echo x > {outside}", "out")]
    client, _ = await drive(home, calls, client=client)
    [(call, options)] = client.permission_requests
    assert "sandboxed: the workspace writable, no network" in call.title
    assert [o.name for o in options][2:] == ["Run outside the sandbox", "Reject"]
    assert outside.read_text() == "x\n"  # the explicit choice, and only it, ran it outside


async def test_without_bubblewrap_check_says_so_and_auto_asks(tmp_path):
    from support.helpers import crow_command

    home = Home(tmp_path)
    path = without_bwrap(tmp_path)
    client = RecordingClient(permission="reject_once")
    _, model = await drive(home, [run("echo hi", "cmd")], mode="auto", client=client, PATH=path)
    [(call, _)] = client.permission_requests
    assert "outside the sandbox: bubblewrap (bwrap) is not installed" in call.title
    assert "rejected" in told(model)["cmd"]

    env = home.env("http://127.0.0.1:9/v1", PATH=path)
    with anyio.fail_after(60):
        done = await anyio.run_process(crow_command("check"), env=env, cwd=str(home.work), check=False)
    out = done.stdout.decode()
    assert "sandbox" in out and "apt-get install bubblewrap" in out


async def test_without_bubblewrap_crow_run_says_so_in_one_line_and_auto_asks(tmp_path):
    from support.helpers import crow_command

    home = Home(tmp_path)
    home.config('[permissions]\ndefault_mode = "auto"\n')
    script = [Reply(tool_calls=[run("touch ran", "cmd")]), Reply(text="done")]
    async with ScriptedModel(script) as model:
        env = home.env(model.base_url, PATH=without_bwrap(tmp_path))
        with anyio.fail_after(60):
            done = await anyio.run_process(crow_command("run", "go"), env=env, cwd=str(home.work), check=False)
    said = [line for line in done.stderr.decode().splitlines() if "sandbox" in line and "warning" in line]
    assert len(said) == 1 and "bubblewrap (bwrap) is not installed" in said[0], done.stderr.decode()
    assert "apt-get install bubblewrap" in said[0] and "Auto and Plan ask" in said[0]
    assert not (home.work / "ran").exists()  # it asked, and nobody at a pipe could answer
    assert "cmd" in told(model) and "ran" not in os.listdir(home.work)


@pytest.mark.parametrize("editor", [False, True], ids=["local", "editor terminal"])
async def test_a_writable_path_inside_the_workspace_cannot_be_swapped_for_a_way_out(tmp_path, editor):
    """`writable` nested in a root is writable through the root already: bound on its own, a command could make it
    a symlink to anywhere and the next command would get that place writable."""
    from support.editor_support import EDITOR_CAPS, EditorClient

    home = Home(tmp_path)
    home.config(f'[sandbox]\nwritable = ["{home.work / "a" / "cache"}"]\n')
    (home.work / "a" / "cache").mkdir(parents=True)
    # `cache` is a mount point in the sandbox: move its parent away, then put a symlink in its place
    swap = f"mv a old && mkdir a && ln -s {home.home} a/cache && echo swapped"
    calls = [run(swap, "swap"), run("echo x > a/cache/out", "out")]
    client, caps = (EditorClient(), EDITOR_CAPS) if editor else (None, None)
    _, model = await drive(home, calls, mode="auto", client=client, capabilities=caps)
    assert told(model)["swap"].startswith("swapped")
    assert not (home.home / "out").exists() and "Read-only file system" in told(model)["out"]


@pytest.mark.parametrize("editor", [False, True], ids=["local", "editor terminal"])
async def test_with_home_as_the_workspace_a_secret_stores_parent_cannot_be_moved_out_of_hiding(tmp_path, editor):
    """Hidden by name: moved under another name by one command, a store would be in plain view for the next."""
    from support.editor_support import EDITOR_CAPS, EditorClient

    home = Home(tmp_path)
    (home.home / ".config" / "gh").mkdir(parents=True)
    (home.home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_planted\n")
    (home.home / ".config" / "tool.conf").write_text("x\n")
    calls = [
        run("mv .config .cfg; echo more >> .config/tool.conf && echo written", "move"),
        run("cat .cfg/gh/hosts.yml .config/gh/hosts.yml", "read"),
    ]
    client, caps = (EditorClient(), EDITOR_CAPS) if editor else (None, None)
    _, model = await drive(home, calls, mode="auto", client=client, capabilities=caps, cwd=home.home)
    got = told(model)
    assert "gho_planted" not in got["move"] + got["read"] and (home.home / ".config" / "gh").is_dir()
    assert "Device or resource busy" in got["move"] and "written" in got["move"]  # pinned, and still writable
    assert (home.home / ".config" / "tool.conf").read_text() == "x\nmore\n"
