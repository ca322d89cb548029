"""Tools the model can call: plain function tools and name sanitizing (the Tool protocol is in api.py).

MCP tools (mcp_host.py) and crow's own tools (editor files and terminals, load_skill, plans)
all meet the same Protocol, so the loop treats them alike.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .events import ToolKind, ToolResult, ToolView
from .plugin.session import Tool, ToolContext

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str]]
Previewer = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult | str | None]]


@dataclass
class FunctionTool:
    """A tool backed by an async Python function returning a ToolResult or plain text."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    read_only: bool = False
    kind: ToolKind = "other"
    title: Callable[[dict[str, Any]], str] | None = None
    locations: Callable[[dict[str, Any]], tuple[str, ...]] | None = field(default=None, repr=False)
    timeout: float | None = None
    """Seconds the loop allows a call; None means the configured tool timeout."""
    previewer: Previewer | None = field(default=None, repr=False)
    """What a call would do (e.g. its diff), shown when asking permission."""
    sandboxed: bool = False
    """A local command tool: the permission policy decides its sandbox (ToolContext.sandbox)."""

    def view(self, arguments: dict[str, Any]) -> ToolView:
        try:
            title = self.title(arguments) if self.title else self.name
            locations = self.locations(arguments) if self.locations else ()
        except (KeyError, TypeError, ValueError):  # arguments the model got wrong: the call will say so
            title, locations = self.name, ()
        return ToolView(title=title, kind=self.kind, locations=locations)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        result = await self.handler(arguments, context)
        return result if isinstance(result, ToolResult) else ToolResult(text=str(result))

    async def preview(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
        if self.previewer is None:
            return None
        result = await self.previewer(arguments, context)
        return result if result is None or isinstance(result, ToolResult) else ToolResult(text=str(result))


def safe_name(*parts: str) -> str:
    """A valid, stable OpenAI function name for server/tool parts; long names keep a hash suffix."""
    name = "__".join(_UNSAFE.sub("_", part).strip("_") or "x" for part in parts)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1("\0".join(parts).encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def openai_schema(tool: Tool) -> dict[str, Any]:
    """The chat-completions `tools` entry; MCP schemas are fixed up for strict providers."""
    params = {k: v for k, v in (tool.parameters or {}).items() if k != "$schema"}
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description or tool.name, "parameters": params},
    }


def infer_kind(name: str) -> ToolKind:
    """Guess an ACP tool kind from a tool name, so the editor shows a fitting icon."""
    lowered = name.lower()
    for kind, words in _KIND_WORDS:
        if any(word in lowered for word in words):
            return kind
    return "other"


_KIND_WORDS: tuple[tuple[ToolKind, tuple[str, ...]], ...] = (
    ("delete", ("delete", "remove", "unlink")),
    ("move", ("move", "rename")),
    ("edit", ("write", "edit", "create", "update", "patch", "replace", "insert")),
    ("search", ("search", "find", "grep", "glob", "list", "query")),
    ("read", ("read", "get", "fetch_file", "cat", "show", "view")),
    ("execute", ("exec", "run", "command", "shell", "bash", "terminal")),
    ("fetch", ("fetch", "http", "url", "download", "browse")),
    ("think", ("think", "plan", "reason")),
)
