"""The parent of every stdio MCP server crow starts: when crow is gone, the server's whole group dies.

    python -I -S mcp_guard.py CROW_PID EXECUTABLE [ARGS...]

The MCP SDK starts this script in a new session (process group), as it would start the server.
The script forks the server into that same group, then waits. The server's stdin is inherited
untouched; its stdout goes through this process, which relays it line by line through
mcp_relay.py (lone surrogate escapes, NULs and bad UTF-8 repaired; an oversized line dropped, with
an error answer for its call), so nothing the server writes can make crow's MCP client drop an
answer or grow without bound.

When the server exits, what it wrote is relayed and crow's end of the pipe closes at once, even if
something the server started still holds the server's stdout: a call in flight fails at once.

The group is killed (the server, whatever it started, and this guard) when:
- crow dies in any way, SIGKILL included: Linux sends the parent-death signal at once; elsewhere
  (or should the signal be missed) a thread notices within a second that crow is no longer its
  parent. A server that ignores its stdin closing cannot outlive crow.
- the server exits: anything it left running in its group goes with it.

A SIGTERM (the SDK's escalation after stdin closed) reaches the server through the group; the guard
only waits for the server to act on it, and the SDK's SIGKILL follows if it does not.

Only the standard library: it runs with -I -S, outside crow's environment, and starts in milliseconds.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import Any

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGUSR1
DRAIN_READS = 1024
"""Reads (of up to 64 KiB) relayed after the server exited: what it wrote, not what its leftovers write."""


def end_group(*_: object) -> None:
    os.killpg(0, signal.SIGKILL)  # this process is in the group too: nothing of it is left


def watch_parent(crow: int) -> None:
    while os.getppid() == crow:
        time.sleep(1)
    end_group()


def arm_death_signal() -> None:
    """Linux: get DEATH_SIGNAL when crow's thread that started us exits (crow's event loop thread)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)


def load_relay() -> Any:
    """relay.py, next to this file (by path: -I leaves this directory off sys.path on purpose)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.py")
    spec = importlib.util.spec_from_file_location("crow_mcp_relay", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def relay(lines: Any, source: int, out: int, wake: int) -> None:
    """Relay the server's stdout to crow until it ends or the server exited (`wake` readable)."""
    try:
        poller = select.poll()
        poller.register(source, select.POLLIN)
        poller.register(wake, select.POLLIN)
        while not any(fd == wake for fd, _ in poller.poll()):
            if not (data := os.read(source, 1 << 16)):
                break
            lines.feed(data)
        else:  # the server exited: what it wrote is in the pipe already; a grandchild's later writes are not waited for
            os.set_blocking(source, False)
            for _ in range(DRAIN_READS):  # bounded: a grandchild may keep writing
                if not (data := _read_ready(source)):
                    break
                lines.feed(data)
        lines.close()
    except OSError:
        pass  # crow closed its end (it is shutting the server down): nothing left to deliver
    finally:
        os.close(out)  # crow sees the end now


def _read_ready(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""


def start_server(command: list[str], stdout: int) -> int:
    pid = os.fork()
    if pid == 0:
        signal.signal(DEATH_SIGNAL, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # Python ignores it; the server's own runtime decides
        os.dup2(stdout, 1)
        try:
            os.execv(command[0], command)
        except OSError as exc:
            os.write(2, f"crow: cannot start the MCP server {command[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    return pid


def main() -> None:
    crow, command = int(sys.argv[1]), sys.argv[2:]
    signal.signal(DEATH_SIGNAL, end_group)
    signal.signal(signal.SIGTERM, lambda *_: None)  # the server got it too; wait for what it does
    arm_death_signal()
    if os.getppid() != crow:
        end_group()  # crow died before the signal was armed
    out = os.dup(1)  # crow's pipe; os.dup and os.pipe fds are not inherited by the server
    lines = load_relay().LineRelay(lambda data: write_all(out, data))
    source, sink = os.pipe()
    wake_read, wake_write = os.pipe()
    server = start_server(command, sink)
    os.close(sink)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the server's stdin stays the server's: crow sees its end when the server ends
    os.dup2(null, 1)
    relaying = threading.Thread(target=relay, args=(lines, source, out, wake_read), daemon=True)
    relaying.start()
    threading.Thread(target=watch_parent, args=(crow,), daemon=True).start()
    _, status = os.waitpid(server, 0)
    os.write(wake_write, b"x")
    relaying.join()
    if status:
        os.write(2, f"crow: the MCP server {command[0]} {_describe(status)}\n".encode())
    end_group()


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


if __name__ == "__main__":
    main()
