"""Local commands: nothing a command starts outlives it, or crow, even a SIGKILL of crow.

Each command runs below command_guard.py, a tiny process that is its parent and, on Linux, the
subreaper of everything it starts: background jobs, and daemons that left the command's process
group and session (`setsid`, double forks, `nohup`) all come back to it. The guard kills them all
when the command ends, when crow asks ("kill": a timeout, a cancel, shutdown), and when crow is
gone (its pipe from crow closes; the parent-death signal arrives). See command_guard.py.

`kill_running_commands()` is for crow's own shutdown path: it asks every guard to kill now.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

log = logging.getLogger(__name__)

GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "command_guard.py")
GUARD_LIMIT = 5.0
"""Seconds a guard gets to kill and reap its command's processes before crow kills the guard itself."""

_running: dict[int, Guarded] = {}
"""Guard pid -> its command, for every local command now running."""


class Guarded:
    """One command below its guard; `kill()` ends everything it started, `end()` also waits for that."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process  # the guard: its exit status is the command's
        _running[process.pid] = self

    def kill(self) -> None:
        """Ask the guard to kill the command and all it started (it exits once they are gone)."""
        stdin = self.process.stdin
        if self.process.returncode is not None or stdin is None or stdin.is_closing():
            return
        try:
            stdin.write(b"kill\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the guard is gone already: its end-of-file made it kill everything

    async def end(self) -> None:
        """Kill what is left and wait for the guard to finish; a guard that does not is killed."""
        self.kill()  # also background jobs it started, as closing an editor terminal would
        try:
            await asyncio.wait_for(self.process.wait(), GUARD_LIMIT)
        except TimeoutError:
            log.warning("the guard of command %d did not finish within %g s: killing it", self.process.pid, GUARD_LIMIT)
            self.process.kill()  # its command dies with it (a parent-death signal)
        finally:
            _running.pop(self.process.pid, None)
            if self.process.stdin is not None:
                self.process.stdin.close()


async def start(*command: str, cwd: str, env: dict[str, str], pass_fds: list[int] | None = None) -> Guarded:
    """Start a command below its guard; its output (stdout and stderr) is the guard's stdout pipe.
    `pass_fds` stay open (and inheritable) in the guard and so in the command (bwrap's bound roots)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", GUARD, str(os.getpid()), *command, cwd=cwd, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # a Ctrl-C to crow's terminal group must not take the guard first
        pass_fds=pass_fds or (),
    )  # fmt: skip
    return Guarded(process)


def kill_running_commands() -> int:
    """Ask the guard of every local command now running to kill it; returns how many there were."""
    running = list(_running.values())
    for guarded in running:
        guarded.kill()
    return len(running)
