"""Where a write would land (policy/write_targets.py) and the protected paths it is checked against: git
internals and configured paths ask in every mode but full access, through a symlink too, and the write tool
writes only the path the check saw. Driven over ACP (crow hosted in process, tests/support/hosted.py)
against the default agent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.answering import AnsweringClient, one_by_one, write
from support.helpers import crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def accept_edits_then_full_access(
    crow_home: Path, work: Path, calls: list[ToolCall], answers: int
) -> AnsweringClient:
    """The calls in accept-edits mode, each answered Reject, then a write of .git/description in full access."""
    client = AnsweringClient(["reject_once"] * answers)
    async with ScriptedModel([*one_by_one(calls), *one_by_one([write(".git/description", "full")])]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(work)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
                await conn.set_session_mode(session_id=sid, mode_id="accept_edits")
                assert (await conn.prompt(session_id=sid, prompt=[text("edit")])).stop_reason == "end_turn"
                await conn.set_session_mode(session_id=sid, mode_id="full_access")
                assert (await conn.prompt(session_id=sid, prompt=[text("now")])).stop_reason == "end_turn"
    assert all({o.kind for o in options} == {"allow_once", "reject_once"} for _, options in client.permission_requests)
    assert (work / ".git" / "description").exists()  # full access asks nothing
    return client


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    return work


async def test_git_internals_ask_in_accept_edits_even_through_a_symlink(crow_home, work):
    (work / "notgit").symlink_to(".git")
    asked_calls = [
        write(".git/config", "config"),
        write(".git/hooks/pre-commit", "hook"),
        write("notgit/config", "symlinked"),
        write("sub/../.GIT/info/exclude", "case"),
        write("sub/.git", "gitfile"),  # a .git file (gitdir: ...) is git internals too
        write(".hg/hgrc", "hg"),
    ]
    client = await accept_edits_then_full_access(
        crow_home, work, [*asked_calls, write("notes.txt", "plain")], len(asked_calls)
    )
    assert [tool_call.tool_call_id for tool_call, _ in client.permission_requests] == [c.id for c in asked_calls]
    assert client.titles()[:3] == [
        "Write .git/config (protected path: .git/config)",
        "Write .git/hooks/pre-commit (protected path: .git/hooks/pre-commit)",
        "Write notgit/config (protected path: .git/config)",  # the path the write would really open
    ]
    assert "protected path: .GIT/info/exclude" in client.titles()[3]
    assert (work / ".git" / "config").read_text() == "[core]\n" and not (
        work / ".git" / "hooks" / "pre-commit"
    ).exists()
    assert not (work / "sub").exists() and not (work / ".hg").exists() and (work / "notes.txt").exists()


async def test_configured_protected_paths_ask_despite_an_allow_rule(crow_home, work):
    write_config(
        crow_home,
        '[permissions]\nprotected = [".envrc", "deploy/*.key"]\n[permissions.tools]\n"write_file" = "allow"\n',
    )
    asked_calls = [write(".envrc", "envrc"), write("deploy/site.key", "configured"), write(".git/config", "git")]
    calls = [
        *asked_calls,
        write("deploy/readme", "plain"),
        write(".env", "unlisted"),
    ]  # .env: the list replaced the defaults
    client = await accept_edits_then_full_access(crow_home, work, calls, len(asked_calls))
    assert [tool_call.tool_call_id for tool_call, _ in client.permission_requests] == [c.id for c in asked_calls]
    assert client.titles()[1] == "Write deploy/site.key (protected path: deploy/site.key)"
    assert not (work / ".envrc").exists() and not (work / "deploy" / "site.key").exists()
    assert (work / "deploy" / "readme").exists() and (work / ".env").exists()


async def test_write_tool_refuses_a_path_the_check_did_not_see(tmp_path):
    """The check holds until the write: a symlink swapped in after it is not followed."""
    from crow_acp.api import ToolContext
    from crow_acp.editor.file_tools import file_tools
    from crow_acp.editor.paths import ToolError, Workspace

    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    (work / "dir").mkdir()
    ws = Workspace.of(str(work))
    write_file = next(tool for tool in file_tools(ws) if tool.name == "write_file")
    checked = ToolContext(session=None, call_id="c", write_targets=frozenset({str(work / "dir" / "config")}))  # type: ignore[arg-type]
    (work / "dir").rmdir()
    (work / "dir").symlink_to(".git")  # swapped after the check
    result = await write_file.call({"path": "dir/config", "content": "x"}, checked)
    assert result.is_error and "not the file the permission check saw" in result.text
    assert not (work / ".git" / "config").exists()
    with pytest.raises(ToolError, match="symbolic link appeared"):
        ws.confined.write(str(work / "dir" / "config"), b"x", follow=False)
    assert not (work / ".git" / "config").exists()
