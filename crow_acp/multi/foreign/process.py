"""A stdio member's process: started under the MCP guard, so that it dies with crow.

The guard (mcp/guard.py) runs in a process group of its own and forks the agent into it; when crow
dies in any way, or the agent exits, the whole group is killed. Its stdout reaches crow through the
guard's relay (repaired, an oversized line dropped), then through StrictWire. Its stderr goes to
crow.log, line by line, cut to LOG_LINE characters and LOG_TOTAL bytes in all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from ...acp.wire import READ_PIECE
from ...mcp.stdio import GUARD, resolve
from ...util.secrets import child_env
from .wire import StrictWire

log = logging.getLogger(__name__)
LOG_LINE = 2000
LOG_TOTAL = 1 << 20
STOP_WAIT = 2.0


@dataclass(eq=False)
class MemberProcess:
    name: str
    process: asyncio.subprocess.Process
    wire: StrictWire
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @classmethod
    async def start(cls, name: str, command: list[str], env: dict[str, str], cwd: str) -> MemberProcess:
        """FileNotFoundError when the command is not found (a clear reason for the node)."""
        merged = child_env(None, env)
        executable = resolve(command[0], cwd, merged.get("PATH"))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", GUARD, str(os.getpid()), executable, *command[1:],
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=merged, cwd=cwd, start_new_session=True, limit=READ_PIECE,
        )  # fmt: skip
        assert process.stdout is not None and process.stdin is not None
        started = cls(name, process, StrictWire(process.stdout, process.stdin))
        task = asyncio.create_task(_log_stderr(name, process.stderr))
        started.tasks.add(task)
        return started

    def exit_reason(self) -> str | None:
        code = self.process.returncode
        if code is None:
            return None
        return f"exited with status {code}" if code >= 0 else f"was killed by signal {-code}"

    async def stop(self) -> None:
        """Close its stdin, give it STOP_WAIT seconds, then kill its whole group."""
        await self.wire.close()
        try:
            await asyncio.wait_for(self.process.wait(), STOP_WAIT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()
        for task in self.tasks:
            task.cancel()


async def _log_stderr(name: str, stderr: asyncio.StreamReader | None) -> None:
    """Its stderr into crow.log, bounded; the rest is read and dropped so that it never blocks on a full pipe."""
    if stderr is None:
        return
    logged, pending = 0, b""
    while chunk := await stderr.read(1 << 16):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        pending = pending[-LOG_LINE:]
        for line in lines:
            if logged < LOG_TOTAL:
                text = line.decode("utf-8", "replace")[:LOG_LINE]
                logged += len(text)
                log.info("member %s stderr: %s", name, text)
                if logged >= LOG_TOTAL:
                    log.warning("member %s: its stderr is past %d bytes; the rest is not logged", name, LOG_TOTAL)
