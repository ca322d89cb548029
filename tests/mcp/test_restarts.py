"""A long-running session's stdio MCP server: restarted after each death that follows a steady run,
never in a loop after deaths right after its start. Driven in process against the real live server."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from crow_acp.mcp import server as mcp_server
from crow_acp.mcp.host import McpServer, ServerSpec

pytestmark = pytest.mark.anyio
LIVE = Path(__file__).resolve().parents[1] / "mcp_servers" / "live_server.py"


async def kill_and_wait(server: McpServer) -> None:
    died = anyio.Event()

    async def changed(_: McpServer) -> None:
        died.set()

    server.on_change = changed  # told when the death is noticed
    with pytest.raises(Exception, match=r"exited during the call|closed|not available"):
        await server.call("die", {})
    with anyio.fail_after(60):
        await died.wait()
    assert server.status == "failed"


@pytest.mark.parametrize("steady", [False, True], ids=["crash-loop", "steady-runs"])
async def test_a_server_that_ran_steadily_is_restarted_after_each_death(tmp_path, monkeypatch, steady):
    if steady:  # every run counts as steady, as after ten minutes up
        monkeypatch.setattr(mcp_server, "STEADY_FOR", 0.0)
    starts = tmp_path / "starts"
    spec = ServerSpec("live", sys.executable, [str(LIVE), "--starts", str(starts)])
    server = McpServer(spec, cwd=str(tmp_path), call_timeout=60, connect_timeout=60)
    try:
        await server.connect()
        assert server.status == "ready"
        await kill_and_wait(server)
        assert server.restartable and await server.restart()  # the first death always earns a restart
        await kill_and_wait(server)
        assert server.restartable is steady
        assert await server.restart() is steady
        if steady:
            assert (await server.call("ping", {})).content[0].text.startswith("pong from")
        assert len(starts.read_text().split()) == (3 if steady else 2)
    finally:
        await server.close()
