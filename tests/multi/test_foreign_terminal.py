"""A foreign member's terminal/* (issue 21, item 2): served through the editor, in crow's sandbox, under crow's rules.

The member is tests/agents/foreign_acp_agent.py (TERM, TERMS, TERMPEEK, TERMLEAVE) in a chain coder → outsider →
reviewer, in process; the editor is editor_support.EditorClient, which offers terminal/* and runs each line for
real, so the sandboxed line crow sends really runs in bubblewrap.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from pathlib import Path

import anyio
import pytest
from acp import RequestError
from acp.schema import ClientCapabilities, FileSystemCapabilities
from support import multi_support
from support.editor_support import EDITOR_CAPS, EditorClient
from support.helpers import text
from support.multi_support import functions

from crow_acp.editor.terminal import CLIENT_OUTPUT_BYTES, SHELL
from crow_acp.testing import Reply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"),
]
GRAPHS = Path(__file__).parents[1] / "agents" / "foreign_graphs.py"


class Place:
    """A project outside /tmp (the sandbox's /tmp is private), and a place beside it that is outside the roots."""

    def __init__(self) -> None:
        base = Path(tempfile.mkdtemp(prefix="crow-member-term-", dir="/var/tmp"))
        weakref.finalize(self, shutil.rmtree, base, True)
        self.base, self.work, self.outside = base, base / "project", base / "outside"
        self.work.mkdir()
        self.outside.mkdir()


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def term(command: str, **spec: object) -> str:
    return "TERM " + json.dumps({"command": command, **spec})


async def run_member(crow_home, place, monkeypatch, client, words, *, mode="auto", config="", caps=EDITOR_CAPS):
    """Each of `words` handed to the member in one turn of the same session; the editor's text after them."""
    (crow_home / "config.toml").write_text(f'[permissions]\ndefault_mode = "{mode}"\n{config}')
    models = functions(coder=[Reply(text=w) for w in words], reviewer=lambda request: Reply(text="ok"))
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    env = {"FOREIGN_LOG": str(place.base / "member.jsonl")}
    async with multi_support.in_process(client, "build_chain", crow_home, models, monkeypatch, env, caps) as conn:
        sid = (await conn.new_session(cwd=str(place.work), mcp_servers=[])).session_id
        for _ in words:
            with anyio.fail_after(60):
                await conn.prompt(session_id=sid, prompt=[text("go")])
    return client.text()


async def test_auto_runs_the_members_command_in_crows_sandbox_in_the_editors_terminal(crow_home, monkeypatch):
    place = Place()
    script = f"echo hi > inside.txt; echo x > {place.outside}/escaped.txt; echo made it"
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, [term("sh", args=["-c", script], limit=1 << 30)])
    [init] = [c for c in calls(place.base / "member.jsonl") if c["event"] == "initialize"]
    assert init["terminal"] is True
    [created] = client.called("create_terminal")
    assert created["command"] == "env" and created["args"][:2] == ["-u", "OPENAI_API_KEY"]
    line = created["args"][2:]
    assert line[:2] == ["/bin/sh", "-c"] and line[4] == "bwrap" and "--unshare-net" in line
    assert line[-6] == "--" and line[-2:] == [SHELL, f"sh -c '{script}'"]  # one argument after bwrap's --
    assert created["cwd"] == str(place.work) and created["limit"] == CLIENT_OUTPUT_BYTES  # capped
    assert "TERM EXIT:0 OUTPUT:" in shown and "Read-only file system" in shown and "made it" in shown
    assert (place.work / "inside.txt").read_text() == "hi\n" and not (place.outside / "escaped.txt").exists()
    assert client.permission_requests == [] and client.terminals == {}  # released


@pytest.mark.parametrize("answer", ["reject_once", "allow_once"])
async def test_ask_mode_asks_the_editor_naming_the_member_first(crow_home, monkeypatch, answer):
    place = Place()
    client = EditorClient(permission=answer)
    shown = await run_member(crow_home, place, monkeypatch, client, [term("touch made")], mode="ask")
    [(question, options)] = client.permission_requests
    assert "outsider runs `touch made`" in question.title and "sandboxed: the workspace writable" in question.title
    assert "reject_once" in [o.option_id for o in options]
    if answer == "reject_once":
        assert "TERM REFUSED:" in shown and "The user rejected this tool call" in shown
        assert client.called("create_terminal") == [] and not (place.work / "made").exists()
    else:
        assert "TERM EXIT:0" in shown and (place.work / "made").exists()


