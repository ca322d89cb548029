"""Local commands' process groups: nothing crow started outlives it, even a SIGKILL of crow.

Each command runs in its own process group (`sh -c` has grandchildren, and a parent-death signal
would reach only the direct child). Beside it runs a tiny watchdog, `sh` in a session of its own,
reading a pipe that only crow holds: when crow exits for any reason the kernel closes the pipe,
the watchdog reads end-of-file and kills the whole group. A command that ends normally tells its
watchdog "done" after crow killed the group itself.

`kill_running_commands()` is for crow's own shutdown path: it kills every running group now.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal

log = logging.getLogger(__name__)

WATCHDOG = 'read line; [ "$line" = done ] || exec env kill -KILL -- "-$1" 2>/dev/null'
"""$1 is the process group. `read` fails at end-of-file with an empty line: crow is gone. The kill
binary, not the shell's builtin: dash's cannot signal a process group."""

_running: dict[int, asyncio.subprocess.Process] = {}
"""Process group id -> its leader, for every local command now running."""


class Guarded:
    """One command's process group and its watchdog; `end()` kills the group and stands the watchdog down."""

    def __init__(self, process: asyncio.subprocess.Process, watchdog: asyncio.subprocess.Process | None) -> None:
        self.process, self.watchdog = process, watchdog
        _running[process.pid] = process

    def kill(self) -> None:
        kill_group(self.process.pid)

    async def end(self) -> None:
        self.kill()  # also background jobs it started, as closing an editor terminal would
        _running.pop(self.process.pid, None)
        if self.watchdog is not None and self.watchdog.stdin is not None:
            try:
                self.watchdog.stdin.write(b"done\n")
                self.watchdog.stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the watchdog is already gone (someone killed it): nothing left to stand down
            try:
                await asyncio.wait_for(self.watchdog.wait(), 5)
            except TimeoutError:
                self.watchdog.kill()


async def start(*command: str, cwd: str, env: dict[str, str]) -> Guarded:
    """Start a command in its own process group, with its watchdog armed."""
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        watchdog = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", WATCHDOG, "crow-watchdog", str(process.pid),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to crow's terminal group must not take the watchdog first
        )  # fmt: skip
    except OSError as exc:  # no /bin/sh: the command still runs, killed on timeout and shutdown
        log.warning("no watchdog for command %d: %s", process.pid, exc)
        watchdog = None
    except BaseException:
        kill_group(process.pid)
        raise
    return Guarded(process, watchdog)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def kill_running_commands() -> int:
    """Kill the process group of every local command now running; returns how many there were."""
    groups = list(_running)
    for pgid in groups:
        kill_group(pgid)
    return len(groups)
