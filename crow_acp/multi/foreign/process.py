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
import re
import signal
import sys
from dataclasses import dataclass, field

from ...acp.rpc.wire import READ_PIECE
from ...mcp.stdio import GUARD, resolve
from ...util.secrets import child_env
from .wire import StrictWire

log = logging.getLogger(__name__)
LOG_LINE = 2000
LOG_TOTAL = 1 << 20
STOP_WAIT = 2.0
GUARD_REPORT = re.compile(rb"crow: the MCP server .* ((?:exited with status|was killed by signal) -?\d+)$")
"""The line mcp/guard.py writes when the agent it started ended."""


@dataclass(eq=False)
class MemberProcess:
    name: str
    process: asyncio.subprocess.Process
    wire: StrictWire
    stderr: asyncio.Task[None] = field(init=False)
    last_words: list[str] = field(default_factory=list)
    """How the guard saw the agent end ("exited with status 3"), once it did."""

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
        started.stderr = asyncio.create_task(_log_stderr(name, process.stderr, started.last_words))
        return started

    async def exit_reason(self) -> str | None:
        """How the agent ended, as its guard reported it (the guard itself always ends by SIGKILL); None
        while it runs. Its stdout may close a moment before the guard's report: waited for, briefly."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.stderr), STOP_WAIT)
        return self.last_words[-1] if self.last_words else None

    async def stop(self) -> None:
        """Close its stdin, give it STOP_WAIT seconds, then kill its whole group."""
        await self.wire.close()
        try:
            await asyncio.wait_for(self.process.wait(), STOP_WAIT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()
        self.stderr.cancel()


async def _log_stderr(name: str, stderr: asyncio.StreamReader | None, last_words: list[str]) -> None:
    """Its stderr into crow.log, bounded; the rest is read and dropped so that it never blocks on a full pipe."""
    if stderr is None:
        return
    logged, pending = 0, b""
    while chunk := await stderr.read(1 << 16):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        pending = pending[-LOG_LINE:]
        for line in lines:
            if ended := GUARD_REPORT.match(line):
                last_words.append(ended.group(1).decode())
            if logged < LOG_TOTAL:
                text = line.decode("utf-8", "replace")[:LOG_LINE]
                logged += len(text)
                log.info("member %s stderr: %s", name, text)
                if logged >= LOG_TOTAL:
                    log.warning("member %s: its stderr is past %d bytes; the rest is not logged", name, LOG_TOTAL)