async def test_plan_mode_runs_in_the_read_only_sandbox_without_asking(crow_home, monkeypatch):
    place = Place()
    (place.work / "tracked.txt").write_text("x")
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, [term("touch made"), term("ls")], mode="plan")
    assert "Read-only file system" in shown and not (place.work / "made").exists()
    assert "TERM EXIT:0 OUTPUT:tracked.txt" in shown
    assert client.permission_requests == [] and len(client.called("create_terminal")) == 2


@pytest.mark.parametrize("mode", ["plan", "auto"])
async def test_where_the_sandbox_cannot_run_plan_refuses_and_auto_asks(crow_home, monkeypatch, mode):
    """Nothing runs outside the sandbox without a question (but in full access): with the sandbox disabled, auto
    asks, saying the command would run outside it (rejected here: nothing runs); plan refuses unasked."""
    place = Place()
    client = EditorClient(permission="reject_once")
    off = "[sandbox]\nenabled = false\n"
    shown = await run_member(crow_home, place, monkeypatch, client, [term("touch made")], mode=mode, config=off)
    assert "TERM REFUSED:" in shown and client.called("create_terminal") == [] and not (place.work / "made").exists()
    if mode == "plan":
        assert "only in the read-only sandbox" in shown and client.permission_requests == []
    else:
        [(question, _)] = client.permission_requests
        assert "outside the sandbox: the sandbox is disabled" in question.title


async def test_without_bubblewrap_on_the_editors_machine_it_fails_visibly_then_asks(crow_home, monkeypatch):
    place = Place()
    bin_dir = place.base / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "touch", "echo"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    client = EditorClient(terminal_env={"PATH": str(bin_dir)}, permission="reject_once")
    words = [term("touch first"), term("touch second")]
    shown = await run_member(crow_home, place, monkeypatch, client, words)
    assert "TERM EXIT:125 OUTPUT:crow: bubblewrap (bwrap) is not installed on this machine" in shown
    assert len(client.called("create_terminal")) == 1 and not (place.work / "first").exists()
    [(question, _)] = client.permission_requests  # the second asked, saying it would run outside the sandbox
    assert "touch second" in question.title and "outside the sandbox: the editor's machine cannot" in question.title


@pytest.mark.parametrize("mode", ["ask", "accept_edits", "auto", "plan", "full_access"])
async def test_a_deny_rule_refuses_the_members_command_in_every_mode(crow_home, monkeypatch, mode):
    place = Place()
    client = EditorClient()
    rule = '[permissions.tools]\nrun_command = "deny"\n'
    shown = await run_member(crow_home, place, monkeypatch, client, [term("ls")], mode=mode, config=rule)
    assert "TERM REFUSED:" in shown and "denied by the permission policy" in shown
    assert client.called("create_terminal") == [] and client.permission_requests == []


async def test_full_access_runs_it_outside_the_sandbox_unasked_as_crows_own(crow_home, monkeypatch):
    place = Place()
    client = EditorClient()
    target = place.outside / "written.txt"
    shown = await run_member(crow_home, place, monkeypatch, client, [term(f"echo x > {target}")], mode="full_access")
    [created] = client.called("create_terminal")
    assert "bwrap" not in created["args"] and created["args"][-3:] == [SHELL, "-c", f"echo x > {target}"]
    assert "TERM EXIT:0" in shown and target.exists() and client.permission_requests == []


async def test_a_member_reaches_only_terminals_it_created(crow_home, monkeypatch):
    """Another's terminal in the editor (here one the editor made for someone else) and a made-up id are refused."""
    place = Place()
    client = EditorClient()
    await client.create_terminal(session_id="someone-else", command="echo", args=["SECRET OUTPUT"])
    [other] = client.terminals
    words = [f"TERMPEEK {other}", "TERMPEEK term-999", term("echo mine")]
    shown = await run_member(crow_home, place, monkeypatch, client, words)
    await client.wait_for_terminal_exit(session_id="someone-else", terminal_id=other)
    await client.release_terminal(session_id="someone-else", terminal_id=other)
    assert shown.count("PEEK REFUSED:Invalid params") == 2 and "SECRET OUTPUT" not in shown
    assert "TERM EXIT:0 OUTPUT:mine" in shown  # its own terminal works
    assert {"terminal_id": other} not in client.called("terminal_output")


