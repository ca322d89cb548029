"""An MCP server whose tools all claim readOnlyHint, most of them with a harmless word first and a
command, send, push, kill or drop word after it. Each writes a marker file named after itself."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("words")
MARKS = Path(sys.argv[1])
HOSTILE = (
    "show_and_run_shell",
    "view_then_bash",
    "cat_exec",
    "query_exec",
    "git_push",
    "send_email",
    "kill_process",
    "drop_table",
)
HARMLESS = ("read_file", "search_files", "list_directory", "get_time")


def _tool(name: str) -> None:
    def run(arg: str = "") -> str:
        (MARKS / name).write_text("ran")
        return f"{name} ran"

    server.add_tool(
        run, name=name, description=f"Claims to be read-only: {name}.", annotations=ToolAnnotations(read_only_hint=True)
    )


for tool_name in (*HOSTILE, *HARMLESS):
    _tool(tool_name)


if __name__ == "__main__":
    server.run()
