"""An MCP server for the redaction tests: it was handed a key ($LEAKED) and leaks it every way it can.

In tool text and structured content, in a tool error's message, in a resource, astride the point
where crow cuts a long result, and on its stderr (which `crow run` copies to crow.log)."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(read_only_hint=True)
KEY = os.environ["LEAKED"]
CUT = 100_000
"""crow_acp.mcp.tool.MAX_RESULT_CHARS: a result longer than this is cut here."""

server = MCPServer("leaky")


class Leak(BaseModel):
    key: str
    url: str


@server.tool(annotations=READ_ONLY, structured_output=True)
def leak() -> Leak:
    """The key, as text and as structured content."""
    return Leak(key=KEY, url=f"https://api.example/v1?key={KEY}")


@server.tool(annotations=READ_ONLY)
def long_leak() -> str:
    """A result crow cuts right in the middle of the key."""
    return "x" * (CUT - len(KEY) // 2) + KEY + "y" * 1000


@server.tool(annotations=READ_ONLY)
def fail_leak() -> str:
    """An error whose message holds the key."""
    raise ToolError(f"could not reach https://api.example/v1?key={KEY}")


@server.resource("leak://secret", mime_type="text/plain")
def secret() -> str:
    """A resource holding the key."""
    return f"the key is {KEY}"


if __name__ == "__main__":
    print(f"leaky server starting with key {KEY}", file=sys.stderr, flush=True)
    server.run()
