"""A fork server for the Python processes the tests start (see tests/README.md; clients: spawn.py, launch.py).

Every `crow acp` the tests start would spend ~1.5 CPU-seconds importing acp, mcp, openai and crow; a
`crow run` as much again (rich, the ACP client), and an MCP server built on the SDK ~1 CPU-second. This
process imports all of that once, then forks a child per request. A request comes on its own
connection to the server's Unix socket. The child takes the three stdio fds the request carried
(SCM_RIGHTS), its environment, cwd, argv and ignored signals, and runs `python -m MODULE ARGS`, `python -c CODE ARGS`
or `python SCRIPT ARGS` exactly as the interpreter would (runpy). The requester gets the child's pid and
a pidfd; the child's wait status comes back on the same connection. When the requester goes away
(its end of the connection closes) before the child ends, the child is killed: a launcher (launch.py)
killed by SIGKILL takes its child with it, as a real process would go.

It stays single-threaded with no event loop, so fork() is safe. It exits when the test process
closes the control socket, killing any child still running.
"""

from __future__ import annotations

import array
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys
import tempfile
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass, field

# What `crow acp`, `crow run` and the SDK's MCP servers import while they serve (the libraries come with
# them). Not crow_acp.testing or crow_acp.web: a test checks that `crow acp` starts without them.
PACKAGES = ("crow_acp", "crow_skills", "crow_compact", "crow_prompt", "crow")
SKIP = ("crow_acp.testing", "crow_acp.web", "crow.__main__")
MODULES = ("mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.sse", "openai", "sqlite3",
           "mcp.server.mcpserver", "mcp.server.stdio", "rich.live", "rich.console", "rich.markup")  # fmt: skip
STDIO_FDS = 3
# Variables the interpreter reads only to set what become() sets itself; any other PYTHON* variable
# that differs from the server's makes the requester exec for real.
EMULATED = {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"}


def warm() -> None:
    for name in MODULES:
        importlib.import_module(name)
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.startswith(SKIP):
                importlib.import_module(info.name)
    gc.collect()
    gc.freeze()  # the children share these pages: a GC pass in them must not copy them


def interpreter_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that act at interpreter start-up, less those a forked child emulates."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in EMULATED}


@dataclass
class Child:
    pid: int
    pidfd: int
    conn: socket.socket
    requester_waits: bool = True


@dataclass
class Server:
    control: socket.socket
    listener: socket.socket
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    children: dict[int, Child] = field(default_factory=dict)  # by pidfd

    def run(self) -> dict | None:
        """Serve requests; returns the request in a forked child, None in the server when it is told to stop."""
        self.selector.register(self.control, selectors.EVENT_READ, "control")
        self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        while True:
            for key, _ in self.selector.select():
                if key.data == "control":
                    if not self.control.recv(1):
                        self.stop()
                        return None
                elif key.data == "listener":
                    if (request := self.accept()) is not None:
                        return request
                else:
                    kind, child = key.data
                    if self.children.get(child.pidfd) is not child:
                        continue  # reaped earlier in this batch of events (its fds may be reused already)
                    if kind == "pidfd":
                        self.reap(child)
                    else:
                        self.hang_up(child)

    def hang_up(self, child: Child) -> None:
        """The requester closed its connection (a launcher was killed): its child goes too."""
        self.selector.unregister(child.conn)
        child.requester_waits = False
        with contextlib.suppress(ProcessLookupError):  # it may have ended already
            signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)

    def accept(self) -> dict | None:
        """Take one request. A requester may die at any point (a test kills it): the server never does."""
        try:
            conn, _ = self.listener.accept()
            message, fds = receive(conn)
        except OSError:
            return None  # it went away while connecting
        request = _parsed(message) if len(fds) == STDIO_FDS else None
        if request is None or interpreter_env(request["env"]) != interpreter_env(dict(os.environ)):
            close_fds(fds)
            with contextlib.suppress(OSError):  # the interpreter itself must read them: the requester execs
                conn.send(json.dumps({"exec": True}).encode())
            conn.close()
            return None
        return self.fork(request, fds, conn)

    def fork(self, request: dict, fds: list[int], conn: socket.socket) -> dict | None:
        assert threading.active_count() == 1, "fork needs a single-threaded server"
        pid = os.fork()
        if pid == 0:
            self.close_all()
            conn.close()
            for fd, target in zip(fds, (0, 1, 2), strict=True):
                os.dup2(fd, target)
            close_fds(set(fds) - {0, 1, 2})
            return request
        close_fds(fds)
        pidfd = os.pidfd_open(pid)
        child = Child(pid, pidfd, conn)
        self.children[pidfd] = child
        self.selector.register(pidfd, selectors.EVENT_READ, ("pidfd", child))
        try:
            conn.sendmsg(
                [json.dumps({"pid": pid}).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pidfd]))]
            )
        except OSError:  # the requester died before it heard the pid: its child goes too
            child.requester_waits = False
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return None
        self.selector.register(conn, selectors.EVENT_READ, ("conn", child))
        return None

    def reap(self, child: Child) -> None:
        del self.children[child.pidfd]
        self.selector.unregister(child.pidfd)
        os.close(child.pidfd)
        _, status = os.waitpid(child.pid, 0)
        if child.requester_waits:
            self.selector.unregister(child.conn)
            try:
                child.conn.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass  # the requester is gone: nobody waits for this status
        child.conn.close()

    def close_all(self) -> None:
        """In a child: drop every fd the server holds (an exec'd process would not have them)."""
        self.selector.close()
        self.control.close()
        self.listener.close()
        for child in self.children.values():
            os.close(child.pidfd)
            child.conn.close()

    def stop(self) -> None:
        for child in list(self.children.values()):
            with contextlib.suppress(ProcessLookupError):  # it may have ended already
                signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)
            self.reap(child)


def receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    message, ancillary, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _parsed(message: bytes) -> dict | None:
    """A request as launch.py and spawn.py write it; anything else (empty, cut short, not JSON) is None."""
    try:
        request = json.loads(message)
    except ValueError:
        return None
    fields = ("args", "env", "cwd")
    valid = isinstance(request, dict) and all(field in request for field in fields) and request["args"]
    return request if valid else None


def close_fds(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)


def become(request: dict, launcher: str) -> None:
    """In the child: take the request's environment, cwd, argv and ignored signals, then run what
    `python ARGV` runs. A `crow run` starts its own `crow acp` through `launcher`, so that one is forked too."""
    import runpy

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    _emulate_signals(set(request.get("ignored", [])))
    _emulate_start_up(request["env"])
    tempfile.tempdir = None  # computed again from this environment's TMPDIR
    argv = request["args"]
    if argv[0] == "-m":
        if argv[1:3] == ["crow", "run"]:
            sys.executable = launcher
        sys.path[0] = os.getcwd()  # what `python -m` puts first
        sys.argv = ["-m", *argv[2:]]  # runpy replaces argv[0] with the module's file
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.path[0] = ""  # what `python -c` puts first
        sys.argv = ["-c", *argv[2:]]
        sys.modules["__main__"] = main = types.ModuleType("__main__")
        exec(compile(argv[1], "<string>", "exec"), main.__dict__)
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")


def _emulate_signals(ignored: set[int]) -> None:
    """The dispositions an exec'd interpreter starts with, not the fork server's: the requester's ignored
    signals stay ignored (exec keeps them), every other one is the default, then Python's own (SIGPIPE and
    SIGXFSZ ignored, SIGINT a KeyboardInterrupt). A fork server started by a background job ignores SIGINT,
    and a `crow run` forked from it under a terminal (whose launcher does not) ignored Ctrl-C."""
    for number in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
        signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_IGN)
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _emulate_start_up(env: dict[str, str]) -> None:
    """What PYTHONDONTWRITEBYTECODE and PYTHONUNBUFFERED would have set at start-up."""
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(write_through=unbuffered)  # type: ignore[attr-defined]


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    listener = socket.socket(fileno=int(sys.argv[2]))
    warm()  # requests wait in the listen queue meanwhile
    server = Server(control, listener)
    request = server.run()
    if request is not None:
        del server
        become(request, sys.argv[3])


if __name__ == "__main__":
    main()
