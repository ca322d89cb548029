"""The parent of every stdio MCP server crow starts: when crow is gone, the server's whole group dies.

    python -I -S mcp_guard.py CROW_PID EXECUTABLE [ARGS...]

The MCP SDK starts this script in a new session (process group), as it would start the server.
The script forks the server into that same group, then waits. The server's stdin and stdout are
inherited untouched: this process reads and writes nothing on them.

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
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGUSR1


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


def start_server(command: list[str]) -> int:
    pid = os.fork()
    if pid == 0:
        signal.signal(DEATH_SIGNAL, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
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
    server = start_server(command)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the server's pipes stay the server's: crow sees their end when the server ends
    os.dup2(null, 1)
    threading.Thread(target=watch_parent, args=(crow,), daemon=True).start()
    os.waitpid(server, 0)
    end_group()


if __name__ == "__main__":
    main()
