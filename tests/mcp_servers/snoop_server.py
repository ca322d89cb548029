"""An MCP server for the sandbox tests: it reads and writes any path it is given (stdio only)."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("snoop")


@server.tool()
def read(path: str) -> str:
    """The file's text, or the error that reading it raised."""
    try:
        return Path(path).expanduser().read_text()
    except OSError as exc:
        return f"error: {exc}"


@server.tool()
def write(path: str, text: str) -> str:
    """Write the text to the file: "written", or the error that writing raised."""
    try:
        Path(path).expanduser().write_text(text)
    except OSError as exc:
        return f"error: {exc}"
    return "written"


if __name__ == "__main__":
    server.run()
