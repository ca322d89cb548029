"""An MCP tool as a crow Tool, and an MCP tool result as text (and images) for the model."""

from __future__ import annotations

import json
from typing import Any, Protocol

from ..api import ToolContext
from ..errors import McpError
from ..events import ToolResult, ToolView
from ..telemetry import gen_ai, spans
from ..tools import infer_kind, safe_name
from ..util.secrets import redact
from .elicit import CallScope
from .specs import ServerSpec

MAX_RESULT_CHARS = 100_000
MAX_DESCRIPTION_CHARS = 8_000


class ServerUnavailable(McpError):
    """The server is not connected (failed to start, died, or closed)."""


class ToolServer(Protocol):
    """What a tool needs of its server (host.McpServer): its name, its calls, and a restart after it died."""

    spec: ServerSpec
    error: str | None

    @property
    def restartable(self) -> bool: ...
    async def restart(self) -> bool: ...
    async def call(self, tool: str, arguments: dict[str, Any], scope: CallScope | None = None) -> Any: ...


class McpTool:
    """An MCP tool as a crow Tool."""

    timeout: float | None = None  # the server's call timeout applies

    def __init__(self, server: ToolServer, tool: Any) -> None:
        self.server = server
        self.remote_name = tool.name
        self.name = safe_name(server.spec.name, tool.name)
        self.description = (tool.description or "")[:MAX_DESCRIPTION_CHARS]  # every request carries it
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
        from pydantic import ValidationError

        from .inbox import malformed

        if self.server.restartable:  # it died since the last call: this is its next use
            await _restart(self.server, context)
        scope = CallScope(context.call_id, timer=context.timer)
        try:
            with gen_ai.mcp_call(self.server.spec.name, self.remote_name) if spans.on else spans.OFF:
                result = await self.server.call(self.remote_name, arguments, scope)
        except (MCPError, ServerUnavailable, RuntimeError, OSError) as exc:
            return ToolResult(text=with_notes(f"Tool error: {exc}", scope), is_error=True)
        except ValidationError as exc:  # the SDK checks the result's shape (and its output schema) after the wire
            return ToolResult(text=with_notes(f"Tool error: {malformed(exc)}", scope), is_error=True)
        text = with_notes(result_text(result), scope)
        images = [(b.mime_type, b.data) for b in result.content if b.type == "image"]
        return ToolResult(text=text, is_error=result.is_error, raw_output=result.structured_content, images=images)


def with_notes(text: str, scope: CallScope) -> str:
    """The result, and what happened to the server's questions meanwhile (the model must know why it ended so)."""
    return "\n".join([text, *scope.notes])


async def _restart(server: ToolServer, context: ToolContext) -> None:
    """Restart a stdio server that died (once per server), and tell the user either way (as notices to a
    client that takes them, else as a tool call)."""
    name = server.spec.name
    report = context.session.report
    activity = await report(f"Restarting MCP server {name!r}", status="in_progress", notice="info")
    if await server.restart():
        await report(f"Restarted MCP server {name!r}", activity_id=activity, notice="info")
    else:
        title = f"MCP server {name!r} did not restart"
        await report(title, status="failed", text=server.error, activity_id=activity, notice="error")


def result_text(result: Any) -> str:
    """An MCP CallToolResult as text for the model: text blocks, else structured content; binaries summarized."""
    parts = [_block_text(block) for block in result.content]
    if not any(block.type == "text" for block in result.content) and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(part for part in parts if part) or "(the tool returned no output)"
    if result.is_error:
        text = f"Tool error: {text}"
    text = redact(text)  # before the cut, which could leave part of a key
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... truncated {len(text) - MAX_RESULT_CHARS} characters]"
    return text


def _block_text(block: Any) -> str:
    from mcp.types import TextResourceContents  # loaded already: a result came through the client

    match block.type:
        case "text":
            return block.text
        case "image" | "audio":
            return f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
        case "resource_link":
            return f"[resource link: {block.name} {block.uri} {block.mime_type or ''}]".replace(" ]", "]")
        case "resource":
            res = block.resource
            if isinstance(res, TextResourceContents):
                return f"[resource {res.uri}]\n{res.text}"
            return f"[binary resource {res.uri} {res.mime_type or ''}, {len(res.blob) * 3 // 4} bytes]"
    return f"[{block.type} content]"
