"""Stdio MCP servers never outlive crow (issue 13 item 9): not when crow is SIGKILLed, and not when a
server ignores both its stdin closing and SIGTERM. What such a server started goes with it."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest
from support.helpers import TESTS, crow_env
from support.raw_wire import RawCrow, alive, descendants, eventually, raw_crow

from crow_acp.mcp.host import McpHost, ServerSpec
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
STUBBORN = TESTS / "mcp_servers" / "stubborn_server.py"


def stubborn(pidfile: Path) -> dict[str, object]:
    return {"name": "stubborn", "command": sys.executable, "args": [str(STUBBORN), str(pidfile)], "env": []}


def read_pids(pidfile: Path) -> set[int]:
    return {int(pid) for pid in pidfile.read_text().split()}


async def started(pidfile: Path) -> set[int]:
    """The stubborn server's pid and its grandchild's, once it has answered initialize."""
    await eventually(pidfile.exists, 60)
    pids = read_pids(pidfile)
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    return pids


async def test_a_stubborn_server_dies_with_crow_or_its_host(crow_home, tmp_path):
    """Crow SIGKILLed, its stdin closed, SIGTERMed, and the host closed inside a process that lives on:
    each with a server of its own, all at once (the orderly stops wait out the SDK's grace periods for a
    server that ignores EOF and SIGTERM: they overlap)."""
    hows = ("SIGKILL", "stdin closed", "SIGTERM", "host closed")
    for how in hows:
        (tmp_path / how).mkdir()
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with anyio.create_task_group() as group:
            for how in hows[:-1]:
                group.start_soon(dies_with_crow, crow_env(crow_home, model.base_url), tmp_path / how, how)
            group.start_soon(dies_with_its_host, tmp_path / hows[-1])


async def dies_with_crow(env: dict[str, str], work: Path, how: str) -> None:
    pidfile = work / "stubborn.pids"
    async with raw_crow(env) as crow:
        reply = await crow.call("session/new", {"cwd": str(work), "mcpServers": [stubborn(pidfile)]})
        assert "result" in reply, (how, reply)
        pids = await started(pidfile)
        everything = descendants(crow.proc.pid)  # the server, its grandchild (and crow's guard of it)
        assert pids <= everything, how
        await stop(crow, how)
    await eventually(lambda: not any(alive(pid) for pid in everything), 60)


async def stop(crow: RawCrow, how: str) -> None:
    if how == "SIGKILL":
        crow.signal(signal.SIGKILL)
        assert await crow.proc.wait() == -signal.SIGKILL
        return
    if how == "SIGTERM":
        crow.signal(signal.SIGTERM)
    else:
        assert crow.proc.stdin is not None
        crow.proc.stdin.close()
    assert await crow.drain_to_exit(60) == 0


async def dies_with_its_host(work: Path) -> None:
    """crow's orderly close itself ends the server: here crow (this test process) lives on, so the
    guard's watch on crow's death plays no part."""
    pidfile = work / "stubborn.pids"
    host = McpHost(cwd=str(work), connect_timeout=60, call_timeout=60)
    await host.connect([ServerSpec("stubborn", command=sys.executable, args=[str(STUBBORN), str(pidfile)])])
    assert [server.status for server in host.servers] == ["ready"]
    pids = await started(pidfile)
    await host.close()
    await eventually(lambda: not any(alive(pid) for pid in pids), 60)


async def test_a_missing_command_still_says_so(tmp_path):
    host = McpHost(cwd=str(tmp_path), connect_timeout=30, call_timeout=30)
    await host.connect([ServerSpec("gone", command="no-such-mcp-server-here"), ServerSpec("rel", command="./nope")])
    assert [server.error for server in host.servers] == [
        "command not found: no-such-mcp-server-here", "command not found: ./nope"
    ]  # fmt: skip
    await host.close()
