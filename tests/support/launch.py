"""`python ARGS`, forked by the tests' fork server (forkserver.py) when it can be, exec'd when not.

    python -I -S launch.py SOCKET [-m MODULE ARGS | -c CODE ARGS | SCRIPT ARGS]

spawn.python() writes a shell script that runs this; the tests use that script where they would use
sys.executable for a process they cannot start through spawn.start(): `crow run` under a terminal,
`crow sessions`, an MCP server that crow starts. This process stands in for the forked one:

- it hands its own stdin, stdout and stderr (a terminal, pipes) to the forked process;
- a signal it gets (Ctrl-C in a terminal, crow's SIGTERM) is passed on;
- it exits as the forked process did: the same status, or killed by the same signal;
- if it is killed (SIGKILL), the fork server kills the forked process.

Anything else (another interpreter option, the server gone, PYTHON* variables that act at start-up,
CROW_TEST_EXEC=1) execs the interpreter for real. Only the standard library, started with -I -S.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH, signal.SIGCONT)  # fmt: skip


def forkable(args: list[str]) -> bool:
    if os.environ.get("CROW_TEST_EXEC") == "1" or not args or not all(map(_is_open, (0, 1, 2))):
        return False  # a closed stdio fd would be taken by this process's socket, not passed on closed
    return (args[0] in ("-m", "-c") and len(args) > 1) or (args[0].endswith(".py") and not args[0].startswith("-"))


def ignored_signals() -> list[int]:
    return [int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)
            and signal.getsignal(s) == signal.SIG_IGN]  # fmt: skip


def request_fork(path: str, args: list[str]) -> tuple[socket.socket, int, int] | None:
    """Connect and send the request; (connection, pid, pidfd) once forked, None when it must exec."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "ignored": ignored_signals()}
        sock.sendmsg([json.dumps(request).encode()],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])  # fmt: skip
        fds = array.array("i")
        message, ancillary, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(fds.itemsize))
    except OSError:
        sock.close()
        return None
    answer = json.loads(message) if message else {"exec": True}
    if answer.get("exec"):
        sock.close()
        return None
    for _level, _kind, data in ancillary:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return sock, answer["pid"], fds[0]


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    ignored = set(ignored_signals())
    passed_on = [number for number in FORWARDED if number not in ignored]
    # Held from before the fork until there is a pid to pass them to: one that came in between would
    # otherwise end this process (default action) while the forked one runs on.
    signal.pthread_sigmask(signal.SIG_BLOCK, passed_on)
    forked = request_fork(path, args) if forkable(args) else None
    if forked is None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, passed_on)  # an exec'd interpreter starts with them as they were
        os.execv(sys.executable, [sys.executable, *args])
    sock, _pid, pidfd = forked
    for number in passed_on:
        signal.signal(number, lambda n, _frame: _forward(pidfd, n))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, passed_on)
    for fd in (0, 1, 2):  # the forked process holds them now; this one must not keep a pipe open
        os.close(fd)
    message = sock.recv(4096)  # the status, once the forked process is reaped (signals interrupt, then resume)
    returncode = json.loads(message)["returncode"] if message else 1
    if returncode < 0:
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    os._exit(returncode & 0xFF)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _forward(pidfd: int, number: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, number)
    except ProcessLookupError:
        pass  # it has ended; its status is on its way


if __name__ == "__main__":
    main()
