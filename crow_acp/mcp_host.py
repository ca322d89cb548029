"""MCP servers of one session: each connection lives in its own long-lived task (an actor).

A dying streamable-HTTP server cancels everything inside its client block, so no caller ever runs
inside one: calls are started in the actor's task group and answered through a future. A server
that fails to start or dies later only loses its own tools.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .events import ToolResult, ToolView
from .tools import ToolContext, infer_kind, safe_name

if TYPE_CHECKING:
    from .config import McpServerConfig

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 100_000
Status = Literal["connecting", "ready", "failed", "closed"]


@dataclass
class ServerSpec:
    """One MCP server to connect, from the editor's session/new or from config.toml."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    transport: Literal["stdio", "http", "sse"] = "stdio"
    headers: dict[str, str] = field(default_factory=dict)


def server_specs(editor_servers: list[Any], configured: dict[str, McpServerConfig]) -> list[ServerSpec]:
    """The editor's servers (ACP stdio, http or sse), then config.toml's, unless the editor has one by that name."""
    from .config import resolve_command

    specs = [_from_acp(server) for server in editor_servers]
    names = {spec.name for spec in specs}
    for name, server in configured.items():
        if server.enabled and name not in names:
            transport = "stdio" if server.command else server.transport
            command = resolve_command(server.command) if server.command else None
            specs.append(ServerSpec(name, command, server.args, server.env, server.url, transport, server.headers))
    return specs


def _from_acp(server: Any) -> ServerSpec:
    kind = getattr(server, "type", None) or "stdio"
    if kind == "stdio":
        env = {item.name: item.value for item in server.env or []}
        return ServerSpec(server.name, server.command, list(server.args or []), env)
    headers = {item.name: item.value for item in server.headers or []}
    return ServerSpec(server.name, url=server.url, transport=kind, headers=headers)


class ServerUnavailable(Exception):
    """The server is not connected (failed to start, died, or closed)."""


