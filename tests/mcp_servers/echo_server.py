"""A small MCP server for the tests: stdio by default, `--http PORT` or `--sse PORT` on 127.0.0.1."""

from __future__ import annotations

import argparse
import base64
import os

import anyio
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents, ToolAnnotations
from pydantic import BaseModel

# A 1x1 transparent PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
READ_ONLY = ToolAnnotations(read_only_hint=True)

server = MCPServer("echo")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g}s"


@server.tool()
def fail() -> str:
    """Always raises; the server turns it into an isError result."""
    raise ToolError("the fail tool failed on purpose")


@server.tool(annotations=READ_ONLY)
def image() -> Image:
    """A tiny PNG."""
    return Image(data=PIXEL, format="png")


@server.tool(annotations=READ_ONLY)
def resources() -> list[TextContent | EmbeddedResource | ResourceLink]:
    """A text block, an embedded text resource and a resource link."""
    return [
        TextContent(type="text", text="two resources follow"),
        EmbeddedResource(
            type="resource", resource=TextResourceContents(uri="memo://notes", mime_type="text/plain", text="NOTE BODY")
        ),
        ResourceLink(type="resource_link", name="readme", uri="file:///srv/README.md", mime_type="text/markdown"),
    ]


@server.tool(annotations=READ_ONLY, structured_output=True)
def structured() -> Weather:
    """Structured output only."""
    return Weather(city="Oslo", celsius=-3.5)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (not read-only, so permission policy applies)."""
    return a + b


@server.tool()
def crash() -> str:
    """Kill the server process mid-call: a server that dies after it started."""
    os._exit(3)


def main() -> None:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--http", type=int, metavar="PORT")
    group.add_argument("--sse", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    elif args.sse:
        server.run("sse", host="127.0.0.1", port=args.sse)
    else:
        server.run()


if __name__ == "__main__":
    main()
