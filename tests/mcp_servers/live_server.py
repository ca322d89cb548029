"""An MCP server for the live-MCP tests (stdio): slow or gated start, tools that change, a crash,
prompts and resources.

    --gate FILE      do not start serving until FILE exists (a start the test controls)
    --delay SECONDS  sleep before serving (the benchmark's slow server)
    --hang           never serve at all
    --starts FILE    append a line to FILE at every start (so a test can count restarts)
"""

from __future__ import annotations

import argparse
import os
import select
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
server = MCPServer("live")


@server.tool(annotations=READ_ONLY)
def ping() -> str:
    """Answer pong with the process id."""
    return f"pong from {os.getpid()}"


def extra(text: str) -> str:
    """A tool that only exists after grow was called."""
    return f"extra: {text}"


@server.tool(annotations=READ_ONLY)
async def grow(ctx: Context) -> str:
    """Add the `extra` tool and tell the client that the tool list changed."""
    server.add_tool(extra, annotations=READ_ONLY)
    await ctx.notify_tools_changed()
    return "grown"


@server.tool(annotations=READ_ONLY)
def die() -> str:
    """Exit the process mid-call: a server that dies after it started."""
    os._exit(3)


@server.prompt()
def review(topic: str, tone: str = "plain") -> list:
    """Ask for a review of a topic."""
    return [
        UserMessage(f"Review {topic} in a {tone} tone."),
        AssistantMessage("Which parts first?"),
        UserMessage("All of it."),
    ]


@server.resource("memo://notes/today", mime_type="text/plain")
def notes() -> str:
    """Today's notes."""
    return "NOTES FROM THE LIVE SERVER"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gate")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--starts")
    args = parser.parse_args()
    if args.starts:
        with open(args.starts, "a") as starts:
            starts.write(f"{os.getpid()}\n")
    while args.hang or (args.gate and not Path(args.gate).exists()):
        if stdin_closed():  # crow gave up on it (closed it): what never started has nothing to finish
            return
        time.sleep(0.05)
    time.sleep(args.delay)
    server.run()


def stdin_closed() -> bool:
    """Whether the client closed our stdin, without reading what it sent (initialize waits there)."""
    poller = select.poll()
    poller.register(0, select.POLLHUP)
    return any(events & select.POLLHUP for _, events in poller.poll(0))


if __name__ == "__main__":
    main()
