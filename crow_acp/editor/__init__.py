"""Editor-native tools: files and terminals through the ACP client, locally without one.

    callbacks = CrowCallbacks(begin_session=[editor_tools()])

registers read_file, write_file, edit_file, list_files, search_files and run_command in every
session. Edits go through the editor's `fs/write_text_file` (so Zed's review panel lists them) and
commands through `terminal/create` when the client advertises those capabilities; under
`crow run` or in-process use the same tools work on the local disk. Every path stays inside the
session cwd and its additional directories.

May import: crow_acp.api, plugin, tools, events, errors, util and config; never the core or the agent.

Also in this room:

    command_guard.py     The parent of every local command crow runs: when the command ends, nothing it started lives on
    common.py            What the editor tools share: client capability checks, output truncation, error results
    confined.py          Opening paths inside the workspace without races: openat, one component at a time
    file_tools.py        read_file, write_file and edit_file: the model's file tools over one workspace (files.py...
    files.py             Reading and writing a workspace file for the file tools (file_tools.py): through the...
    grep.py              search_files' matching: each file read through the confined opener, its lines matched by RE2
    plan_tool.py         write_plan: the model keeps a to-do list, which the editor shows as ACP `plan` updates
    paths.py             The workspace boundary: every path a tool touches lies inside the session's roots
    pids_cgroup.py       A pids cgroup per sandboxed command: a process-count limit for that command alone
    processes.py         Local commands: nothing a command starts outlives it, or crow, even a SIGKILL of crow
    sandbox.py           Local commands in a bubblewrap sandbox: what they may see, write and reach, and how much...
    sandbox_fs.py        What a sandboxed command sees of the file system besides its roots: private runtime...
    sandbox_start.py     Starting one local command in the sandbox: the roots opened once, protected paths and the...
    search.py            list_files and search_files: bounded, off the event loop, confined (ACP has no client...
    seccomp.py           The seccomp filter bwrap loads (`--seccomp FD`): no AF_UNIX socket inside the sandbox
    terminal.py          run_command: in an editor terminal embedded in the tool call, or in a local subprocess
    terminal_sandbox.py  The sandboxed command line crow sends to the editor's `terminal/create`, and what its...
    workspace_files.py   Files crow reads from the workspace by itself (AGENTS.md, CLAUDE.md, project skills), as...
"""

from __future__ import annotations

from typing import Any

from .paths import ToolError, Workspace

__all__ = ["EditorTools", "ToolError", "Workspace", "editor_tools"]


class EditorTools:
    """The begin_session callback: binds the tools to the session's workspace and offers them."""

    def __init__(self, include: frozenset[str] | None = None) -> None:
        self.include = include

    def tools(self, workspace: Workspace) -> list[Any]:
        from .file_tools import file_tools
        from .search import search_tools
        from .terminal import terminal_tools

        tools = [*file_tools(workspace), *search_tools(workspace), *terminal_tools(workspace)]
        return [tool for tool in tools if self.include is None or tool.name in self.include]

    async def __call__(self, session: Any, **_: Any) -> None:
        for tool in self.tools(Workspace.of(session.cwd, session.additional_directories)):
            session.add_tool(tool)


def editor_tools(include: list[str] | None = None) -> EditorTools:
    """The begin_session callback that offers the editor tools (all of them, or the named ones)."""
    return EditorTools(frozenset(include) if include is not None else None)
