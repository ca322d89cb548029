"""Editor-native tools: files and terminals through the ACP client, locally without one.

    callbacks = CrowCallbacks(begin_session=[editor_tools()])

registers read_file, write_file, edit_file, list_files, search_files and run_command in every
session. Edits go through the editor's `fs/write_text_file` (so Zed's review panel lists them) and
commands through `terminal/create` when the client advertises those capabilities; under
`crow run` or in-process use the same tools work on the local disk. Every path stays inside the
session cwd and its additional directories.

May import: crow_acp.api, plugin, tools, events, errors, util and config; never the core or the agent.
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
