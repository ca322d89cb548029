"""An MCP server for the secrets tests: it tells what its environment holds (stdio only)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("env")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def getenv(name: str) -> str:
    """The value of an environment variable, or (unset)."""
    return os.environ.get(name, "(unset)")


if __name__ == "__main__":
    server.run()
