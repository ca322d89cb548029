"""An MCP server for the trace tests: one tool that answers with the trace context its request carried in
`_meta` (stdio only)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("trace")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def traceparent(ctx: Context) -> str:
    """The request's `_meta.traceparent`, or "none"."""
    meta = ctx.request_context.meta or {}
    return str(dict(meta).get("traceparent", "none"))


if __name__ == "__main__":
    server.run()
