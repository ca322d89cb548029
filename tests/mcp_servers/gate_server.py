"""An MCP server whose one tool waits until a file exists: a tool call the test ends when it chooses."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("gate")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def wait_for(path: str) -> str:
    """Answer once `path` exists."""
    gate = anyio.Path(path)
    while not await gate.exists():  # noqa: ASYNC110 (the test creates the file: no event to wait on)
        await anyio.sleep(0.02)
    return f"the gate at {path} opened"


if __name__ == "__main__":
    server.run()