async def test_a_terminal_of_the_members_other_session_is_refused(crow_home, monkeypatch):
    """Two editor sessions, one member link: while session one's turn holds a terminal, session two's turn
    asks for its output with session two's id, and is refused."""
    place = Place()
    log = place.base / "member.jsonl"
    client = EditorClient()

    def coder(request: dict) -> Reply:
        if multi_support.last_user(request) == "first":
            return Reply(text="TERMLEAVE HANG")
        [held] = [c["terminal"] for c in calls(log) if c["event"] == "terminal"]
        return Reply(text=f"TERMPEEK {held}")

    (crow_home / "config.toml").write_text('[permissions]\ndefault_mode = "auto"\n')
    models = functions(coder=coder, reviewer=lambda request: Reply(text="ok"))
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    env = {"FOREIGN_LOG": str(log)}
    async with multi_support.in_process(
        client, "build_chain", crow_home, models, monkeypatch, env, EDITOR_CAPS
    ) as conn:
        one = (await conn.new_session(cwd=str(place.work), mcp_servers=[])).session_id
        two = (await conn.new_session(cwd=str(place.work), mcp_servers=[])).session_id
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: conn.prompt(session_id=one, prompt=[text("first")]))
                await client.wait_for(lambda c: "HANGING" in c.text())
                await conn.prompt(session_id=two, prompt=[text("second")])
                assert "PEEK REFUSED:Invalid params" in client.text() and len(client.terminals) == 1
                await conn.cancel(session_id=one)
    assert client.called("terminal_output") == [] and client.terminals == {}


async def test_a_seventeenth_live_terminal_is_refused(crow_home, monkeypatch):
    place = Place()
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, ["TERMS 17"])
    assert "MADE:16 REFUSED:" in shown and "has 16 terminals already" in shown
    assert len(client.called("create_terminal")) == 16 and client.terminals == {}


@pytest.mark.parametrize("end", ["CRASH", "HANG"])
async def test_a_member_that_crashes_or_is_cancelled_leaves_no_terminal_in_the_editor(crow_home, monkeypatch, end):
    place = Place()
    client = EditorClient()
    (crow_home / "config.toml").write_text('[permissions]\ndefault_mode = "auto"\n')
    models = functions(coder=[Reply(text=f"TERMLEAVE {end}")], reviewer=lambda request: Reply(text="ok"))
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    log = place.base / "member.jsonl"
    env = {"FOREIGN_LOG": str(log)}
    async with multi_support.in_process(
        client, "build_chain", crow_home, models, monkeypatch, env, EDITOR_CAPS
    ) as conn:
        sid = (await conn.new_session(cwd=str(place.work), mcp_servers=[])).session_id
        with anyio.fail_after(60):
            if end == "CRASH":
                with pytest.raises(RequestError, match="member outsider failed: exited with status 3"):
                    await conn.prompt(session_id=sid, prompt=[text("go")])
            else:
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: conn.prompt(session_id=sid, prompt=[text("go")]))
                    await client.wait_for(lambda c: "HANGING" in c.text())
                    assert len(client.terminals) == 1  # live while the turn runs
                    await conn.cancel(session_id=sid)
        [left] = [c["terminal"] for c in calls(log) if c["event"] == "terminal"]
        assert client.terminals == {}  # before the link or crow ends: the turn's end did it
    assert {"terminal_id": left} in client.called("kill_terminal")
    assert {"terminal_id": left} in client.called("release_terminal")


@pytest.mark.parametrize("where", ["/etc", "../outside", "link"])
async def test_a_cwd_outside_the_roots_is_refused(crow_home, monkeypatch, where):
    place = Place()
    (place.work / "link").symlink_to(place.outside)
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, [term("ls", cwd=where)])
    assert "TERM REFUSED:Invalid params" in shown and "outside the workspace" in shown
    assert client.called("create_terminal") == []


