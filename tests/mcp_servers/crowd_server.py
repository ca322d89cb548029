"""An MCP server that records how many of its tool calls ran at once (the most, into a file).

Each call waits until `cap` calls run together, or until the `total`-th call has started: so with
a cap in crow, every slot fills before anyone leaves (the most is exactly the cap), and without one
the calls pile up. No clock decides anything.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("crowd")
state = {"started": 0, "running": 0, "most": 0}
full = anyio.Event()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def crowd(total: int, cap: int, record: str) -> str:
    """Join the crowd; leave once it is `cap` strong or everyone has come."""
    global full
    state["started"] += 1
    state["running"] += 1
    state["most"] = max(state["most"], state["running"])
    Path(record).write_text(  # noqa: ASYNC240 (a few bytes, the test reads them after)
        f"{state['most']} {state['started']}"
    )
    if state["running"] >= cap or state["started"] >= total:
        full.set()
        full = anyio.Event()
    else:
        await full.wait()
    state["running"] -= 1
    return f"call {state['started']} done"


if __name__ == "__main__":
    server.run()
