"""MCP servers of one session: McpHost holds them, each an actor (server.py) in its own long-lived task.

A server that fails to start or dies later only loses its own tools.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ..tools import safe_name
from .elicit import Elicitor
from .server import McpServer
from .specs import ServerSpec, server_specs
from .tool import McpTool, ServerUnavailable

log = logging.getLogger(__name__)

__all__ = ["McpHost", "McpServer", "McpTool", "ServerSpec", "ServerUnavailable", "server_specs"]


class McpHost:
    """All MCP servers of a session."""

    def __init__(self, *, cwd: str, connect_timeout: float, call_timeout: float) -> None:
        self.cwd = cwd
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.servers: list[McpServer] = []
        self.on_change: Callable[[McpServer], Coroutine[Any, Any, None]] | None = None
        self.elicitor: Elicitor | None = None
        """Who asks the user the servers' questions (the session's editor); None: each is declined."""
        self._reported: set[tuple[int, int]] = set()

    @staticmethod
    def of(source: object) -> McpHost:
        """The McpHost a session was opened with (core types it as a ToolSource); fails loud otherwise."""
        if not isinstance(source, McpHost):
            raise TypeError(f"the session's tool source is a {type(source).__name__}, not an McpHost")
        return source

    def start(self, specs: list[ServerSpec]) -> None:
        """Start connecting every server in the background: a session opens without waiting for them."""
        for spec in specs:
            server = McpServer(spec, cwd=self.cwd, call_timeout=self.call_timeout, connect_timeout=self.connect_timeout)
            server.on_change = self._server_changed
            server.elicitations.elicitor = self.elicitor
            self.servers.append(server)
            server.start()

    async def connect(self, specs: list[ServerSpec]) -> None:
        """Connect every server concurrently and wait; failures are recorded on the server, never raised."""
        self.start(specs)
        await self.wait_connecting()

    def connecting(self) -> list[McpServer]:
        return [server for server in self.servers if server.status == "connecting"]

    async def wait_connecting(self) -> None:
        """Wait for the servers still starting, each up to its connect timeout."""
        await asyncio.gather(*(server.started() for server in self.connecting()))

    async def settle(self) -> None:
        """Wait for list refreshes in flight, so the next model call sees a changed tool list."""
        await asyncio.gather(*(server.settled() for server in self.servers))

    async def _server_changed(self, server: McpServer) -> None:
        if self.on_change is not None:
            await self.on_change(server)

    def tools(self) -> list[McpTool]:
        """Tools of the ready servers, and of a died server that its next call restarts."""
        tools = [
            tool for server in self.servers if server.status == "ready" or server.restartable for tool in server.tools
        ]
        unique_names(tools)
        return tools

    def unavailable(self, tool_name: str) -> str | None:
        """Why a tool of a failed server (no longer offered) cannot be called; None for any other name."""
        for server in self.failures():
            if any(tool.name == tool_name for tool in server.tools):
                return f"Tool error: MCP server {server.spec.name!r} is not available: {server.error}"
        return None

    def ready(self) -> list[McpServer]:
        return [server for server in self.servers if server.status == "ready"]

    def failures(self) -> list[McpServer]:
        return [server for server in self.servers if server.status == "failed"]

    def new_failures(self) -> list[McpServer]:
        """Failed servers not returned before: each failure (also after a restart) is shown to the user once."""
        fresh = [server for server in self.failures() if (id(server), server.restarts) not in self._reported]
        self._reported.update((id(server), server.restarts) for server in fresh)
        return fresh

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers))
        self.servers = []


def unique_names(tools: list[McpTool]) -> None:
    """Two servers' tools can sanitize to one name; later ones get a stable numbered name."""
    taken: set[str] = set()
    for tool in tools:
        if tool.name in taken:
            tool.name = safe_name(tool.server.spec.name, tool.remote_name, str(len(taken)))
        taken.add(tool.name)