async def test_the_members_env_reaches_only_the_sandboxed_command(crow_home, monkeypatch):
    """PATH, LD_PRELOAD and BASH_ENV never reach the prelude or bwrap (a fake `env` and `bwrap` first on the
    PATH, a BASH_ENV script: each would write outside the roots); inside the sandbox they are the member's."""
    place = Place()
    evil = place.base / "evil"
    evil.mkdir()
    marker = place.outside / "pwned"
    for name in ("env", "bwrap", "sh", "bash"):
        (evil / name).write_text(f"#!/bin/sh\necho {name} > {marker}\n")
        (evil / name).chmod(0o755)
    env = {"PATH": f"{evil}:/usr/bin:/bin", "LD_PRELOAD": str(evil / "x.so"), "BASH_ENV": str(evil / "sh")}
    words = [term("echo $PATH; echo $GREETING", env={**env, "GREETING": "it's $(date)"}), term("echo", args=["$(id)"])]
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, words)
    assert not marker.exists()
    assert f"TERM EXIT:0 OUTPUT:{evil}:/usr/bin:/bin\nit's $(date)" in shown  # passed on, as data
    assert "TERM EXIT:0 OUTPUT:$(id)" in shown  # an argument is never parsed by a shell
    assert all(c["args"][2] == "/bin/sh" for c in client.called("create_terminal"))


@pytest.mark.parametrize("name", ["--crow-bind", "A=B", "BAD NAME"])
async def test_an_env_name_that_is_no_shell_identifier_is_refused(crow_home, monkeypatch, name):
    place = Place()
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, [term("ls", env={name: "/"})])
    assert "TERM REFUSED:Invalid params" in shown and client.called("create_terminal") == []


async def test_without_the_editors_terminal_the_member_is_not_offered_one(crow_home, monkeypatch):
    place = Place()
    client = EditorClient()
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    shown = await run_member(crow_home, place, monkeypatch, client, [term("ls")], caps=caps)
    [init] = [c for c in calls(place.base / "member.jsonl") if c["event"] == "initialize"]
    assert init["terminal"] is False
    assert "TERM REFUSED:Method not found" in shown and client.called("create_terminal") == []


async def test_a_foreign_delegate_helpers_command_runs_sandboxed_too(tmp_path):
    """The `delegate` tool's helper from [agents.NAME] (crow acp over stdio, the editor a real client): its
    terminal/create reaches the editor for the parent's session, as the same sandboxed line."""
    import sys

    from support.editor_support import drive, results

    from crow_acp.testing import ToolCall

    place = Place()
    home = tmp_path / "home"
    home.mkdir()
    member = json.dumps([sys.executable, str(GRAPHS.with_name("foreign_acp_agent.py"))])
    (home / "config.toml").write_text(
        '[delegate]\nenabled = true\nagents = ["crow", "helper"]\n[permissions]\ndefault_mode = "auto"\n'
        f"[agents.helper]\ncommand = {member}\n"
    )
    task = term("touch made; touch ../outside/escaped; echo helped")
    client = EditorClient()
    call = ToolCall("delegate", {"task": task, "agent": "helper"}, id="call_d")
    _, model = await drive(client, tmp_path, place.work, [call], capabilities=EDITOR_CAPS)
    [created] = client.called("create_terminal")
    line = created["args"][2:]
    assert line[4] == "bwrap" and line[-6] == "--" and line[-1].startswith("touch made;")
    assert "TERM EXIT:0 OUTPUT:" in results(model)["call_d"] and "helped" in results(model)["call_d"]
    assert (place.work / "made").exists() and not (place.outside / "escaped").exists()
    assert client.permission_requests == [] and client.terminals == {}


async def test_a_members_tool_call_shows_only_terminals_it_made(crow_home, monkeypatch):
    """A terminal id the member did not make (crow's own command's, another session's) is dropped from its tool
    call: the editor would otherwise show that terminal's output under the member's call."""
    place = Place()
    client = EditorClient()
    shown = await run_member(crow_home, place, monkeypatch, client, ["TERMSHOW term-of-someone-else"])
    own = shown.split("SHOWN:")[1].split()[0]
    [call] = [u for u in client.of("tool_call") if u.tool_call_id.endswith("show")]
    assert [item.terminal_id for item in call.content if item.type == "terminal"] == [own]