class McpServer:
    """One connection actor."""

    def __init__(self, spec: ServerSpec, *, cwd: str, call_timeout: float) -> None:
        self.spec = spec
        self.cwd = cwd
        self.call_timeout = call_timeout
        self.status: Status = "connecting"
        self.error: str | None = None
        self.tools: list[McpTool] = []
        self._client: Any = None
        self._calls: asyncio.TaskGroup | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def connect(self, timeout: float) -> None:
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.spec.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            self._fail(f"did not start within {timeout:g} s")
            self._task.cancel()

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                self._client = await stack.enter_async_context(await self._open_client(stack))
                self.tools = await self._list_tools()
                async with asyncio.TaskGroup() as calls:
                    self._calls = calls
                    self.status = "ready"
                    self._ready.set()
                    await self._closing.wait()
        except asyncio.CancelledError:
            self._closing.set()  # crow is shutting down: a close, not a failure
            raise
        except Exception as exc:  # top level of this server's task: any failure only loses this server
            self._fail(describe_failure(exc))
        finally:
            self._calls = self._client = None
            if self._closing.is_set() and self.status != "failed":  # a timed-out start stays failed
                self.status = "closed"
            else:
                self._fail("the server closed its connection")
            self._ready.set()

    def _fail(self, message: str) -> None:
        if self.status in ("connecting", "ready"):
            self.status, self.error = "failed", message
            log.warning("MCP server %r failed: %s", self.spec.name, message)

    async def _open_client(self, stack: AsyncExitStack) -> Any:
        from mcp import Client

        return Client(await self._transport(stack), read_timeout_seconds=self.call_timeout)

    async def _transport(self, stack: AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=spec.command or "", args=spec.args, env=spec.env or None, cwd=self.cwd)
            return stdio_client(params, errlog=sys.stderr)
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(spec.url or "", headers=spec.headers, timeout=30, sse_read_timeout=24 * 3600)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        timeout = httpx2.Timeout(30, read=self.call_timeout + 30)
        http = await stack.enter_async_context(create_mcp_http_client(headers=spec.headers, timeout=timeout))
        return streamable_http_client(spec.url or "", http_client=http)

    async def _list_tools(self) -> list[McpTool]:
        tools, cursor = [], None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            tools += [t for t in page.tools if _callable(t)]
            if not (cursor := page.next_cursor):
                return [McpTool(self, tool) for tool in tools]

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Run a call inside the actor; cancelling the caller cancels the call (MCP sends notifications/cancelled)."""
        if self.status != "ready" or self._calls is None:
            raise ServerUnavailable(f"MCP server {self.spec.name!r} is not available: {self.error or self.status}")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        task = self._calls.create_task(self._call(tool, arguments, future))
        try:
            return await future
        finally:
            task.cancel()

    async def _call(self, tool: str, arguments: dict[str, Any], future: asyncio.Future[Any]) -> None:
        try:
            future.set_result(await self._client.call_tool(tool, arguments))
        except Exception as exc:  # handed to the caller, never swallowed
            if _connection_lost(exc):
                # A stdio server that died leaves the client block open; end the actor so its tools go away.
                self._fail("the server closed its connection")
                self._closing.set()
            if not future.done():
                future.set_exception(exc)
        finally:
            if not future.done():
                future.set_exception(ServerUnavailable(f"MCP server {self.spec.name!r} went away during the call"))

    async def close(self) -> None:
        self._closing.set()
        if self._task and not self._task.done():
            # asyncio.wait, unlike awaiting the task, never raises: a start that timed out was cancelled.
            _, pending = await asyncio.wait({self._task}, timeout=5)
            for task in pending:
                task.cancel()


def _connection_lost(exc: Exception) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    # The SDK's own closed-connection error; a server may use -32000 for its errors too, hence the message.
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED and exc.message == "Connection closed"


def _callable(tool: Any) -> bool:
    # The 2.x client dropped task support, so task-only tools would always fail.
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) != "required"


class McpTool:
    """An MCP tool as a crow Tool."""

    timeout: float | None = None  # the server's call timeout applies

    def __init__(self, server: McpServer, tool: Any) -> None:
        self.server = server
        self.remote_name = tool.name
        self.name = safe_name(server.spec.name, tool.name)
        self.description = tool.description or ""
        self.parameters = dict(tool.input_schema or {})
        hints = tool.annotations
        self.read_only = bool(hints and hints.read_only_hint)
        self.display = tool.title or (hints.title if hints and hints.title else None) or tool.name

    def view(self, arguments: dict[str, Any]) -> ToolView:
        kind = "read" if self.read_only else infer_kind(self.remote_name)
        return ToolView(title=f"{self.display} ({self.server.spec.name})", kind=kind)

    async def preview(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
        return None  # an MCP server cannot say what a call would do

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        from mcp import MCPError

        try:
            result = await self.server.call(self.remote_name, arguments)
        except (MCPError, ServerUnavailable, RuntimeError, OSError) as exc:
            return ToolResult(text=f"Tool error: {exc}", is_error=True)
        text = result_text(result)
        return ToolResult(text=text, is_error=result.is_error, raw_output=result.structured_content)


def result_text(result: Any) -> str:
    """An MCP CallToolResult as text for the model: text blocks, else structured content; binaries summarized."""
    parts = [_block_text(block) for block in result.content]
    if not any(block.type == "text" for block in result.content) and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(part for part in parts if part) or "(the tool returned no output)"
    if result.is_error:
        text = f"Tool error: {text}"
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... truncated {len(text) - MAX_RESULT_CHARS} characters]"
    return text


def _block_text(block: Any) -> str:
    match block.type:
        case "text":
            return block.text
        case "image" | "audio":
            return f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
        case "resource_link":
            return f"[resource link: {block.name} {block.uri} {block.mime_type or ''}]".replace(" ]", "]")
        case "resource":
            res = block.resource
            if getattr(res, "text", None) is not None:
                return f"[resource {res.uri}]\n{res.text}"
            return f"[binary resource {res.uri} {res.mime_type or ''}, {len(res.blob) * 3 // 4} bytes]"
    return f"[{block.type} content]"


def describe_failure(exc: BaseException) -> str:
    """The innermost message of a (nested) ExceptionGroup, which is what connect failures raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class McpHost:
    """All MCP servers of a session."""

    def __init__(self, *, cwd: str, connect_timeout: float, call_timeout: float) -> None:
        self.cwd = cwd
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.servers: list[McpServer] = []
        self._reported: set[McpServer] = set()

    async def connect(self, specs: list[ServerSpec]) -> None:
        """Connect every server concurrently; failures are recorded on the server, never raised."""
        new = [McpServer(spec, cwd=self.cwd, call_timeout=self.call_timeout) for spec in specs]
        self.servers += new
        await asyncio.gather(*(server.connect(self.connect_timeout) for server in new))
        self._name_uniquely()

    def _name_uniquely(self) -> None:
        """Two servers' tools can sanitize to one name; later ones get a stable numbered name."""
        taken: set[str] = set()
        for tool in (tool for server in self.servers for tool in server.tools):
            if tool.name in taken:
                tool.name = safe_name(tool.server.spec.name, tool.remote_name, str(len(taken)))
            taken.add(tool.name)

    def tools(self) -> list[McpTool]:
        return [tool for server in self.servers if server.status == "ready" for tool in server.tools]

    def failures(self) -> list[McpServer]:
        return [server for server in self.servers if server.status == "failed"]

    def new_failures(self) -> list[McpServer]:
        """Failed servers not returned before: each failure is shown to the user once."""
        fresh = [server for server in self.failures() if server not in self._reported]
        self._reported.update(fresh)
        return fresh

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers))
        self.servers = []
