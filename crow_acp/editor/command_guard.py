"""The parent of every local command crow runs: when the command ends, nothing it started lives on.

    python -I -S command_guard.py CROW_PID EXECUTABLE [ARGS...]

Crow starts this script in a session of its own, with its stdin a pipe that only crow writes, and
its stdout/stderr the pipe crow captures. The script forks the command into a process group of its
own, gives it that output and an empty stdin, and waits for it.

On Linux the script is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the command starts
and leaves behind is re-parented to it instead of to init, even a `setsid`, double-forked or
`nohup`ed daemon that left the command's process group and session. So it can find all of them
(the processes whose parent it is) and kill them, until none is left. It does that:
- when the command exits (background jobs die with it, as they would when an editor terminal closes);
- when crow writes "kill" (the call timed out or was cancelled, or crow is shutting down);
- when crow is gone, whatever the way, SIGKILL included: its stdin reaches end-of-file, and the
  Linux parent-death signal arrives.
Then it exits with the command's own status, so crow reports the exit code or signal.

Processes crow starts for other reasons (MCP servers) are not below this script, and neither are
the user's other processes: only the command's descendants are ever killed. Elsewhere than Linux
there is no subreaper: the command's process group is killed, and what left it is out of reach.

Only the standard library: it runs with -I -S, outside crow's environment, and starts in milliseconds.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DEATH_SIGNAL = signal.SIGUSR1
command_pid = 0
sweeping = False
"""Set once the main thread reaps: from then on only it signals, so no pid it reaped (and the kernel
may have given to an unrelated process) is ever signalled by stop() from the other thread."""
lock = threading.RLock()  # re-entrant: stop() also runs as a signal handler on the main thread


def prctl(option: int, value: int) -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def children() -> list[int]:
    """The processes whose parent is this one: the command, and every orphan re-parented here."""
    me = str(os.getpid()).encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc (not Linux): no subreaper either, the command's group is all we reach
        return []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue  # it ended while we looked
            if len(fields) > 1 and fields[1] == me:
                found.append(int(name))
    return found


def kill(pid: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
    except OSError:
        pass  # already gone


def stop(*_: object) -> None:
    """Kill the command's group and every child now here; the main thread reaps them and sweeps."""
    with lock:
        if sweeping:
            return  # the main thread is at it already
        if command_pid:
            kill(command_pid, group=True)  # not reaped yet (see main): the id is still the command's
        for pid in children():
            kill(pid)


def sweep() -> int:
    """Kill and reap children until there are none (each death re-parents its own children here);
    returns the command's wait status."""
    global sweeping
    with lock:
        sweeping = True
    kill(command_pid, group=True)  # before the command is reaped, while its group id cannot be reused
    _, status = os.waitpid(command_pid, 0)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0]:
                continue  # reaped one; look again
        except ChildProcessError:
            return status  # no child left, living or dead (most commands: /proc is never scanned)
        found = children()
        for pid in found:
            kill(pid)
        try:
            os.waitpid(-1, 0 if found else os.WNOHANG)
        except ChildProcessError:
            return status
        if not found:
            time.sleep(0.01)  # an orphan is being re-parented here right now: look again


def listen() -> None:
    """Crow's word: "kill" ends the command now; end-of-file means crow closed the pipe or is gone."""
    for line in sys.stdin.buffer:
        if line.strip() == b"kill":
            stop()
    stop()


def start(command: list[str]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))  # should this guard itself be killed
            for sig in (DEATH_SIGNAL, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.execv(command[0], command)
        except OSError as exc:
            os.write(2, f"crow: cannot run {command[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    try:
        os.setpgid(pid, pid)  # also here, so that no kill can come before the child's own setpgid
    except OSError:
        pass  # the child did it first, or already exec'd
    return pid


def exit_like(status: int) -> None:
    """Exit as the command did: its exit code, or death by its signal (without a core dump of ours)."""
    if os.WIFSIGNALED(status):
        import resource

        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    global command_pid
    crow, command = int(sys.argv[1]), sys.argv[2:]
    signal.signal(DEATH_SIGNAL, stop)
    signal.signal(signal.SIGTERM, stop)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL))
    if os.getppid() != crow:
        os._exit(1)  # crow died before the death signal was armed: run nothing
    command_pid = start(command)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)  # the output pipe is the command's: crow sees its end when the command's side ends
    os.dup2(null, 2)
    threading.Thread(target=listen, daemon=True).start()
    if hasattr(os, "waitid"):  # wait for the command's end without reaping it: sweep() reaps
        os.waitid(os.P_PID, command_pid, os.WEXITED | os.WNOWAIT)
    exit_like(sweep())


if __name__ == "__main__":
    main()
