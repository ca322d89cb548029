"""The fork server (tests/support/forkserver.py) starts a crow the tests cannot tell from an exec'd one."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import anyio
import pytest
from support import spawn
from support.helpers import RecordingClient, crow_env, run_crow

pytestmark = pytest.mark.anyio


def open_fds(pid: int) -> list[str]:
    """What crow's fds point at, numbers and inode numbers left out: ['pipe', 'socket', '/path', ...]."""
    fds, targets = Path(f"/proc/{pid}/fd"), []
    for fd in os.listdir(fds):
        try:
            targets.append(re.sub(r":\[\d+\]$", "", os.readlink(fds / fd)))
        except FileNotFoundError:  # closed between the listing and the look: not settled yet anyway
            targets.append("(closed)")
    return sorted(targets)


async def settled_fds(pid: int) -> list[str]:
    """open_fds once ten readings over a second agree: a file crow reads right now (the CA bundle its model
    client loads in a thread, slow on a loaded machine) is not what we compare."""
    before, same = open_fds(pid), 0
    for _ in range(200):
        await anyio.sleep(0.1)
        now = open_fds(pid)
        same = same + 1 if now == before else 0
        if same == 10:
            return now
        before = now
    raise AssertionError(f"crow's open fds never settled: {before}")


def signal_dispositions(pid: int) -> list[str]:
    """Which signals crow blocks, ignores and catches."""
    return [
        line
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith(("SigBlk", "SigIgn", "SigCgt"))
    ]


@pytest.mark.skipif(spawn.EXEC_ALL, reason="CROW_TEST_EXEC=1: every crow is exec'd")
async def test_a_forked_crow_holds_what_an_execd_one_holds(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1", CROW_LOG_LEVEL="DEBUG")
    seen = {}
    for exec_ in (False, True):  # the same environment, cwd and arguments, forked then exec'd
        async with run_crow(RecordingClient(), env, cwd=str(work), exec_=exec_) as (conn, proc):
            await conn.new_session(cwd=str(work), mcp_servers=[])
            seen[exec_] = (
                await settled_fds(proc.pid),
                os.readlink(f"/proc/{proc.pid}/cwd"),
                os.getpgid(proc.pid),
                signal_dispositions(proc.pid),
            )
            assert isinstance(proc, spawn.ForkedProcess) != exec_
            proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
        log = tmp_path / "home" / "logs" / "crow.log"
        assert exec_ or " DEBUG " in log.read_text()  # the fork read CROW_HOME and CROW_LOG_LEVEL from its request
    assert seen[False] == seen[True]  # the same open files (the log under CROW_HOME among them), cwd, group, signals
    assert str(tmp_path / "home" / "logs" / "crow.log") in seen[False][0]
    assert seen[False][1] == str(work)
