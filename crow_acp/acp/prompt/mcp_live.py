"""A session's MCP servers as the editor sees them while they come and go.

Servers connect in the background (session/new does not wait); the first prompt waits for those
still starting and shows it as a "Connecting to MCP servers" step. When a server comes up or its
prompts change, the editor gets the new command list.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ...events import ActivityReported, CommandsChanged, NoticeRaised
from ...mcp.host import McpHost
from .mcp_prompts import prompt_commands

if TYPE_CHECKING:
    from ...api import SlashCommand
    from ...core.session import Session
    from ...mcp.host import McpServer

CONNECTING = "Connecting to MCP servers"


def attach(session: Session) -> None:
    """Tell the editor about the commands whenever a server comes up or changes its lists."""

    shown: list[tuple[str, str]] = []

    async def changed(server: McpServer) -> None:
        await report_failures(session)
        prompts = [(c.name, c.hint or "") for c in prompt_commands(session)]
        if prompts != shown:  # most servers have no prompts: nothing to tell
            shown[:] = prompts
            await session.emit(CommandsChanged(session.id, tuple(all_commands(session))))

    McpHost.of(session.mcp).on_change = changed


async def report_failures(session: Session) -> None:
    """Show each MCP server that failed to start or died later, once (as a notice to a client that takes
    them, else as a failed tool call); the session goes on without it."""
    for server in McpHost.of(session.mcp).new_failures():
        title = f"MCP server {server.spec.name!r} is unavailable"
        report = ActivityReported(session.id, f"mcp-{uuid.uuid4().hex[:8]}", title, "failed", "other", server.error)
        await session.emit(NoticeRaised(session.id, "warning", title, server.error, instead=report))


def all_commands(session: Session) -> list[SlashCommand]:
    return [*session.commands.values(), *prompt_commands(session)]


async def wait_for_servers(session: Session) -> None:
    """Wait for servers still starting (each up to its connect timeout), shown as one step; cancellable."""
    if not (waiting := McpHost.of(session.mcp).connecting()):
        return
    step = f"mcp-connect-{uuid.uuid4().hex[:8]}"
    names = ", ".join(server.spec.name for server in waiting)
    await session.emit(ActivityReported(session.id, step, CONNECTING, "in_progress", "other", f"Waiting for {names}"))
    with session.control.cancellable() as scope:  # session/cancel stops the wait
        await McpHost.of(session.mcp).wait_connecting()
    cancelled = scope.cancelled_caught
    ready = [server.spec.name for server in waiting if server.status == "ready"]
    status: Any = "completed" if len(ready) == len(waiting) else "failed"
    summary = f"Ready: {', '.join(ready) or 'none'}" + (f" (of {names})" if status == "failed" else "")
    if cancelled:
        summary = f"Cancelled; {summary[0].lower()}{summary[1:]}; the rest keep starting in the background"
    await session.emit(ActivityReported(session.id, step, CONNECTING, status, "other", summary))
