"""What an MCP server offers (tools, prompts, resources), listed at start and again on list_changed.

A mixin of McpServer: these methods run inside the server's actor task.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .specs import ServerSpec
from .tool import McpTool

if TYPE_CHECKING:
    import mcp.types

log = logging.getLogger(__name__)
MAX_TOOLS = 128
"""Tools offered from one server: every model request carries them all, and OpenAI refuses more than 128."""
MAX_PAGES = 100


class ServerLists:
    spec: ServerSpec
    call_timeout: float
    tools: list[McpTool]
    prompts: list[Any]
    resources: set[str]
    _changed: Callable[[], None]
    """Tells the server's listener that a list changed (McpServer.on_change)."""
    _client: Any
    _calls: asyncio.TaskGroup | None
    _refreshes: set[asyncio.Task[None]]
    _listing: asyncio.Lock

    async def _list_all(self) -> None:
        """Tools, prompts and resources; a server without prompts or resources just has none."""
        self.tools = await self._list_tools()
        client = self._client
        if client.server_capabilities.prompts:
            self.prompts = await self._listed("prompts/list", client.list_prompts, lambda page: page.prompts)
        if client.server_capabilities.resources:
            listed = await self._listed("resources/list", client.list_resources, lambda page: page.resources)
            self.resources = {str(r.uri) for r in listed}

    async def _listed(
        self, method: str, list_page: Callable[..., Awaitable[Any]], items: Callable[[Any], list[Any]]
    ) -> list[Any]:
        """Every page of an optional list, at most MAX_PAGES (a server whose cursor never ends still starts)."""
        from mcp import MCPError

        found: list[Any] = []
        cursor = None
        try:
            for _ in range(MAX_PAGES):
                page = await list_page(cursor=cursor, cache_mode="refresh")
                found += items(page)
                if not (cursor := page.next_cursor):
                    return found
            log.warning(
                "MCP server %r: %s still had more after %d pages; crow keeps those", self.spec.name, method, MAX_PAGES
            )
        except (MCPError, TimeoutError, ValueError) as exc:  # an optional list (ValueError: a malformed one)
            log.warning("MCP server %r: %s failed: %s", self.spec.name, method, exc)
        return found

    async def _list_tools(self) -> list[McpTool]:
        tools, cursor = [], None
        for _ in range(MAX_PAGES):  # a server whose cursor never ends still starts
            page = await self._client.list_tools(cursor=cursor, cache_mode="refresh")
            tools += [t for t in page.tools if _callable(t)]
            if not (cursor := page.next_cursor) or len(tools) >= MAX_TOOLS:
                break
        if len(tools) > MAX_TOOLS:
            log.warning("MCP server %r lists %d tools; crow offers the first %d", self.spec.name, len(tools), MAX_TOOLS)
        return [McpTool(self, tool) for tool in tools[:MAX_TOOLS]]  # type: ignore[arg-type]

    async def _on_message(self, message: Any) -> None:
        """notifications/*/list_changed: list again in the background; the next model call waits for it."""
        from mcp import types

        changes = (
            types.ToolListChangedNotification,
            types.PromptListChangedNotification,
            types.ResourceListChangedNotification,
        )
        # One listing runs and at most one waits: a flood of notifications costs two listings, not one each.
        if isinstance(message, changes) and self._calls is not None and len(self._refreshes) < 2:
            task = self._calls.create_task(self._refresh())
            self._refreshes.add(task)
            task.add_done_callback(self._refreshes.discard)

    async def _refresh(self) -> None:
        from mcp import MCPError

        try:
            async with self._listing:  # the waiting one lists after the running one, and sees every change
                await self._list_all()
        except (MCPError, TimeoutError, OSError, ValueError) as exc:  # the old lists stay (ValueError: malformed)
            log.warning("MCP server %r: listing after a change failed: %s", self.spec.name, exc)
        self._changed()

    async def _listen(self) -> None:
        """Open the 2026-07-28 change stream (older servers send their notifications unasked)."""
        from mcp import MCPError

        try:
            async with self._client.listen(tools_list_changed=True, prompts_list_changed=True) as events:
                async for _ in events:  # each event also reaches _on_message
                    pass
        except (MCPError, TimeoutError, RuntimeError, OSError) as exc:  # not offered: no live updates, still usable
            log.debug("MCP server %r: no change stream: %s", self.spec.name, exc)
        except Exception as exc:  # the SDK's ListenNotSupportedError / SubscriptionLost have no common base
            log.debug("MCP server %r: no change stream: %s", self.spec.name, exc)

    async def settled(self) -> None:
        """Wait for list refreshes in flight (a list_changed just before a model call)."""
        if self._refreshes:
            await asyncio.wait(set(self._refreshes), timeout=self.call_timeout)


def _callable(tool: mcp.types.Tool) -> bool:
    # The 2.x client dropped task support, so task-only tools would always fail.
    return tool.execution is None or tool.execution.task_support != "required"
