"""Trust at the edges, permissions (issue 18): protected paths ask in every mode but full access, plan
mode refuses by denial words, "always" remembers one command in one set of roots, and a mode change
overtakes an open question. Driven over ACP (crow hosted in process, tests/support/hosted.py) against the
default agent and a real MCP server."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import McpServerStdio
from support import spawn
from support.helpers import TESTS, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow
from support.records import results

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
HOSTILE = (
    "show_and_run_shell",
    "view_then_bash",
    "cat_exec",
    "query_exec",
    "git_push",
    "send_email",
    "kill_process",
    "drop_table",
)
HARMLESS = ("read_file", "search_files", "list_directory", "get_time")


class AnsweringClient(RecordingClient):
    """Answers each permission request with the next of `answers`; `on_ask` runs before answering."""

    def __init__(self, answers: list[str], on_ask: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__()
        self.answers, self.on_ask = list(answers), on_ask

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        if self.on_ask is not None:
            await self.on_ask()
        self.permission = self.answers.pop(0)
        return await super().request_permission(session_id, tool_call, options, **kwargs)

    def titles(self) -> list[str]:
        return [tool_call.title for tool_call, _ in self.permission_requests]


def write(path: str, call_id: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": "[core]\n\tfsmonitor = touch PWNED\n"}, id=call_id)


def command(line: str, call_id: str) -> ToolCall:
    return ToolCall("run_command", {"command": line}, id=call_id)


def one_by_one(calls: list[ToolCall]) -> list[Reply]:
    return [*(Reply(tool_calls=[call]) for call in calls), Reply(text="done")]


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


async def test_plan_mode_refuses_tools_with_a_denial_word_whatever_comes_first(crow_home, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    server = McpServerStdio(
        name="words",
        command=spawn.python(),
        args=[str(TESTS / "mcp_servers" / "plan_words_server.py"), str(marks)],
        env=[],
    )
    names = [*HOSTILE, *HARMLESS]
    calls = [ToolCall(f"words__{name}", {"arg": "x"}, id=name) for name in names]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="planned")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
                await conn.set_session_mode(session_id=sid, mode_id="plan")
                assert (await conn.prompt(session_id=sid, prompt=[text("plan")])).stop_reason == "end_turn"
    told = results(model.requests[1])
    assert sorted(os.listdir(marks)) == sorted(HARMLESS)
    assert all(told[name].startswith(f"Plan mode: the tool 'words__{name}' has the word") for name in HOSTILE)
    assert all(told[name] == f"{name} ran" for name in HARMLESS)
    assert client.permission_requests == []


async def test_always_allows_one_exact_command_in_these_roots_only(crow_home, tmp_path):
    first, other = tmp_path / "first", tmp_path / "other"
    (first / "x").mkdir(parents=True)
    other.mkdir()
    calls = [
        command("echo hi", "always"),
        command("echo hi", "remembered"),
        command("rm -rf x", "rm"),
        command("echo hi; touch X", "compound"),
        command("echo hi && touch X", "and"),
        command("echo hi\ntouch X", "newline"),
        command("echo hi $(touch X)", "substitution"),
    ]
    client = AnsweringClient(["allow_always", *["reject_once"] * 5, "reject_once", "reject_once"])
    script = [
        *one_by_one(calls),
        *one_by_one([command("echo hi", "forked")]),
        *one_by_one([command("echo hi", "loaded")]),
    ]
    async with ScriptedModel(script) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(first)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(first), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("run")])).stop_reason == "end_turn"
                fork = (await conn.fork_session(session_id=sid, cwd=str(other), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=fork, prompt=[text("fork")])).stop_reason == "end_turn"
                await conn.load_session(session_id=sid, cwd=str(other), mcp_servers=[])
                assert (await conn.prompt(session_id=sid, prompt=[text("load")])).stop_reason == "end_turn"

    asked = [tool_call.tool_call_id for tool_call, _ in client.permission_requests]
    assert asked == ["always", "rm", "compound", "and", "newline", "substitution", "forked", "loaded"]
    labels = [option.name for option in client.permission_requests[0][1]]
    assert labels == ["Allow", "Always allow `echo hi`", "Run outside the sandbox", "Reject"]
    assert (first / "x").is_dir() and not (first / "X").exists()


async def test_a_mode_switch_to_plan_overtakes_an_open_question(crow_home, tmp_path):
    conn_box: list[Any] = []

    async def switch_to_plan() -> None:
        conn, sid = conn_box
        await conn.set_session_mode(session_id=sid, mode_id="plan")

    client = AnsweringClient(["allow_once"], on_ask=switch_to_plan)
    async with ScriptedModel(one_by_one([write("notes.txt", "late")])) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                conn_box[:] = [conn, sid]
                assert (await conn.prompt(session_id=sid, prompt=[text("write")])).stop_reason == "end_turn"
    assert [tool_call.tool_call_id for tool_call, _ in client.permission_requests] == ["late"]
    assert not (tmp_path / "notes.txt").exists()
    assert "The mode changed to plan while the question was open" in results(model.requests[-1])["late"]
